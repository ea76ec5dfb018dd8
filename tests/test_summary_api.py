"""The cost model's surface: ``draw_graph(stats=...)``, ``graph.summary()``, the table,
``to_dict``/``to_json``, training-memory options and bad input."""

from __future__ import annotations

import json

import pytest
import torch

import tensorview as tv
from tensorview.cost import CostProbe
from tensorview.cost.fmt import fmt_count
from tensorview.cost.layers import STATS

from .fixtures import cost_models as cm


def test_stats_on_the_nodes_of_a_drawing() -> None:
    model = cm.MLP(16, 32, 8)
    graph = tv.draw_graph(model, input_size=(4, 16), stats=("params", "flops"), source=False)
    ann = graph.graph.annotations
    assert ann.names() == ["params", "flops"]
    fc1 = next(m for m in graph.graph.modules() if m.path == "fc1")
    assert ann.of(fc1.id) == {"params": 16 * 32 + 32, "flops": 2 * 4 * 16 * 32}
    # readable in the drawing, exact in the JSON
    assert "params: 544\\nflops: 4.10 KFLOPs" in graph.source
    node = next(n for n in graph.to_json()["nodes"] if n["id"] == fc1.id)
    assert node["notes"] == {"params": 544, "flops": 4096}
    assert json.loads(json.dumps(graph.to_json(), allow_nan=False))["schema_version"] == 2
    # another view of the same recording keeps the costs
    assert graph.view(depth=1).summary().total_flops == 2 * 4 * 16 * 32 + 2 * 4 * 32 * 8


def test_every_stat_can_be_shown() -> None:
    graph = tv.draw_graph(cm.TwoNames(), input_size=(2, 4), stats=STATS, depth=1, source=False)
    assert graph.graph.annotations.names() == [
        "params",
        "trainable_params",
        "shared_with",
        "flops",
        "uncounted",
        "saved_bytes",
        "activation_bytes",
    ]
    a = next(m for m in graph.graph.modules() if m.path == "a")
    notes = graph.graph.annotations.of(a.id)
    assert notes["shared_with"] == ["b"] and notes["activation_bytes"] == 2 * 4 * 4
    assert "shared_with: b" in graph.source and "activation_bytes: 32 B" in graph.source


def test_graph_summary_is_tv_summary() -> None:
    model = cm.CNN()
    graph = tv.draw_graph(model, input_size=(2, 3, 16, 16), stats="flops", mode="train")
    s = tv.summary(model, input_size=(2, 3, 16, 16), device=None)
    assert graph.summary().to_dict() == s.to_dict()
    assert str(graph.summary(depth=0)) == s.table(depth=0)


def test_a_graph_recorded_without_costs_says_how_to_get_them() -> None:
    graph = tv.draw_graph(cm.MLP(), input_size=(4, 16), source=False)
    assert graph.cost is None and not graph.graph.annotations
    with pytest.raises(tv.TensorviewError, match=r"stats=\('params', 'flops'\).*tv.summary"):
        graph.summary()


def test_the_table() -> None:
    s = tv.summary(cm.CNN(), input_size=(2, 3, 16, 16), depth=0)
    lines = str(s).splitlines()
    assert lines[0].split() == [
        "Module",
        "Class",
        "Output",
        "shape",
        "Params",
        "FLOPs",
        "Activations",
        "Saved",
        "for",
        "bwd",
    ]
    assert lines[2].split()[:6] == ["model", "CNN", "(2,", "10)", *fmt_count(s.total_params).split()]  # the root
    assert len([ln for ln in lines if ln.startswith("  ")]) == 0
    assert f"{s.uncounted_calls} op calls not counted" in str(s) and s.uncounted_calls > 0
    assert "1 of 4 module calls shown (depth 0)" in str(s)  # conv2 is called functionally
    deeper = s.table(depth=None)
    assert "  bn  " in deeper and "shown" not in deeper
    assert f"Parameters: {fmt_count(s.total_params)} ({s.total_params:,})" in str(s)
    assert repr(s) == str(s)


def test_to_dict_is_strict_json_with_exact_integers() -> None:
    s = tv.summary(cm.TwiceUsed(), input_size=(2, 4), optimizer="sgd_momentum", state_dtype="bfloat16")
    d = json.loads(json.dumps(s.to_dict(), allow_nan=False))
    assert d["schema"] == "tensorview.summary" and d["schema_version"] == 1
    assert d["totals"]["params"] == s.total_params == 30
    assert d["totals"]["flops"] == s.total_flops
    assert d["training_memory"] == {
        "params": 120,
        "buffers": 0,
        "grads": 120,
        "optimizer_state": 30 * 2,
        "activations": s.saved_bytes,
        "optimizer": "sgd_momentum",
        "total": s.training_memory_bytes,
        "state_dtype": "bfloat16",
    }
    assert [r["path"] for r in d["rows"]] == ["", "fc", "fc", "head"]
    assert d["rows"][2]["repeat"] is True and d["rows"][1]["output_shapes"] == [[2, 4]]
    assert set(d["rows"][0]) >= {"path", "cls", "params", "flops", "activation_bytes", "saved_bytes", "shared_with"}


@pytest.mark.parametrize(
    ("optimizer", "state_dtype", "states"),
    [
        ("adam", None, 2 * 4),
        ("adamw", torch.bfloat16, 2 * 2),
        ("sgd", None, 0),
        ("sgd_momentum", None, 4),
        (3, None, 12),
    ],
)
def test_training_memory_options(optimizer: str | int, state_dtype: torch.dtype | None, states: int) -> None:
    model = cm.MLP(16, 32, 8)
    model.fc1.requires_grad_(False)
    s = tv.summary(model, input_size=(4, 16), optimizer=optimizer, state_dtype=state_dtype)
    total, fc2 = 16 * 32 + 32 + 32 * 8 + 8, 32 * 8 + 8
    assert (s.total_params, s.trainable_params) == (total, fc2)
    tm = s.training_memory
    assert (tm.params, tm.grads, tm.optimizer_state) == (4 * total, 4 * fc2, states * fc2)
    # fc1 is frozen, so nothing before fc2 needs a gradient: only fc2 keeps its input
    assert s.saved_bytes == tm.activations == 4 * 32 * 4
    assert s.training_memory_bytes == tm.params + tm.grads + tm.optimizer_state + tm.activations


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(optimizer="lion"), tv.InvalidInputError, r"unknown optimizer: 'lion' \(must be one of \[.*'adam'"),
        (dict(optimizer=-1), tv.InvalidInputError, r"bad optimizer -1"),
        (dict(state_dtype="float99"), tv.InvalidInputError, r"unknown state_dtype 'float99'"),
        (dict(state_dtype=4), tv.InvalidTypeError, r"state_dtype must be a torch.dtype"),
        (dict(depth=-1), tv.InvalidInputError, r"depth must be >= 0"),
        (dict(depth="2"), tv.InvalidTypeError, r"depth must be an int or None"),
        (dict(mode="training"), tv.InvalidInputError, r"unknown mode: 'training'"),
        (dict(optimiser="sgd"), tv.InvalidInputError, r"did you mean optimizer"),
    ],
)
def test_bad_summary_options(kwargs: dict[str, object], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        tv.summary(cm.MLP(), input_size=(4, 16), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("stats", "error", "match"),
    [
        (("params", "flop"), tv.InvalidInputError, r"unknown stat: 'flop' \(must be one of \[.*'flops'"),
        (True, tv.InvalidTypeError, r"stats must be a tuple of names"),
    ],
)
def test_bad_stats(stats: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        tv.draw_graph(cm.MLP(), input_size=(4, 16), stats=stats)  # type: ignore[arg-type]


def test_costs_recorded_without_grad_say_saved_bytes_are_unknown() -> None:
    model = cm.MLP()
    with torch.no_grad(), tv.Recorder(model, probes=[CostProbe()]) as rec:
        model(torch.randn(4, 16))
    s = rec.graph.summary()
    assert s.saved_bytes is None and all(r.saved_bytes is None for r in s.rows)
    assert s.to_dict()["totals"]["saved_bytes"] is None and s.training_memory.activations == 0
    assert "Saved for backward: not measured (the forward was recorded without grad)" in str(s)
    assert s.total_flops == 2 * 4 * 16 * 32 + 2 * 4 * 32 * 8


def test_stats_need_a_forward_that_runs() -> None:
    x = torch.randn(4, 16)
    exported = torch.export.export(cm.MLP(), (x,))
    with pytest.raises(tv.InvalidInputError, match=r"stats=\('flops',\) need a forward that runs; a traced program"):
        tv.draw_graph(exported, input_size=(4, 16), stats="flops")
    traced = torch.fx.symbolic_trace(cm.MLP())  # given inputs, a GraphModule calling leaf modules runs
    g = tv.draw_graph(traced, input_size=(4, 16), stats="flops")
    flops = g.graph.annotations.layer("flops")
    assert sum(int(flops[f.id]) for f in g.graph.functions() if f.id in flops) == 2 * 4 * 16 * 32 + 2 * 4 * 32 * 8


def test_sizes_that_depend_on_values_are_reported_not_guessed() -> None:
    """device="fake": the masked rows are a symbol (u0); the Linear on them has no number."""

    class Mask(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x[x.sum(-1) > 0])

    s = tv.summary(Mask(), input_size=(8, 4), device="fake")
    assert s.total_params == 20 and s.total_flops == 0
    assert s.uncounted["aten.addmm (data-dependent size)"] == 1
    assert s.rows[1].output_shapes == (("u0", 4),) and s.rows[1].activation_bytes == 0
    assert "addmm (data-dependent size) ×1" in str(s)

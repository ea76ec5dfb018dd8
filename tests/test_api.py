"""draw_graph: inputs in every form, clear errors, and the caller's model left intact."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.utils.prune
from torch import nn

import tensorview as tv
from tensorview.recording import is_patched

from .fixtures import models as zoo


def test_public_api_is_exact() -> None:
    assert sorted(tv.__all__) == [
        "ComputationGraph",
        "FunctionNode",
        "Graph",
        "GraphDiff",
        "GraphLintError",
        "GraphvizStyler",
        "InvalidInputError",
        "InvalidTypeError",
        "MemoryReport",
        "ModuleNode",
        "Recorder",
        "RecorderTensor",
        "RecordingError",
        "RenderError",
        "RenderOptions",
        "Renderer",
        "TensorNode",
        "TensorviewError",
        "ViewOptions",
        "autograd_graph",
        "diff",
        "draw_graph",
        "make_dot",
        "memory",
        "record",
        "render_network",
        "summary",
        "taps",
    ]
    for name in tv.__all__:
        assert getattr(tv, name) is not None


def test_graph_package_imports_neither_torch_nor_graphviz() -> None:
    import subprocess
    import sys

    code = (
        "import sys, importlib.util as u, pathlib\n"
        "import tensorview.graph\n"
        "assert 'torch' not in sys.modules and 'graphviz' not in sys.modules, sorted(sys.modules)\n"
    )
    # import tensorview.graph without running tensorview/__init__ (which imports torch)
    stub = (
        "import sys, types, pathlib\n"
        "pkg = types.ModuleType('tensorview'); pkg.__path__ = [str(pathlib.Path('tensorview').resolve())]\n"
        "sys.modules['tensorview'] = pkg\n"
    )
    root = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-c", stub + code], check=True, cwd=root)


def test_meta_recording_leaves_the_model_intact() -> None:
    model = zoo.Buffers().train()
    hooks_before = (dict(model._forward_hooks), dict(model.fc._forward_pre_hooks))
    state = {k: v.clone() for k, v in model.state_dict().items()}
    graph = tv.draw_graph(model, input_size=(2, 4), device="meta")
    assert all(p.device.type == "cpu" for p in model.parameters())
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    assert model.training and model.bn.training  # flags restored (recorded in eval)
    assert (dict(model._forward_hooks), dict(model.fc._forward_pre_hooks)) == hooks_before
    assert not is_patched()
    g = graph.graph
    assert {t.device for t in g.tensors()} == {"meta"}
    assert [m.path for m in g.modules()] == ["", "bn", "fc"]


def test_meta_model_records_tensors_created_in_forward_on_meta() -> None:
    with torch.device("meta"):
        model = zoo.CreatesTensors()
    graph = tv.draw_graph(model, input_size=(2, 3), device="meta")
    created = {t.name: t.device for t in graph.graph.tensors() if t.role in ("created", "constant")}
    assert created == {"arange": "meta", "zeros": "meta", "tensor": "meta"}


def test_mode_train_and_same() -> None:
    model = zoo.Buffers().eval()
    g = tv.draw_graph(model, input_size=(2, 4), mode="train").graph
    assert any(n.op == "add_" for n in g.functions())  # BatchNorm counts batches in train mode
    assert not model.training
    g = tv.draw_graph(model, input_size=(2, 4), mode="same").graph
    assert not any(n.op == "add_" for n in g.functions())


class CountsCalls(nn.Module):
    """A forward that writes a buffer in any mode (a step counter; a static KV cache too)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.fc(x)


@pytest.mark.parametrize("mode", ["eval", "same", "train"])
def test_draw_graph_never_writes_the_callers_buffers(mode: str) -> None:
    """In eval mode too: the model is recorded on a copy of its module tree with its own
    buffers (sharing the parameters), and the write is in the graph."""
    model = CountsCalls().eval()
    calls, weight = model.calls, model.fc.weight
    g = tv.draw_graph(model, input_size=(2, 4), mode=mode).graph
    assert model.calls is calls and calls.item() == 0.0 and calls._version == 0
    assert model.fc.weight is weight and not model.training
    assert [n.op for n in g.functions()] == ["add_", "linear"]
    assert {t.source_name for t in g.tensors() if t.role in ("parameter", "buffer")} == {
        "calls",
        "fc.weight",
        "fc.bias",
    }


class CachesInEval(nn.Module):
    """LeViT's attention bias cache: filled in eval mode, cleared only by ``train(True)``;
    ``shared`` is one dict two submodules hold (a cache they fill together)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.cache: dict[str, torch.Tensor] = {}
        self.log: list[int] = []
        shared: dict[str, torch.Tensor] = {}
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)
        self.a.shared = shared  # type: ignore[assignment]
        self.b.shared = shared  # type: ignore[assignment]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            self.cache.setdefault(str(x.device), self.fc.weight * 2)
        self.log.append(x.shape[0])
        self.a.shared["a"] = self.a(x)
        return self.b(self.b.shared["a"])  # what a put there


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_a_copy_keeps_what_forward_adds_to_containers_on_it(device: str) -> None:
    """Recorded on a copy of the module tree (eval mode for a model in training mode), the
    forward's additions to dicts and lists held by modules stay in the copy; a dict two
    modules share stays shared among their copies (b reads what a put there)."""
    model = CachesInEval().train()
    shared = model.a.shared
    g = tv.draw_graph(model, input_size=(2, 4), mode="eval", device=device).graph
    assert model.cache == {} and model.log == [] and shared == {} and model.b.shared is shared
    assert model.training
    (a,) = [m.id for m in g.modules() if m.path == "a"]
    (b,) = [m.id for m in g.modules() if m.path == "b"]
    (into_b,) = [src for src, dst in g.edges if dst == b]  # b reads what a put in the dict
    assert (a, into_b) in list(g.edges)


class RescalesInPlace(nn.Module):
    """RWKV's ``_rescale_layers``: weights scaled in place when the mode differs from the one
    the weights were last scaled for, which is noted on ``self``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.rescaled = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.rescaled == self.training:
            with torch.no_grad():
                self.fc.weight.mul_(2.0) if self.training else self.fc.weight.div_(2.0)
                self.fc.bias[:2].zero_()  # a write through a view
            self.rescaled = not self.training
        return self.fc(x)


@pytest.mark.parametrize("call", ["draw_graph", "summary"])
def test_a_copy_in_another_mode_leaves_the_callers_parameters_alone(call: str) -> None:
    """Recorded on a tree copy in train mode (what the copy sets on self stays there), the
    forward's in-place writes of the caller's parameters are undone too: else the caller's
    model kept the weights of train mode with the flag of eval mode, and its next forward
    gave other values than before."""
    model = RescalesInPlace().eval()
    x = torch.randn(2, 4)
    with torch.no_grad():
        before = model(x)  # the weights scaled for eval, as after any use
    weight, values = model.fc.weight, [p.detach().clone() for p in model.parameters()]
    if call == "draw_graph":
        g = tv.draw_graph(model, input_data=x, mode="train").graph
    else:
        g = tv.summary(model, input_data=x, device=None).graph.graph
    assert [n.op for n in g.functions()][:2] == ["mul_", "getitem"]  # the writes ran, recorded
    assert model.fc.weight is weight and model.rescaled and not model.training
    assert all(torch.equal(p, v) for p, v in zip(model.parameters(), values, strict=True))
    with torch.no_grad():
        assert torch.equal(model(x), before)


@pytest.mark.parametrize(
    "kwargs, expected_inputs",
    [
        ({"input_data": torch.randn(2, 4)}, ["x"]),
        ({"input_data": (torch.randn(2, 4), torch.randn(2, 4))}, ["x", "unused"]),
        ({"input_data": {"x": torch.randn(2, 4), "unused": torch.randn(2, 4)}}, ["x", "unused"]),
        ({"input_size": [(2, 4), (2, 4)]}, ["x", "unused"]),
    ],
)
def test_input_forms(kwargs: dict[str, Any], expected_inputs: list[str]) -> None:
    model = zoo.UnusedInput() if len(expected_inputs) == 2 else zoo.InplaceModule()
    g = tv.draw_graph(model, **kwargs).graph
    assert [g.nodes[i].name for i in g.inputs] == expected_inputs


def test_dtypes_forward_kwargs_and_nested_input_data() -> None:
    g = tv.draw_graph(zoo.TokenModel(), input_size=(2, 5), dtypes=[torch.long]).graph
    assert g.nodes[g.inputs[0]].dtype == "int64"
    mask = torch.zeros(2, 4, dtype=torch.bool)
    g = tv.draw_graph(zoo.KwargsModel(), input_data=torch.randn(2, 4), mask=mask, scale=2.0).graph
    assert [g.nodes[i].name for i in g.inputs] == ["x", "mask"]
    args, _ = zoo.ZOO["nested"][1]()
    g = tv.draw_graph(zoo.Nested(), input_data=list(args)).graph
    assert len(g.inputs) == 7


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({}, tv.InvalidInputError, "exactly one of input_size or input_data \\(got neither\\)"),
        ({"input_size": (1, 4), "input_data": torch.randn(1, 4)}, ValueError, "got both"),
        ({"input_size": (1, -4)}, tv.InvalidInputError, "negative dimension"),
        ({"input_size": "1x4"}, tv.InvalidInputError, "bad input_size '1x4'"),
        ({"input_size": (1, 4), "graph_dir": "XY"}, tv.InvalidInputError, "graph_dir: 'XY' \\(must be one of"),
        ({"input_size": (1, 4), "mode": "test"}, tv.InvalidInputError, "mode: 'test' \\(must be one of"),
        ({"input_size": (1, 4), "depth": -1}, tv.InvalidInputError, "depth must be >= 0, got -1"),
        ({"input_size": [(1, 4)], "dtypes": [torch.long, torch.long]}, tv.InvalidInputError, "2 dtypes"),
        ({"input_size": (1, 4), "device": "nonsense"}, tv.InvalidInputError, "bad device 'nonsense'"),
    ],
)
def test_bad_input_errors_name_the_value(kwargs: dict[str, Any], error: type, match: str) -> None:
    model = zoo.InplaceModule()
    with pytest.raises(error, match=match):
        tv.draw_graph(model, **kwargs)
    assert not is_patched()


def test_not_a_module() -> None:
    with pytest.raises(tv.InvalidTypeError, match="needs a torch.nn.Module, got function"):
        tv.draw_graph(lambda x: x, input_size=(1, 4))  # type: ignore[arg-type]


def test_forward_error_through_draw_graph_carries_a_drawable_partial_graph() -> None:
    model = zoo.Raises()
    with pytest.raises(tv.RecordingError, match="second.1") as info:
        tv.draw_graph(model, input_size=(1, 4), device="meta")
    partial = info.value.graph
    assert "digraph" in partial.source
    failed = [n.name for n in partial.graph.nodes if getattr(n, "failed", False)]
    assert "second_1" in failed
    assert model.training  # the flags were put back after the failure too
    assert all(p.device.type == "cpu" for p in model.parameters())
    assert not is_patched()


def test_save_formats_and_json(tmp_path: Path) -> None:
    graph = tv.draw_graph(zoo.InplaceModule(), input_size=(2, 4))
    data = graph.to_json()
    assert data["schema"] == "tensorview.graph" and data["schema_version"] == 3
    graph.save(tmp_path / "g.json")
    assert json.loads((tmp_path / "g.json").read_text()) == data
    graph.save(tmp_path / "g.gv")
    assert (tmp_path / "g.gv").read_text() == graph.source
    with pytest.raises(tv.InvalidInputError, match="'bmp'"):
        graph.save(tmp_path / "g.bmp")


def test_save_graph_option(tmp_path: Path) -> None:
    tv.draw_graph(zoo.InplaceModule(), input_size=(2, 4), save_graph=True, filename="m.gv", directory=str(tmp_path))
    assert (tmp_path / "m.gv").read_text().startswith(("digraph", "strict digraph", "//"))


def test_torchrecorder_style_record_make_dot_and_render_network(tmp_path: Path) -> None:
    model = zoo.InplaceModule()
    graph = tv.record(model, "net", (2, 4))
    assert graph.render_options.graph_name == "net" and graph.options.depth == 256
    assert [m.path for m in graph.graph.modules()] == ["", "fc", "act", "out"]
    dot = tv.make_dot(graph, render_depth=1, fontname="Helvetica")
    assert "fc: Linear" in dot.source and "fontname=Helvetica" in dot.source
    path = tv.render_network(model, "net", (2, 4), str(tmp_path), fmt="svg", render_depth=1)
    assert path.endswith("net.svg") and Path(path).read_text().lstrip().startswith("<?xml")
    gv = tv.render_network(model, "net", None, str(tmp_path), filename="src", fmt="gv", input_data=torch.randn(2, 4))
    assert Path(gv).read_text().startswith(dot.source.splitlines()[0][:7])
    with pytest.raises(tv.InvalidInputError, match="bad fmt"):
        tv.render_network(model, "net", (2, 4), str(tmp_path), fmt="")


def test_subpackages_are_not_shadowed_by_public_names() -> None:
    import importlib

    for name in ("recording", "graph", "transform", "render", "taps"):
        module = importlib.import_module(f"tensorview.{name}")
        assert getattr(tv, name) is module
    assert callable(tv.record) and tv.record.__module__ == "tensorview.torchrecorder"
    import tensorview.recording.session as session  # a plain dotted import works

    assert session.Session


def test_meta_copy_moves_plain_tensor_attributes_too() -> None:
    class Masked(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.mask = torch.ones(4)  # a plain attribute: neither parameter nor buffer
            self.table = {"scale": torch.full((4,), 2.0)}

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x) * self.mask * self.table["scale"]

    model = Masked()
    g = tv.draw_graph(model, input_size=(2, 4), device="meta").graph
    consts = sorted((t.name, t.device) for t in g.tensors() if t.role == "constant")
    assert consts == [("constant", "meta"), ("constant_1", "meta")]
    assert model.mask.device.type == "cpu" and model.table["scale"].device.type == "cpu"


@pytest.mark.parametrize("device", ["meta", "fake"])
def test_a_model_holding_computed_tensors_is_copied(device: str) -> None:
    """``prune`` and the old ``nn.utils.weight_norm`` keep ``weight`` as a plain attribute
    computed from parameters (not a leaf), which ``copy.deepcopy`` refuses: the copy made
    for meta and fake gets it detached, and the graph is the one of a CPU run."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    torch.nn.utils.prune.l1_unstructured(model[0], "weight", amount=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # weight_norm is deprecated, still used
        torch.nn.utils.weight_norm(model[2])
    weights = (model[0].weight, model[2].weight)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    cpu = tv.draw_graph(model, input_size=(2, 4)).graph
    g = tv.draw_graph(model, input_size=(2, 4), device=device).graph
    g.lint()
    assert [(m.path, m.call_index) for m in g.modules()] == [(m.path, m.call_index) for m in cpu.modules()]
    assert [f.op for f in g.functions()] == [f.op for f in cpu.functions()]
    assert g.shapes(g.outputs) == [(2, 2)]
    # the caller's model: its computed weights, parameters and buffers as they were
    assert (model[0].weight, model[2].weight) == weights
    assert all(v.device.type == "cpu" and torch.equal(state[k], v) for k, v in model.state_dict().items())


@pytest.mark.parametrize("name", ["../outside", "../../x", "a/b", "..", "con", "x\x00y"])
def test_save_graph_keeps_a_graph_name_inside_directory(tmp_path: Path, name: str) -> None:
    """graph_name is user data: with no filename it becomes a safe file name in directory
    (issue 21 B5), for draw_graph(save_graph=True) and render_network."""
    inside = tmp_path / "out"
    inside.mkdir()
    tv.draw_graph(zoo.InplaceModule(), input_size=(2, 4), graph_name=name, save_graph=True, directory=str(inside))
    path = tv.render_network(zoo.InplaceModule(), name, (2, 4), str(inside), fmt="gv")
    saved = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert [p.parent for p in tmp_path.rglob("*") if p.is_file()] == [inside, inside]
    assert os.path.dirname(path) == str(inside) and len(saved) == 2
    assert all(n.endswith((".png", ".gv")) and "/" not in n and not n.startswith(".") for n in saved)


@pytest.mark.parametrize("value", [1, "yes", None])
def test_save_graph_must_be_a_bool(tmp_path: Path, value: object) -> None:
    with pytest.raises(tv.InvalidTypeError, match=rf"save_graph must be True or False, got {value!r}"):
        tv.draw_graph(zoo.InplaceModule(), input_size=(2, 4), save_graph=value, directory=str(tmp_path))  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


class WritesParameterAndCounter(nn.Module):
    """A training forward writes a parameter in place (under no_grad) and, through its
    BatchNorm, the BatchNorm's step counter."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.bn = nn.Linear(4, 4), nn.BatchNorm1d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            self.fc.weight.mul_(1.0)
        return self.bn(self.fc(x))


@pytest.mark.parametrize("call", ["draw_graph", "summary"])
def test_a_copys_own_buffers_are_not_saved_to_be_put_back(monkeypatch: pytest.MonkeyPatch, call: str) -> None:
    """What a forward writes into the copy's own buffers (a BatchNorm's step counter at
    each training forward) goes with the copy: only the caller's tensors it shares (the
    parameters) are saved before a write and put back (recording/keep.py)."""
    from tensorview.recording.keep import KeptParameters

    kept: list[list[str]] = []
    restore = KeptParameters.restore

    def noting(self: KeptParameters) -> None:
        kept.append([type(p).__name__ for p, _, _ in self.saved.values()])
        restore(self)

    monkeypatch.setattr(KeptParameters, "restore", noting)
    model, x = WritesParameterAndCounter().eval(), torch.randn(3, 4)
    weight = model.fc.weight.detach().clone()
    if call == "draw_graph":
        g = tv.draw_graph(model, input_data=x, mode="train").graph
    else:
        g = tv.summary(model, input_data=x, device="cpu", verbose=0).graph.graph
    assert [n.op for n in g.functions()][:1] == ["mul_"] and "add_" in [n.op for n in g.functions()]
    assert kept == [["Parameter"]]  # fc's weight, not bn's counter
    assert model.bn.num_batches_tracked.item() == 0 and torch.equal(model.fc.weight, weight)

"""The cost probe (tensorview/cost/probe.py): keys per node, roll-ups over module calls,
meta replay, attention on meta, annotation layers, failures."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.cost.flops import OpFlops
from tensorview.cost.layers import PROBE_STATS
from tensorview.cost.memory import SavedTensors
from tensorview.cost.probe import CostProbe
from tensorview.cost.record import CostRecord
from tensorview.cost.replay import ReplayingOpFlops
from tensorview.graph import Graph

from .fixtures import cost_models as cm


def record(model: nn.Module, *args: Any, grad: bool = True, **options: Any) -> tuple[Graph, CostRecord, Any]:
    probe = CostProbe(**options.pop("probe", {}))
    with torch.set_grad_enabled(grad), tv.Recorder(model, probes=[probe], **options) as rec:
        model(*args)
    assert probe.record is not None
    assert rec._session is not None
    return rec.graph.graph, probe.record, rec._session


def test_mlp_by_hand() -> None:
    model = cm.MLP(16, 32, 8)
    g, r, _ = record(model, torch.randn(4, 16))
    ids = {m.path: m.id for m in g.modules()}
    fc1, fc2 = 2 * 4 * 16 * 32, 2 * 4 * 32 * 8
    assert (r.flops[ids["fc1"]], r.flops[ids["fc2"]], r.flops[ids[""]]) == (fc1, fc2, fc1 + fc2)
    assert r.total_flops == fc1 + fc2
    linear = [f for f in g.functions() if f.op == "linear"]
    assert [r.flops[f.id] for f in linear] == [fc1, fc2]  # the op nodes carry their own FLOPs
    gelu = next(f for f in g.functions() if f.op == "gelu")
    assert r.uncounted[gelu.id] == {"aten.gelu": 1} and gelu.id not in r.flops
    assert r.uncounted[ids[""]] == {"aten.gelu": 1} and ids["fc1"] not in r.uncounted
    # saved for backward: fc1 keeps x (4x16), gelu its input (4x32), fc2 gelu's output (4x32)
    x, h = 4 * 16 * 4, 4 * 32 * 4
    assert (r.saved_bytes[ids["fc1"]], r.saved_bytes[gelu.id], r.saved_bytes[ids["fc2"]]) == (x, h, h)
    assert r.saved_bytes[ids[""]] == r.total_saved_bytes == x + 2 * h
    assert r.saved_param_bytes == 4 * 8 * 32  # fc2's weight (for the grad of its input), kept apart
    assert r.params[ids[""]].params == r.totals.total_params == 16 * 32 + 32 + 32 * 8 + 8


def test_without_grad_saved_bytes_are_not_measured() -> None:
    g, r, _ = record(cm.MLP(), torch.randn(4, 16), grad=False)
    assert not r.saved_measured and r.saved_bytes == {} and r.total_flops > 0
    assert "saved_bytes" not in g.annotations and "flops" in g.annotations


class Stack(nn.Module):
    """Identical layers, so meta replay has work: Linear, functional matmul, norm, GELU."""

    def __init__(self, n: int = 6, d: int = 16) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Sequential(nn.Linear(d, d), nn.LayerNorm(d), nn.GELU()) for _ in range(n))
        self.w = nn.Parameter(torch.randn(d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x) + (x @ self.w).softmax(-1)
        return x


@pytest.mark.parametrize("grad", [False, True])
def test_meta_replay_gives_the_numbers_of_running_every_op(grad: bool) -> None:
    with torch.device("meta"):
        model = Stack()
    if grad:  # frozen layers run on tensors that need no grad: those ops replay
        model.requires_grad_(False).layers[-1].requires_grad_(True)
    x = torch.randn(3, 16, device="meta")
    probe = CostProbe()
    with torch.set_grad_enabled(grad), tv.Recorder(model, probes=[probe]) as rec:
        model(x)
    g1, replayed, s1 = rec.graph.graph, probe.record, rec._session
    # nothing replayed: neither the recorder's ops nor the probe's aten ops (cost/replay.py)
    g2, plain, s2 = record(model, x, grad=grad, meta_replay=False, probe={"replay": False})
    assert s1 is not None and s1.meta_hits > 0 and s2.meta_hits == 0
    # with grad the recorder runs the ops whose arguments need grad; the probe replays their
    # aten ops below autograd (without grad the recorder's replay leaves it nothing to do)
    assert (probe._counter.replays > 0) == grad  # type: ignore[attr-defined]
    assert replayed is not None
    assert replayed == plain and replayed.total_flops > 0 and replayed.uncounted_calls > 0
    assert replayed.saved_measured == (replayed.total_saved_bytes > 0) == grad
    assert {n: dict(g1.annotations.layer(n)) for n in g1.annotations} == {
        n: dict(g2.annotations.layer(n)) for n in g2.annotations
    }
    # and the totals are a plain forward's, whatever was replayed
    with torch.set_grad_enabled(grad), torch.utils.flop_counter.FlopCounterMode(display=False) as fc:
        model(x)
    assert replayed.total_flops == fc.get_total_flops()


def test_replayed_ops_get_no_cost_without_their_memo() -> None:
    """The memo is what carries the cost: a probe that drops it loses the replayed FLOPs."""

    class Forgetful(CostProbe):
        def replay_op(self, fn: Any, func: Any, memo: Any) -> None:
            pass

    with torch.device("meta"):
        model = Stack()
    probe = Forgetful()
    with torch.no_grad(), tv.Recorder(model, probes=[probe]):
        model(torch.randn(3, 16, device="meta"))
    _, full, _ = record(model, torch.randn(3, 16, device="meta"), grad=False)
    assert probe.record is not None and probe.record.total_flops < full.total_flops


@pytest.mark.parametrize("model_cls", [cm.SDPAttention, cm.MatmulAttention])
def test_attention_saves_on_meta_what_it_saves_on_cpu(model_cls: type[nn.Module]) -> None:
    got = {}
    for device in ("cpu", "meta"):
        torch.manual_seed(0)
        with torch.device(device):
            model = model_cls()
        g, r, _ = record(model, torch.randn(2, 10, 32, device=device))
        got[device] = (r.total_saved_bytes, r.total_flops, sorted(r.saved_bytes.values()))
    assert got["cpu"] == got["meta"]


def test_without_the_substitute_meta_attention_saves_the_weights() -> None:
    """What the substitute fixes: the math path on meta keeps (b, h, t, t) attention weights."""
    with torch.device("meta"):
        model = cm.SDPAttention()
    x = torch.randn(2, 10, 32, device="meta")
    _, fused, _ = record(model, x)
    _, math, _ = record(model, x, probe={"meta_attention": False})
    assert math.total_saved_bytes > fused.total_saved_bytes
    assert fused.total_flops == math.total_flops


def test_layers_are_the_stats_asked_for() -> None:
    model = cm.TwoNames()
    g, r, _ = record(model, torch.randn(2, 4), probe={"stats": ("params", "shared_with")})
    assert g.annotations.names() == ["params", "shared_with"]
    by_path = {m.path: m.id for m in g.modules()}
    shared = g.annotations.layer("shared_with")
    assert shared[by_path["a"]] == ["b"] and by_path["c"] not in shared
    params = g.annotations.layer("params")
    assert params[by_path[""]] == 35 and str(params[by_path[""]]) == "35"
    g, _, _ = record(cm.MLP(), torch.randn(4, 16))
    assert tuple(g.annotations.names()) == PROBE_STATS


def test_a_forward_that_raises_leaves_nothing_installed() -> None:
    class Boom(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.fc(x)
            raise ValueError(f"boom {y.shape}")

    probe = CostProbe()
    with pytest.raises(ValueError, match="boom"), tv.Recorder(Boom(), probes=[probe]) as rec:
        rec.model(torch.randn(2, 4))
    assert probe.record is not None and probe.record.total_flops == 2 * 2 * 4 * 4  # what ran
    assert torch._C._len_torch_dispatch_stack() == 0
    assert not torch._C._autograd._top_saved_tensors_default_hooks(False)


def test_aten_replay_keeps_autograd_views_and_mutations_real() -> None:
    def run(counter: Any) -> tuple[list[Any], int]:
        x = torch.randn(4, 8, device="meta", requires_grad=True)
        w = torch.randn(8, 8, device="meta", requires_grad=True)
        saved = SavedTensors()
        with saved, counter:
            outs = []
            for _ in range(3):
                h = (x @ w).relu()  # mm and relu: replayed from the second round
                v = h.view(32)  # a view: run
                b = torch.zeros(4, 8, device="meta").add_(1)  # in place: run
                outs.append((h, v, b))
        h, v, b = outs[-1]
        assert h.requires_grad and h.grad_fn is not None and v._base is h and not b.requires_grad
        return [(tuple(t.shape), t.stride(), t.dtype) for o in outs for t in o], saved.total

    replaying = ReplayingOpFlops()
    assert run(replaying) == run(OpFlops())
    assert replaying.replays >= 4 and replaying.total == 3 * 2 * 4 * 8 * 8  # three (4x8)@(8x8)


def test_aten_replay_replays_training_batchnorm_on_meta() -> None:
    """Training BatchNorm writes its running statistics and returns fresh tensors: on meta
    the write changes no data, so its (slow, Python) meta kernel runs once per shape and is
    replayed after; results, FLOPs, saved bytes and version counters are those of running it."""

    def run(counter: Any) -> tuple[Any, ...]:
        torch.manual_seed(0)
        net = nn.Sequential(nn.BatchNorm2d(3), nn.BatchNorm2d(3), nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4)).train()
        net = net.to("meta")
        x = torch.randn(2, 3, 5, 5, device="meta", requires_grad=True)
        saved = SavedTensors(net)
        with saved, counter:
            y = net(x)
        versions = [(t._version, tuple(t.shape)) for t in net.buffers()]
        return (tuple(y.shape), y.stride(), y.grad_fn is not None), versions, saved.saved_bytes, counter.uncounted

    replaying = ReplayingOpFlops()
    assert run(replaying) == run(OpFlops())
    assert replaying.replays >= 1  # the second BatchNorm2d(3)


def test_aten_replay_runs_an_op_that_reshapes_what_it_writes() -> None:
    counter = ReplayingOpFlops()
    with counter:
        for _ in range(2):
            out = torch.empty(0, device="meta")
            torch.add(torch.ones(3, device="meta"), 1, out=out)  # resizes ``out``: never replayed
            assert out.shape == (3,)
    assert counter.replays == 0


def test_aten_replay_templates_outlive_one_recording() -> None:
    """A second recording on meta replays the kernels the first ran (the templates are kept
    for the process), with the same numbers; clear_templates() makes it run them again."""
    from tensorview.cost.replay import clear_templates

    def record() -> tuple[CostRecord, int]:
        model = cm.CNN().train().to("meta")
        probe = CostProbe()
        with tv.Recorder(model, probes=[probe]):
            model(torch.randn(2, 3, 16, 16, device="meta"))
        assert probe.record is not None
        return probe.record, probe._counter.replays  # type: ignore[attr-defined]

    clear_templates()
    first, replayed_first = record()
    second, replayed_second = record()
    assert (second.flops, second.saved_bytes, second.uncounted) == (first.flops, first.saved_bytes, first.uncounted)
    assert replayed_second > replayed_first
    clear_templates()
    assert record()[1] == replayed_first


def _by_brute_force(calls: list[Any], counter: Any, saved: Any) -> dict[int, tuple[int, dict[str, int], int]]:
    """Each call's FLOPs, uncounted op calls and saved bytes: a scan of every key."""
    out = {}
    for m in calls:
        last = max(k for k in [*counter.flops, *counter.uncounted, *saved.storages, 0] if isinstance(k, int))
        inside = [k for k in range(m.id, (m.end if m.end >= 0 else last + 1))]
        flops = sum(counter.flops.get(k, 0) for k in inside)
        uncounted: dict[str, int] = {}
        storages: dict[int, int] = {}
        for k in inside:
            for name, n in counter.uncounted.get(k, {}).items():
                uncounted[name] = uncounted.get(name, 0) + n
            storages.update(saved.storages.get(k, {}))
        out[m.id] = (flops, dict(sorted(uncounted.items(), key=lambda kv: (-kv[1], kv[0]))), sum(storages.values()))
    return out


def test_roll_ups_are_sums_over_each_calls_keys() -> None:
    """Every module call's FLOPs, uncounted calls and saved bytes are those of the keys in
    its id range (a failed call: up to where it stopped), however many keys it holds and
    wherever it lies: calls holding one key, many, none, after the last key."""
    from tensorview.cost.params import module_params_and_totals
    from tensorview.cost.record import roll_up

    class Last(nn.Identity):
        def __init__(self, fail: bool) -> None:
            super().__init__()
            self.fail = fail

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.fail:
                raise ValueError("boom")
            return x

    class Tail(nn.Module):  # a block, then calls holding no key after the last op
        def __init__(self, fail: bool) -> None:
            super().__init__()
            self.block, self.norm, self.id1, self.id2 = cm.SDPAttention(), nn.LayerNorm(32), nn.Identity(), Last(fail)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.id2(self.id1(self.norm(self.block(x).relu())))

    class Kept(CostProbe):  # keeps what its roll-up reads
        def stop(self) -> None:
            self.kept = (list(self._calls), list(self._modules), self._counter, self._saved)
            super().stop()

    for fail in (False, True):
        model, probe = Tail(fail), Kept()
        with pytest.raises(ValueError) if fail else torch.enable_grad():
            with tv.Recorder(model, probes=[probe]):
                model(torch.randn(2, 6, 32))
        calls, modules, counter, saved = probe.kept
        assert [m.path for m in calls if m.failed] == (["", "id2"] if fail else []) and len(calls) == 8
        rows, totals = module_params_and_totals(model, [(m.path, mod) for m, mod in zip(calls, modules)])
        r = roll_up(calls, counter, saved, {m.id: row for m, row in zip(calls, rows)}, totals)
        expected = _by_brute_force(calls, counter, saved)
        got = {m.id: (r.flops[m.id], dict(r.uncounted.get(m.id, {})), r.saved_bytes[m.id]) for m in calls}
        assert got == expected
        assert expected[calls[0].id][0] == r.total_flops > 0 and expected[calls[0].id][2] == r.total_saved_bytes > 0
        assert [list(v[1].items()) for v in got.values()] == [list(v[1].items()) for v in expected.values()]

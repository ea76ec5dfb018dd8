"""Probes: facts recorded per node while the forward runs (recording/probes.py)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tensorview as tv
from tensorview.graph import FunctionNode, ModuleNode
from tensorview.recording import Probe


class OpShapes(Probe):
    """Per op: the op name and the call chain seen when it ran (the memo replays it)."""

    name = "seen"

    def __init__(self) -> None:
        self.values: dict[int, Any] = {}
        self.events: list[str] = []
        self.ran = self.replayed = 0

    def start(self, root: ModuleNode, module: nn.Module) -> None:
        self.events.append("start")

    def stop(self) -> None:
        self.events.append("stop")

    def enter_call(self, m: ModuleNode, module: nn.Module) -> None:
        self.events.append(f"enter {m.path}")

    def exit_call(self, m: ModuleNode) -> None:
        self.events.append(f"exit {m.path}")

    def exit_op(self, fn: FunctionNode, func: Any) -> Any:
        self.ran += 1
        self.values[fn.id] = (fn.op, len(self.open))
        return fn.op

    def replay_op(self, fn: FunctionNode, func: Any, memo: Any) -> None:
        self.replayed += 1
        self.values[fn.id] = (memo, len(self.open))

    def layers(self) -> dict[str, dict[int, Any]]:
        return {self.name: self.values}


class Stack(nn.Module):
    def __init__(self, n: int = 6) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Sequential(nn.Linear(8, 8), nn.GELU()) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x) + x
        return x


def record(model: nn.Module, x: torch.Tensor, **kw: Any) -> tuple[tv.ComputationGraph, OpShapes]:
    probe = OpShapes()
    with torch.no_grad(), tv.Recorder(model, probes=[probe], **kw) as rec:
        model(x)
    return rec.graph, probe


def test_every_op_gets_a_value_and_calls_nest() -> None:
    graph, probe = record(Stack(2), torch.randn(2, 8))
    fns = list(graph.graph.functions())
    assert set(probe.values) == {f.id for f in fns}
    layer = graph.graph.annotations.layer("seen")
    assert all(layer[f.id][0] == f.op for f in fns)
    # ops inside layers.i.0 (Linear) run three calls deep: root, layers.i, layers.i.0
    linear = next(f for f in fns if f.op == "linear")
    assert layer[linear.id][1] == 3
    assert probe.events[0] == "start" and probe.events[-1] == "stop"
    assert probe.events[1:3] == ["enter layers.0", "enter layers.0.0"]
    assert probe.events.count("enter layers.1") == probe.events.count("exit layers.1") == 1


def test_replayed_ops_carry_the_facts_of_the_op_they_replay() -> None:
    with torch.device("meta"):
        model = Stack(6)
    x = torch.randn(2, 8, device="meta")
    replayed, p1 = record(model, x)
    plain, p2 = record(model, x, meta_replay=False)
    assert p1.replayed > 0 and p2.replayed == 0 and p1.ran < p2.ran
    assert replayed.graph.annotations.layer("seen") == plain.graph.annotations.layer("seen")
    assert replayed.to_json() == plain.to_json()  # the annotations reach the JSON alike


def test_stop_runs_when_the_forward_raises() -> None:
    class Boom(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise ValueError("boom")

    probe = OpShapes()
    with pytest.raises(ValueError, match="boom"), tv.Recorder(Boom(), probes=[probe]) as rec:
        rec.model(torch.randn(1))
    assert probe.events == ["start", "stop"] and probe.open == []


def test_probes_must_be_probes() -> None:
    with pytest.raises(tv.InvalidTypeError, match="probes must be tensorview.recording.Probe instances"):
        tv.Recorder(nn.Linear(2, 2), probes=[object()])  # type: ignore[list-item]


def test_without_probes_the_session_skips_them() -> None:
    model = nn.Linear(2, 2)
    with tv.Recorder(model) as rec:
        model(torch.randn(1, 2))
    assert rec._session is not None and rec._session.probes is None
    assert not rec.graph.graph.annotations


def test_a_probe_can_run_a_substitute_function() -> None:
    """``substitutes``: the session runs the probe's function in place of the op (the node
    keeps the op's name); without probes nothing is swapped."""
    calls: list[int] = []

    def relu_counted(x: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        return torch.relu(x)

    class Swap(OpShapes):
        substitutes = {torch.relu: relu_counted}

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.fc(x))

    model = Net()
    x = torch.randn(3, 2)
    probe = Swap()
    with torch.no_grad(), tv.Recorder(model, probes=[probe]) as rec:
        out = model(x)
    assert calls == [1] and torch.equal(out, model(x))
    assert [f.op for f in rec.graph.graph.functions()] == ["linear", "relu"]
    assert probe.values[rec.graph.graph.by_name("relu").id] == ("relu", 1)
    with tv.Recorder(model):
        model(x)
    assert calls == [1]


def test_a_substitute_also_replaces_the_calls_an_op_makes_by_global_name() -> None:
    """nn.MultiheadAttention records one op, F.multi_head_attention_forward, which calls
    F.scaled_dot_product_attention by its global name: a probe substituting that function
    gets those inner calls too, with nothing patched (ops run with torch functions off, so
    the inner call is no op of its own)."""
    calls: list[int] = []
    sdpa, mha = F.scaled_dot_product_attention, F.multi_head_attention_forward

    def sdpa_counted(*args: Any, **kwargs: Any) -> torch.Tensor:
        calls.append(1)
        return sdpa(*args, **kwargs)

    class Swap(OpShapes):
        substitutes = {sdpa: sdpa_counted}

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.attn(x, x, x, need_weights=False)[0] + self.attn(x, x, x, need_weights=False)[0]

    model = Net()
    x = torch.randn(2, 5, 8)
    with torch.no_grad(), tv.Recorder(model, probes=[Swap()]) as rec:
        out = model(x)
    assert calls == [1, 1] and torch.equal(out, model(x))
    ops = [f.op for f in rec.graph.graph.functions()]
    assert ops.count("multi_head_attention_forward") == 2 and "scaled_dot_product_attention" not in ops
    assert F.scaled_dot_product_attention is sdpa and F.multi_head_attention_forward is mha
    assert calls == [1, 1]  # the plain forward ran the function itself


def test_two_probes_see_what_each_sees_alone() -> None:
    """With several probes each is called as it is alone (one probe is called directly,
    several in turn): the same calls, values, replayed memos and open calls."""
    from tensorview.cost.probe import CostProbe

    for device in ("cpu", "meta"):
        with torch.device(device):
            model, x = Stack(3), torch.randn(2, 8)
        _, alone = record(model, x)
        cost_alone = CostProbe()
        with torch.no_grad(), tv.Recorder(model, probes=[cost_alone]):
            model(x)
        a, b, cost = OpShapes(), OpShapes(), CostProbe()
        with torch.no_grad(), tv.Recorder(model, probes=[a, cost, b]) as rec:
            model(x)
        assert a.events == b.events == alone.events and len(a.events) == 2 + 2 * 9
        assert a.values == b.values == alone.values and (a.ran, a.replayed) == (alone.ran, alone.replayed)
        assert (a.replayed > 0) == (device == "meta") and a.open == b.open == []
        assert cost.record == cost_alone.record and cost.record is not None and cost.record.total_flops > 0
        assert set(rec.graph.graph.annotations.names()) >= {"seen", "flops"}


class Results(Probe):
    """``exit_op_result``: what each op returned (its shapes; None where it raised)."""

    name = "results"

    def __init__(self) -> None:
        self.shapes: dict[int, Any] = {}

    def exit_op_result(self, fn: FunctionNode, func: Any, out: Any) -> Any:
        self.shapes[fn.id] = tuple(out.shape) if isinstance(out, torch.Tensor) else out
        return None

    def layers(self) -> dict[str, dict[int, Any]]:
        return {self.name: self.shapes}


@pytest.mark.parametrize("several", [False, True])
def test_exit_op_result_sees_what_each_op_returned(several: bool) -> None:
    probe, other = Results(), OpShapes()
    probes: list[Probe] = [probe, other] if several else [probe]
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU())
    with tv.Recorder(model, probes=probes) as rec:
        model(torch.randn(3, 8))
    g = rec.graph.graph
    assert {g[i].op: shape for i, shape in probe.shapes.items()} == {"linear": (3, 4), "relu": (3, 4)}
    if several:
        assert other.ran == 2  # (a probe with exit_op only is still told)

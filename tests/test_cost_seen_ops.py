"""The cost probe's cache of ops seen before (tensorview/cost/probe.py ``enter_op_args``):
an op with the signature of one already run runs without the FLOP counter, and its cost
is the one measured then; the numbers are those of counting every op."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tensorview as tv
from tensorview.cost import probe as probe_module
from tensorview.cost.flops import OpFlops
from tensorview.cost.probe import CostProbe, op_signature
from tensorview.cost.record import CostRecord


def _record(model: nn.Module, *args: Any, grad: bool = True) -> tuple[Any, CostRecord]:
    probe = CostProbe()
    with torch.set_grad_enabled(grad), tv.Recorder(model, probes=[probe]) as rec:
        model(*args)
    assert probe.record is not None
    return rec.graph.graph, probe.record


def _aten_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    original = OpFlops.__torch_dispatch__

    def counting(self: OpFlops, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        seen.append(str(func))
        return original(self, func, types, args, kwargs)

    monkeypatch.setattr(OpFlops, "__torch_dispatch__", counting)
    return seen


@pytest.mark.parametrize("grad", [False, True])
def test_repeated_ops_are_counted_once_and_costed_each_time(monkeypatch: pytest.MonkeyPatch, grad: bool) -> None:
    torch.manual_seed(0)
    one = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    six = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(8, 8), nn.ReLU())])
    seen = _aten_calls(monkeypatch)
    x = torch.randn(3, 8, requires_grad=grad)  # (so that every linear's input is alike)
    _record(one, x, grad=grad)
    first = list(seen)
    seen.clear()
    g, r = _record(six, x, grad=grad)
    assert first and seen == first  # the five later blocks ran without the counter
    linears = [f for f in g.functions() if f.op == "linear"]
    assert len(linears) == 6
    assert [r.flops[f.id] for f in linears] == [2 * 3 * 8 * 8] * 6
    relus = [f for f in g.functions() if f.op == "relu"]
    assert [dict(r.uncounted[f.id]) for f in relus] == [{"aten.relu": 1}] * 6
    assert r.total_flops == 6 * 2 * 3 * 8 * 8
    assert dict(r.total_uncounted) == {"aten.relu": 6}
    ids = {m.path: m.id for m in g.modules()}
    assert r.flops[ids["4"]] == 2 * 3 * 8 * 8 and r.flops[ids[""]] == r.total_flops


class _Varied(nn.Module):
    """The same functions again with what changes their aten ops or FLOPs: shapes,
    strides, grad mode, whether an argument needs grad, plain values."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.w = nn.Parameter(torch.randn(8, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x) + self.fc(x[:2]).sum()
        y = y + self.fc(x.t().contiguous().t())  # other strides
        with torch.no_grad():
            z = self.fc(x)  # grad off
        y = y + F.linear(x, self.w) + F.linear(x, self.w.detach())  # needs grad or not
        y = y + F.dropout(y, 0.0, True) + F.dropout(y, 0.5, True)  # plain values
        y = torch.matmul(y, self.w) + torch.matmul(y[:1], self.w) + torch.cat([y, z]).sum()
        return F.softmax(y, -1) + F.softmax(y, 0)


def _costs(g: Any, r: CostRecord) -> list[tuple[str, int, dict[str, int], int]]:
    return [
        (f.op, r.flops.get(f.id, 0), dict(r.uncounted.get(f.id, {})), r.saved_bytes.get(f.id, 0)) for f in g.functions()
    ]


@pytest.mark.parametrize("grad", [False, True])
def test_numbers_are_those_of_counting_every_op(monkeypatch: pytest.MonkeyPatch, grad: bool) -> None:
    torch.manual_seed(0)
    model, x = _Varied(), torch.randn(4, 8)
    torch.manual_seed(1)
    g, cached = _record(model, x, grad=grad)
    monkeypatch.setattr(probe_module, "op_signature", lambda *a: None)  # every op counted
    torch.manual_seed(1)
    g2, counted = _record(model, x, grad=grad)
    assert _costs(g, cached) == _costs(g2, counted)
    assert len({c[1] for c in _costs(g, cached) if c[0] == "linear"}) == 2  # 4 rows, 2 rows
    assert cached == counted


def test_signature_tells_apart_what_changes_the_ops() -> None:
    a, b = torch.randn(4, 8), torch.randn(4, 8, requires_grad=True)
    sig = op_signature(F.linear, (a, a), {})
    assert sig is not None and sig == op_signature(F.linear, (torch.zeros(4, 8), a), {})
    assert sig != op_signature(F.linear, (a[:2], a), {})
    assert sig != op_signature(F.linear, (a.t().contiguous().t(), a), {})
    assert sig != op_signature(F.linear, (a.double(), a), {})
    assert sig != op_signature(F.linear, (b, a), {})
    with torch.no_grad():
        assert sig != op_signature(F.linear, (a, a), {})
    assert op_signature(F.dropout, (a,), {"p": 0.1}) != op_signature(F.dropout, (a,), {"p": 0.2})
    assert op_signature(F.linear, (a.to("meta"), a), {}) is None  # (the counter replays on meta)
    assert op_signature(torch.where, (a > 0, a, object()), {}) is None


class _FailsLater(nn.Module):
    def __init__(self, exc: type[BaseException]) -> None:
        super().__init__()
        self.fc, self.exc, self.calls = nn.Linear(4, 4), exc, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.fc(x)
        self.calls += 1
        return self.fc(x)


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_an_op_seen_before_that_raises_leaves_the_dispatch_stack_as_it_was(
    monkeypatch: pytest.MonkeyPatch, exc: type[BaseException]
) -> None:
    model = _FailsLater(exc)
    calls, inside = {"n": 0}, []
    original = F.linear

    def linear(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:  # the second call: one whose signature was seen
            inside.append(torch._C._len_torch_dispatch_stack())  # 0: it runs without the counter
            raise exc("stop")
        return original(*args, **kwargs)

    probe = CostProbe()
    monkeypatch.setattr(probe, "substitutes", {original: linear})
    with pytest.raises((exc, tv.RecordingError)):
        with tv.Recorder(model, probes=[probe]):
            model(torch.randn(2, 4, requires_grad=True))  # (both linears alike)
    assert calls["n"] == 2 and inside == [0]
    assert torch._C._len_torch_dispatch_stack() == 0
    assert probe.record is not None  # the roll-up of what ran
    y = model.fc(torch.randn(2, 4))  # torch works as before
    assert y.shape == (2, 4)

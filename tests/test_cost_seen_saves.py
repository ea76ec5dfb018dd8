"""Saved-for-backward bytes of ops seen before, filed without the hooks
(tensorview/cost/savedops.py): the numbers are those of the hooks seeing every op."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tensorview as tv
from tensorview.cost import probe as probe_module
from tensorview.cost.memory import SavedTensors
from tensorview.cost.probe import CostProbe
from tensorview.cost.record import CostRecord

_KEPT = [torch.ones(8)]


class _Scale(torch.autograd.Function):
    """Saves its input and a tensor it keeps elsewhere (not an argument, not a result)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, _KEPT[0])
        return x * 2

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        return g * 2


class _Saves(nn.Module):
    """Each kind of tensor autograd saves, twice or more with one signature: arguments,
    results, views, in-place writes, parameters and views of them, one storage under two
    arguments, tensors made inside the op, a tensor from elsewhere, results freed at once."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.w = nn.Parameter(torch.randn(8, 8))
        self.bn = nn.BatchNorm1d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ys = []
        for _ in range(3):
            y = self.fc(x).tanh()  # argument, parameter, a view of one; a result
            y = torch.sigmoid(y[:, :4])  # a view in
            z = y * 1.0
            z.relu_()  # in place: its result is its argument
            z = z * z  # one storage, two arguments
            a, b = x[:2], x[2:]
            z = z + (a * b).sum()  # two views of one storage
            ys.append(F.linear(x, self.w.t()) + x @ self.w)  # views of a parameter
            ys.append(F.dropout(x, 0.5, True) + self.bn(x))  # a mask, statistics made inside
            ys.append(_Scale.apply(x))  # a tensor from elsewhere
            v, i = torch.max(x, 1)  # a result of two
            ys.append(x * v[:, None] + z.sum() + y.sum() + i.sum())
            for _ in range(3):
                (x * 2).exp()  # saved and freed at once: its address may come back
        return torch.stack(ys).softmax(-1)


def _record(model: nn.Module, *args: Any) -> tuple[Any, CostRecord, int]:
    packs: list[int] = []
    original = SavedTensors._pack

    def counting(self: SavedTensors, t: torch.Tensor, off: bool = False) -> torch.Tensor:
        if not off:
            packs.append(1)
        return original(self, t, off)

    probe = CostProbe()
    SavedTensors._pack = counting  # type: ignore[method-assign]
    try:
        torch.manual_seed(1)
        with tv.Recorder(model, probes=[probe]) as rec:
            model(*args)
    finally:
        SavedTensors._pack = original  # type: ignore[method-assign]
    assert probe.record is not None
    return rec.graph.graph, probe.record, len(packs)


def _saved(g: Any, r: CostRecord) -> list[tuple[str, int]]:
    return [
        (n.op if hasattr(n, "op") else n.path, r.saved_bytes.get(n.id, 0)) for n in g.nodes if n.id in r.saved_bytes
    ]


@pytest.mark.parametrize("needs_grad", [False, True])
def test_saved_bytes_are_those_of_the_hooks_seeing_every_op(monkeypatch: pytest.MonkeyPatch, needs_grad: bool) -> None:
    torch.manual_seed(0)
    model, x = _Saves().train(), torch.randn(4, 8, requires_grad=needs_grad)
    g, replayed, packs = _record(model, x)
    monkeypatch.setattr(probe_module, "op_signature", lambda *a, **k: None)  # every op seen by the hooks
    g2, hooked, all_packs = _record(model, x)
    assert _saved(g, replayed) == _saved(g2, hooked)
    assert replayed == hooked
    assert replayed.total_saved_bytes > 0 and replayed.saved_param_bytes > 0
    assert all_packs - packs >= 12  # the ops seen before that save arguments or results ran without them
    ids = {m.path: m.id for m in g.modules()}
    assert replayed.saved_bytes[ids["fc"]] == 4 * 8 * 4  # fc's input; its weight is a parameter


def test_an_op_run_without_hooks_that_raises_puts_them_back(monkeypatch: pytest.MonkeyPatch) -> None:
    calls, inside = {"n": 0}, []
    original = F.linear

    def linear(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:  # the second call: one whose saves were learnt
            inside.append(torch._C._autograd._top_saved_tensors_default_hooks(False))
            raise KeyboardInterrupt("stop")
        return original(*args, **kwargs)

    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    nn.init.eye_(model[1].weight)
    probe = CostProbe()
    monkeypatch.setattr(probe, "substitutes", {original: linear})
    with pytest.raises((KeyboardInterrupt, tv.RecordingError)):
        with tv.Recorder(model, probes=[probe]):
            model(torch.randn(2, 4, requires_grad=True))
    assert calls["n"] == 2 and inside == [None]  # it ran without the hooks
    assert torch._C._autograd._top_saved_tensors_default_hooks(False) is None  # all taken off
    assert probe.record is not None and probe.record.total_saved_bytes == 2 * 4 * 4  # the first one's input


def test_the_models_own_hooks_see_every_save() -> None:
    """An op under saved-tensor hooks of the model's own is not run without them."""
    seen: list[tuple[int, ...]] = []

    class Hooked(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.fc(x)
            with torch.autograd.graph.saved_tensors_hooks(lambda t: seen.append(tuple(t.shape)) or t, lambda t: t):
                return self.fc(y)

    probe = CostProbe()
    with tv.Recorder(Hooked(), probes=[probe]) as rec:
        rec.model(torch.randn(2, 4, requires_grad=True))  # type: ignore[operator]
    assert sorted(seen) == [(2, 4), (4, 4)]  # the second linear's input and weight, by the model's hooks
    assert probe.record is not None and probe.record.total_saved_bytes == 2 * 4 * 4  # (ours saw the first)


def test_replayed_storages_freed_at_once_stay_apart() -> None:
    """A storage filed by pattern stays referenced while the hooks are active, as one the
    hook saw: one freed at once cannot hand its address to a later one."""
    from tensorview.cost.savedops import SeenSaves

    x = torch.randn(64, requires_grad=True)
    saved = SavedTensors()
    with saved:
        seen, known = SeenSaves(saved), [None, None]  # (what is known of one signature)
        for key in range(20):
            saved.current = key
            state = seen.enter(known, [x])
            seen.exit(state, key, (x * 2).exp())  # exp saves its result, freed right after
        assert known[1] is not None and known[1][0] == (~0,)  # learnt: the result
    assert saved.total == 20 * 64 * 4 and len(saved.storages) == 20

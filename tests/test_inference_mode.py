"""In-place ops under ``torch.inference_mode()``: inference tensors keep no version counter,
so the recorder counts writes by the ops' schemas instead (recording/inference.py); the
graph must be the one recorded without inference mode."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tensorview as tv
from tensorview.graph import Graph
from tensorview.recording import Recorder
from tensorview.recording.inference import ACTIVE

from .fixtures.models import ZOO

INPLACE = ["inplace_methods", "inplace_module", "augmented_assign", "inplace_on_view", "setitem"]


def record(model: nn.Module, args: tuple[Any, ...], ctx: Callable[[], Any], **options: Any) -> Graph:
    with ctx():
        args = tuple(a.clone() for a in args)  # made inside: inference tensors in inference mode
        with Recorder(model, **options) as rec:
            model(*args)
    assert not ACTIVE and torch._C._len_torch_dispatch_stack() == 0  # nothing left behind
    return rec.graph


def zoo(name: str) -> tuple[nn.Module, tuple[Any, ...]]:
    cls, inputs = ZOO[name]
    torch.manual_seed(0)
    args, kwargs = inputs()
    assert not kwargs
    return cls().eval(), args


@pytest.mark.parametrize("name", INPLACE)
def test_zoo_inplace_models_same_graph_in_inference_mode(name: str) -> None:
    model, args = zoo(name)
    expected = record(model, args, torch.no_grad).to_dict()
    assert record(model, args, torch.inference_mode).to_dict() == expected


@pytest.mark.parametrize("name", INPLACE)
def test_zoo_inplace_models_on_meta_in_inference_mode(name: str) -> None:
    model, args = zoo(name)
    expected = tv.draw_graph(model, input_data=args, device="meta").to_json()
    with torch.inference_mode():
        assert tv.draw_graph(model, input_data=args, device="meta").to_json() == expected


def test_unused_inplace_result_is_seen() -> None:
    """``y.relu_()`` with its result unused: ``sigmoid`` reads the relu_ output."""
    model, args = zoo("inplace_methods")
    g = record(model, args, torch.inference_mode)
    relu = next(f for f in g.functions() if f.op == "relu_")
    sigmoid = next(f for f in g.functions() if f.op == "sigmoid")
    (src,) = g.predecessors(sigmoid.id)
    assert g.producer(src) == relu.id


class EveryWayToMutate(nn.Module):
    """In-place ops with no name hint at the call site: ``out=``, ``inplace=True``,
    ``copy_`` through a view, ``torch.relu_``, and a write into a view seen by the base."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        torch.add(x, 1, out=y)
        F.relu(y, inplace=True)
        torch.relu_(y)
        y[:, 1:].copy_(x[:, 1:])
        F.dropout(y, p=0.5, training=True, inplace=True)
        return y.sum(-1)


class EntersInferenceModeItself(nn.Module):
    """Inference tensors met mid-forward: the writes are caught op by op from then on."""

    def __init__(self, ctx: Callable[[], Any]) -> None:
        super().__init__()
        self.ctx = ctx
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        with self.ctx():
            z = y * 2
            z.relu_()
            v = z[:, :2]
            v += 1
            return z.sigmoid()


def test_writes_without_a_name_hint() -> None:
    model = EveryWayToMutate()
    args = (torch.randn(2, 4),)
    expected = record(model, args, torch.no_grad)
    got = record(model, args, torch.inference_mode)
    assert got.to_dict() == expected.to_dict()
    # each mutating op produced a new version: the final sum reads the dropout's result
    ops = [f.op for f in got.functions()]
    assert ops == ["mul", "add", "relu", "relu_", "getitem", "getitem", "copy_", "dropout", "sum"]
    total = next(f for f in got.functions() if f.op == "sum")
    (src,) = got.predecessors(total.id)
    assert got.nodes[got.producer(src)].op == "dropout"  # type: ignore[union-attr,index]


def test_inference_mode_entered_inside_forward() -> None:
    torch.manual_seed(0)
    expected = record(EntersInferenceModeItself(torch.no_grad), (torch.randn(2, 4),), torch.no_grad)
    torch.manual_seed(0)
    got = record(EntersInferenceModeItself(torch.inference_mode), (torch.randn(2, 4),), torch.no_grad)
    assert got.to_dict() == expected.to_dict()


class RepeatedViewWrites(nn.Module):
    """The same ops on the same shapes again and again: meta replay must count the writes."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 1
        for _ in range(3):
            v = y[:, :2]
            v.mul_(2)
            y = y + 1
        return y


@pytest.mark.parametrize("meta_replay", [True, False])
def test_meta_replay_in_inference_mode(meta_replay: bool) -> None:
    model = RepeatedViewWrites()
    args = (torch.empty(2, 4, device="meta"),)
    expected = record(model, args, torch.no_grad, meta_replay=meta_replay)
    got = record(model, args, torch.inference_mode, meta_replay=meta_replay)
    assert got.to_dict() == expected.to_dict()
    # the add after each write reads the mul_'s new version of y
    adds = [f for f in got.functions() if f.op == "add"]
    muls = [f for f in got.functions() if f.op == "mul_"]
    for add, mul in zip(adds, muls):
        (src,) = got.predecessors(add.id)
        assert got.producer(src) == mul.id


def test_inference_tensors_as_inputs_outside_inference_mode() -> None:
    model, _ = zoo("inplace_on_view")
    with torch.inference_mode():
        x = torch.randn(2, 4)
    with Recorder(model) as rec:
        model(x)
    assert not ACTIVE
    assert rec.graph.to_dict() == record(model, (x,), torch.no_grad).to_dict()


def test_counts_are_dropped_when_forward_raises() -> None:
    class Fails(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x.relu_()
            raise ValueError("boom")

    model = Fails()
    with torch.inference_mode(), pytest.raises(ValueError), Recorder(model):
        model(torch.randn(2))
    assert not ACTIVE and torch._C._len_torch_dispatch_stack() == 0


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_transformers_decoder_same_graph_in_inference_mode(device: str) -> None:
    from .test_transformers_tier import ARCHS, build

    arch = next(a for a in ARCHS if a.model_type == "llama")
    model = build(arch, device, **(arch.meta_build if device == "meta" else {}))
    inputs = arch.inputs(device)
    with torch.no_grad(), Recorder(model) as rec:
        model(**inputs)
    with torch.inference_mode(), Recorder(model) as rec_inf:
        model(**inputs)
    assert rec_inf.graph.to_dict() == rec.graph.to_dict()

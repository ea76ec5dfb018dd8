"""A caller's ``TorchFunctionMode`` around a recording sees what it sees without one
(issue 21 B2): the model's calls, in order, and none of tensorview's own."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

import tensorview as tv


class Count(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.names.append(getattr(func, "__name__", repr(func)))
        return func(*args, **(kwargs or {}))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn(self.fc(x))) + torch.zeros(x.shape[0], 4)
        return y.view(-1).sum()


def _seen(run: Any) -> list[str]:
    with Count() as mode:
        run()
    assert torch._C._len_torch_function_stack() == 0
    return mode.names


def test_a_callers_mode_sees_the_models_calls_as_without_recording() -> None:
    model, x = Model().eval(), torch.randn(2, 4)
    plain = _seen(lambda: model(x))
    assert plain[0] == "linear" and "batch_norm" in plain and plain[-1] == "sum"

    def recorder() -> None:
        with tv.Recorder(model):
            model(x)

    assert _seen(recorder) == plain
    graphs: list[Any] = []
    assert _seen(lambda: graphs.append(tv.draw_graph(model, input_data=x, mode="same"))) == plain
    assert _seen(lambda: graphs.append(tv.draw_graph(model, input_data=x, mode="eval"))) == plain
    # and the recording is the one made with no mode around it
    bare = tv.draw_graph(model, input_data=x, mode="same").graph
    for g in graphs:
        assert [(n.name, n.path) for n in g.graph.nodes] == [(n.name, n.path) for n in bare.nodes]
        assert g.graph.edges == bare.edges


def test_modes_stay_as_they_were_when_the_forward_fails() -> None:
    class Broken(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x) @ torch.ones(5, 5)

    with Count() as mode:
        with pytest.raises(tv.RecordingError, match="matmul"):
            tv.draw_graph(Broken(), input_size=(2, 4))
        assert torch._C._len_torch_function_stack() == 1 and torch._C._get_function_stack_at(0) is mode
    assert mode.names == ["relu", "ones", "matmul"]

"""Issue 3, part 3: every op knows the module it ran in, with a unique readable name."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tensorview import Recorder

from .fixtures import models as zoo


class Bottleneck(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(4, 4, 1)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(self.conv1(x)) + x  # the residual add belongs to this block


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer1 = nn.Sequential(Bottleneck(), Bottleneck())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer1(x).flatten(1)


def test_function_paths_and_names() -> None:
    model = Net()
    with Recorder(model) as rec:
        model(torch.randn(1, 4, 5, 5))
    g = rec._session.graph
    adds = [n for n in g.functions() if n.op == "add"]
    assert [(n.name, n.path) for n in adds] == [("add", "layer1.0"), ("add_1", "layer1.1")]
    convs = [n for n in g.modules() if n.cls_name == "Conv2d"]
    assert [n.name for n in convs] == ["layer1_0_conv1", "layer1_0_conv2", "layer1_1_conv1", "layer1_1_conv2"]
    flatten = next(n for n in g.functions() if n.op == "flatten")
    assert flatten.path == ""
    names = [n.name for n in g.nodes]
    assert len(set(names)) == len(names)


def test_table_lists_every_node_in_execution_order() -> None:
    model = Net()
    with Recorder(model) as rec:
        model(torch.randn(1, 4, 5, 5))
    g = rec._session.graph
    lines = g.table().splitlines()
    assert lines[0].split() == ["name", "kind", "path", "op", "input", "shapes", "output", "shapes"]
    rows = lines[2:]
    assert len(rows) == len(g.nodes)
    add_row = next(r for r in rows if r.startswith("add_1 "))
    assert add_row.split()[:4] == ["add_1", "function", "layer1.1", "add"]
    assert "(1, 4, 5, 5), (1, 4, 5, 5)" in add_row
    order = [r.split()[0] for r in rows]
    assert order == [n.name for n in g.nodes]


def test_data_dependent_control_flow_that_fx_cannot_trace() -> None:
    model = zoo.ControlFlow()
    with pytest.raises(torch.fx.proxy.TraceError):
        torch.fx.symbolic_trace(model)
    with Recorder(model) as rec:
        model(torch.ones(2, 4))
    g = rec._session.graph
    rows = [(n.name, n.kind, n.path) for n in g.nodes if n.kind != "tensor"]
    assert rows == [
        ("model", "module", ""),
        ("sum", "function", ""),
        ("gt", "function", ""),
        ("pos", "module", "pos"),
        ("linear", "function", "pos"),
    ]


class MakesItsActivation(nn.Module):
    """A module made and dropped inside forward, as some transformers mixers do with their
    activation: its object (and id) lasts one call."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.SiLU()(self.fc(x))


def test_modules_made_in_forward_are_named_where_each_was_called() -> None:
    """Each temporary module gets the path of the layer that made it, even when CPython
    gives the next one the id of the one just dropped."""
    model = nn.Sequential(*(MakesItsActivation() for _ in range(4)))
    with Recorder(model) as rec:
        model(torch.randn(2, 3))
    paths = [m.path for m in rec.graph.graph.modules() if m.cls_name == "SiLU"]
    assert paths == [f"{i}.SiLU" for i in range(4)]

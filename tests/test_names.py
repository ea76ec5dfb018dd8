"""Node names: handed out once, when a graph is done, and the same as naming each node as
it is made (the fast count-based pass must agree with ``Namespace`` everywhere, clashes
included)."""

from __future__ import annotations

import random

import pytest
import torch
from torch import nn

from tensorview.graph import GraphBuilder
from tensorview.graph.names import Namespace, name_nodes
from tensorview.recording import Recorder


class _Named:
    def __init__(self, name: str) -> None:
        self.name = name


def _one_by_one(bases: list[str], after: dict[int, int]) -> tuple[list[str], Namespace]:
    ns, names = Namespace(), []
    for i, b in enumerate(bases):
        a = after.get(i)
        names.append(ns(b if a is None else names[a] + b))
    return names, ns


@pytest.mark.parametrize("seed", range(4))
def test_naming_at_the_end_equals_naming_each_node_as_made(seed: int) -> None:
    rng = random.Random(seed)
    pool = ["add", "add_1", "add_2", "x", "x_1_1", "0", "a b", "1x", "", "é", "_out"]
    for _ in range(400):
        bases = [rng.choice(pool) for _ in range(rng.randint(1, 14))]
        after = {i: rng.randrange(i) for i in range(1, len(bases)) if rng.random() < 0.3}
        for i in after:
            bases[i] = rng.choice(["_out", "_1", "", "_out1"])
        expected, ns_expected = _one_by_one(bases, after)
        nodes = [_Named(b) for b in bases]
        ns = Namespace()
        assert name_nodes(nodes, 0, dict(after), ns) == len(nodes)  # type: ignore[arg-type]
        assert [n.name for n in nodes] == expected, (bases, after)
        assert len(set(expected)) == len(expected)
        # the namespace is left as if it had named them one by one: later names agree too
        for b in ["add", "add_1", "x", "fresh", "0"]:
            assert ns(b) == ns_expected(b)


def test_a_clash_falls_back_to_naming_one_by_one() -> None:
    # "add" twice makes "add_1" by counting, which a later base "add_1" also asks for
    nodes = [_Named(b) for b in ["add", "add", "add_1", "add"]]
    name_nodes(nodes, 0, {}, Namespace())  # type: ignore[arg-type]
    assert [n.name for n in nodes] == ["add", "add_1", "add_1_1", "add_2"]


def test_recorded_names_are_final_once_the_recording_ends() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.add_1 = nn.Identity()  # a module path that looks like a counted name

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x + 1
            y = y + 1
            return self.add_1(y) + 1

    net = Net()
    with Recorder(net) as rec:
        net(torch.zeros(2))
    # the module at path "add_1" comes after the op named "add_1": it gets "add_1_1", and
    # its pass-through result is named after that final name
    assert [(n.kind, n.name) for n in rec.graph.nodes] == [
        ("module", "model"),
        ("tensor", "x"),
        ("function", "add"),
        ("tensor", "add_out"),
        ("function", "add_1"),
        ("tensor", "add_1_out"),
        ("module", "add_1_1"),
        ("tensor", "add_1_1_out"),
        ("function", "add_2"),
        ("tensor", "add_2_out"),
    ]


def test_the_scripting_layer_names_on_finish() -> None:
    b = GraphBuilder("Net")
    x = b.input((1, 4))
    y = b.op("add", x)
    z = b.op("add", y)
    g = b.finish()
    assert [g.nodes[i].name for i in (x, y, z)] == ["x", "add_out", "add_out_1"]

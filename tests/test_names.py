"""Node names: handed out once, when a graph is done, and the same as naming each node as
it is made (the fast count-based pass must agree with ``Namespace`` everywhere, clashes
included)."""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch
from torch import nn

from tensorview.graph import GraphBuilder, checks
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


def _mlp_recording() -> Recorder:
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2), nn.ReLU())
    with Recorder(model) as rec:
        model(torch.zeros(1, 3))
    return rec


def test_a_recording_is_named_on_its_first_read_with_the_names_given_at_once(
    monkeypatch: pytest.MonkeyPatch, graph_watch: Any
) -> None:
    monkeypatch.setattr(checks, "_hooks", [])  # (the suite's lint reads every graph as it closes)
    rec = _mlp_recording()
    assert rec._session is not None
    g = rec._session.graph
    assert g._unnamed is not None  # nothing named yet: a recording never read pays nothing
    bases = [n.name for n in g._nodes]
    assert "linear" in bases and "_out" in bases  # (base names and suffixes until read)
    names = [n.name for n in g.nodes]
    assert g._unnamed is None
    assert names == [n.name for n in rec.ir.nodes]  # named once
    assert len(set(names)) == len(names)
    assert [g.by_name(n).id for n in ("linear", "linear_out", "linear_1", "relu_1_out")] == [
        next(n.id for n in g.nodes if n.name == name) for name in ("linear", "linear_out", "linear_1", "relu_1_out")
    ]
    assert g.nodes[g.nodes.index(g.by_name("linear"))].name == "linear"
    # the same names as a graph named eagerly, node by node (``name_nodes``)
    eager = [_Named(b) for b in bases]
    after = {n.id: g.predecessors(n.id)[0] for n in g.nodes if bases[n.id].startswith("_out")}
    name_nodes(eager, 0, after, Namespace())
    assert [e.name for e in eager] == names
    graph_watch.on_close(g, True)  # linted after all


def test_an_interrupt_while_naming_leaves_the_names_to_give_again(
    monkeypatch: pytest.MonkeyPatch, graph_watch: Any
) -> None:
    import tensorview.graph.graph as graph_module

    expected = [n.name for n in _mlp_recording().ir.nodes]
    monkeypatch.setattr(checks, "_hooks", [])
    rec = _mlp_recording()
    assert rec._session is not None
    g = rec._session.graph
    real = graph_module.assign_names
    calls = []

    def interrupted(nodes: list, start: int, new: list) -> None:
        calls.append(1)
        if len(calls) == 1:
            real(nodes, start, new)  # all of them named, then Ctrl-C before the graph knows
            raise KeyboardInterrupt

        real(nodes, start, new)

    monkeypatch.setattr(graph_module, "assign_names", interrupted)
    with pytest.raises(KeyboardInterrupt):
        g.nodes
    assert [n.name for n in g.nodes] == expected  # named again from the bases kept aside
    assert len(calls) == 2
    graph_watch.on_close(g, True)

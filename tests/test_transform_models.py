"""Views of graphs recorded from real (small) models: every fixture-zoo model under many
option combinations gives a consistent view; structure checks on typical architectures;
a large graph stays linear."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import torch
from torch import nn

from tensorview import Recorder
from tensorview.drawing import ComputationGraph
from tensorview.graph import Graph, GraphBuilder
from tensorview.transform import View, ViewOptions, build_view

from .fixtures.models import ZOO

COMBOS = [
    dict(zip(("depth", "hide_inner_tensors", "roll", "show_params", "expand_nested", "fold"), values))
    for values in itertools.product((0, 1, 3, 9), (True, False), (False, True), (False, True), (True,), ("auto", True))
]


def record(model: nn.Module, *args: Any, **kwargs: Any) -> ComputationGraph:
    with Recorder(model) as rec:
        model(*args, **kwargs)
    return rec.graph


def check(v: View) -> View:
    v.lint()
    g = v.graph
    # every graph input and output tensor is drawn (outputs of one field as one node)
    drawn = {n.id for n in v.nodes} | {t for n in v.nodes for t in n.group}
    for t in g.inputs + g.outputs:
        node = g.nodes[t]
        while node.id not in drawn and node.copy_of is not None:  # type: ignore[attr-defined]
            node = g.nodes[node.copy_of]  # type: ignore[attr-defined]
        assert node.id in drawn, f"{node!r} not drawn"
    return v


@pytest.mark.parametrize("name", sorted(n for n in ZOO if n != "raises"))
def test_every_zoo_model_gives_consistent_views(name: str) -> None:
    cls, make = ZOO[name]
    model = cls()
    args, kwargs = make()
    cg = record(model, *args, **kwargs)
    for kw in COMBOS:
        check(build_view(cg.graph, ViewOptions(**kw)))  # type: ignore[arg-type]
    for depth, hide, roll in itertools.product((1, 9), (True, False), (False, True)):
        opts = ViewOptions(depth=depth, hide_inner_tensors=hide, roll=roll, fold=True, open_folds=True)
        check(build_view(cg.graph, opts))
    assert cg.source.startswith("digraph")


class Block(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv2(torch.relu(self.bn(self.conv1(x)))) + x)


class TinyResNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.layer1 = nn.Sequential(Block(8), Block(8))
        self.fc = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.layer1(self.stem(x)).mean((2, 3)))


def test_resnet_like_views() -> None:
    cg = record(TinyResNet().eval(), torch.randn(1, 3, 8, 8))
    v = check(build_view(cg.graph, ViewOptions(depth=1)))
    assert v.edge_names() == [
        ("x", "stem", 1),
        ("stem", "layer1", 1),
        ("layer1", "mean", 1),
        ("mean", "fc", 1),
        ("fc", "linear_out", 1),
    ]
    v = check(build_view(cg.graph, ViewOptions(depth=3)))
    kinds = [(n.kind, n.ir.path) for n in v.nodes if n.kind != "tensor"]
    assert ("module", "layer1.0.conv1") in kinds and ("function", "layer1.0") in kinds  # residual add/relu
    names = {v[e.src].ir.path + ">" + v[e.dst].ir.path for e in v.edges}
    assert "stem>layer1.0.conv1" in names  # the block input feeds conv1 ...
    assert any(s.startswith("stem>layer1.0") and s != "stem>layer1.0.conv1" for s in names)  # ... and the skip add
    v = check(build_view(cg.graph, ViewOptions(depth=1, fold=True)))
    assert [n.name for n in v.nodes if n.kind == "module"] == ["stem", "layer1", "fc"]
    v = check(build_view(cg.graph, ViewOptions(depth=2, fold=True)))
    assert v.node("layer1_0").folded == 2
    assert "layer1.0–1: Block ×2" in cg.view(depth=2, fold=True).source
    v = check(build_view(cg.graph, ViewOptions(depth=2, show_params=True)))
    params = [n for n in v.nodes if n.kind == "tensor" and n.ir.role == "parameter"]
    assert {p.ir.source_name for p in params} >= {"stem.weight", "layer1.0.conv1.weight", "fc.bias"}
    assert all(any(e.src == p.id for e in v.edges) for p in params)


class Shared(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(4):
            x = torch.tanh(self.cell(x))
        return x


def test_roll_on_a_recorded_loop() -> None:
    cg = record(Shared(), torch.randn(1, 4))
    v = check(build_view(cg.graph, ViewOptions(roll=True)))
    assert v.node("cell").calls == 4
    assert [n.kind for n in v.nodes].count("module") == 1
    assert any(e.src == e.dst or v[e.dst].kind == "module" and v[e.src].kind == "function" for e in v.edges)


def names(v: View) -> list[tuple[str, str, int]]:
    return [(n.kind, n.ir.name, n.calls) for n in v.nodes]  # type: ignore[union-attr]


class SharedRelu(nn.Module):
    """One ReLU without parameters applied to two inputs, both results returned."""

    def __init__(self) -> None:
        super().__init__()
        self.act = nn.ReLU()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.act(a), self.act(b)


@pytest.mark.parametrize("opened", [True, False])
def test_roll_keeps_every_output_of_a_shared_module(opened: bool) -> None:
    cg = record(SharedRelu(), torch.randn(1, 4), torch.randn(1, 4))
    opts = ViewOptions(roll=True, depth=3, hide_module_functions=not opened)
    v = check(build_view(cg.graph, opts))
    outputs = [n for n in v.nodes if n.id in cg.graph.outputs]
    assert len(outputs) == 2 == len(cg.graph.outputs)  # both results drawn
    rolled = "function" if opened else "module"
    assert [(k, c) for k, _, c in names(v) if k == rolled] == [(rolled, 2)]  # the ReLU, rolled
    edges = sorted((v[e.src].kind, v[e.dst].id in cg.graph.outputs) for e in v.edges)
    assert edges == sorted([("tensor", False), ("tensor", False), (rolled, True), (rolled, True)])


def test_roll_merges_opened_calls_of_a_module_with_parameters() -> None:
    cg = record(Shared(), torch.randn(1, 4))  # one Linear called 4 times
    v = check(build_view(cg.graph, ViewOptions(roll=True, depth=3, hide_module_functions=False)))
    # the four calls' linear is one node; the tanh between them is the root's (not rolled)
    assert names(v) == [
        ("tensor", "x", 1),
        ("function", "linear", 4),
        *[("function", f"tanh{s}", 1) for s in ("", "_1", "_2", "_3")],
        ("tensor", "tanh_3_out", 1),
    ]
    v = check(build_view(cg.graph, ViewOptions(roll=True, depth=3, hide_module_functions=False, show_params=True)))
    params = [n for n in v.nodes if n.kind == "tensor" and n.ir.role == "parameter"]  # type: ignore[union-attr]
    assert len(params) == 2  # weight and bias once, each into the one linear node
    linear = next(n for n in v.nodes if n.kind == "function" and n.ir.op == "linear")  # type: ignore[union-attr]
    assert {(e.src, e.dst) for e in v.edges if e.src in {p.id for p in params}} == {(p.id, linear.id) for p in params}


def test_taps_style_notes_show_on_recorded_nodes() -> None:
    cg = record(TinyResNet().eval(), torch.randn(1, 3, 8, 8))
    cg.annotate(Const("stats", {cg.graph.by_name("stem").id: {"mean": 0.5, "std": 0.25}}))
    assert "stats: mean=0.5 std=0.25" in cg.view(depth=1).source


class Const:
    """An annotation pass with fixed values."""

    def __init__(self, name: str, values: dict[int, Any]) -> None:
        self.name, self.values = name, values

    def __call__(self, graph: Graph) -> dict[int, Any]:
        return self.values


def big_mlp(blocks: int) -> Graph:
    b = GraphBuilder("Model")
    h = b.input()
    with b.module("layers", "Sequential", h, builtin=True) as seq:
        x = h
        for i in range(blocks):
            with b.module(f"layers.{i}", "Block", x) as blk:
                y = b.leaf(f"layers.{i}.fc", "Linear", x)
                blk.returns(b.leaf(f"layers.{i}.act", "ReLU", y))
            x = blk.outputs[0]
        seq.returns(x)
    b.output(x)
    return b.finish(lint=False)


def test_views_scale_linearly() -> None:
    graphs = [big_mlp(1000), big_mlp(2000), big_mlp(4000)]
    for kw in ({"fold": False}, {"fold": False, "hide_inner_tensors": False}):
        views = [check(build_view(g, ViewOptions(**kw))) for g in graphs]  # type: ignore[arg-type]
        n = [len(v.nodes) for v in views]
        e = [len(v.edges) for v in views]
        assert n[2] - n[1] == 2 * (n[1] - n[0]) and e[2] - e[1] == 2 * (e[1] - e[0])  # a fixed number per block
    large = graphs[2]
    folded = build_view(large)
    assert folded.names() == ["x", "layers_0", "relu_out_3999"] and folded.node("layers_0").folded == 4000


def test_200k_node_graph_folds_to_a_small_view() -> None:
    # speed is measured in bench/, not here; this checks the default view stays small
    g = big_mlp(28000)  # 196k nodes, 280k edges
    v = build_view(g)
    assert len(v.nodes) == 3


def test_alternating_layers_fold_as_a_repeated_group() -> None:
    model = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(4, 4), nn.ReLU())], nn.Linear(4, 2))
    cg = record(model, torch.randn(1, 4))
    v = check(build_view(cg.graph, ViewOptions(fold=True)))
    assert [n.name for n in v.nodes if n.kind == "module"] == ["_0", "_12"]
    box = v.node("_0")
    assert box.period == 2 and box.folded == 6 and len(box.members) == 12
    assert "0–11: Linear, ReLU ×6\\n(1, 4) → (1, 4)" in cg.view(fold=True).source
    assert v.edge_names() == [("input", "_0", 1), ("_0", "_12", 1), ("_12", "linear_6_out", 1)]
    assert len(check(build_view(cg.graph, ViewOptions(fold=False))).nodes) == 15


def test_sources_made_in_forward_stay_visible_where_used() -> None:
    from .fixtures.models import CreatesTensors

    class Boxed(nn.Module):
        """Makes a tensor inside a box and uses it only there: hidden at depth 1."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = CreatesTensors()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x) * torch.ones(1)

    cg = record(CreatesTensors(), torch.randn(2, 3))
    v = check(build_view(cg.graph, ViewOptions()))  # hide_inner_tensors=True
    names = [n.name for n in v.nodes if n.kind == "tensor"]
    assert {"arange", "zeros", "tensor"} <= set(names)
    assert ("tensor", "scale", 1) in v.edge_names()
    assert not any(n.ir.role == "intermediate" for n in v.nodes if n.kind == "tensor")

    cg = record(Boxed(), torch.randn(2, 3))
    v = check(build_view(cg.graph, ViewOptions(depth=1)))
    assert [n.name for n in v.nodes if n.kind == "tensor" and n.ir.role == "created"] == ["ones"]

"""Views of hand-built IR graphs: depth, aliases, hidden tensors, params, roll, fold."""

from __future__ import annotations

import pytest

from tensorview.errors import InvalidInputError, InvalidTypeError
from tensorview.graph import Graph, GraphBuilder
from tensorview.render import RENDER_OPTION_NAMES, RenderOptions
from tensorview.transform import View, ViewOptions, build_view


def view(g: Graph, **kw: object) -> View:
    v = build_view(g, ViewOptions(**kw))  # type: ignore[arg-type]
    v.lint()  # no dangling edges, no duplicate pairs, no self-loops unless rolled
    return v


def two_blocks() -> Graph:
    """x -> seq(blk0(fc, relu, +x), blk1(fc, relu, +)) -> id (Identity) -> *2."""
    b = GraphBuilder("Model")
    x = b.input()
    with b.module("seq", "Sequential", x, builtin=True) as seq:
        h = x
        for i in range(2):
            with b.module(f"seq.{i}", "Block", h) as blk:
                y = b.leaf(f"seq.{i}.fc", "Linear", h)
                y = b.leaf(f"seq.{i}.act", "ReLU", y)
                blk.returns(b.op("add", y, h))
            h = blk.outputs[0]
        seq.returns(h)
    with b.module("id", "Identity", seq.outputs[0], builtin=True) as ident:
        ident.returns(seq.outputs[0])
    b.output(b.op("mul", ident.outputs[0]))
    return b.finish()


def test_depth_collapses_opens_and_hides() -> None:
    g = two_blocks()
    assert view(g, depth=0).names() == ["model", "x", "mul_out"]
    assert view(g, depth=0).edge_names() == [("x", "model", 1), ("model", "mul_out", 1)]
    # Sequential calls submodules, so it opens although it is a torch.nn builtin
    assert view(g, depth=1).names() == ["x", "seq", "id", "mul", "mul_out"]
    v = view(g, depth=2)
    assert v.names() == ["x", "seq_0", "seq_1", "id", "mul", "mul_out"]
    assert v.edge_names() == [
        ("x", "seq_0", 1),
        ("seq_0", "seq_1", 1),
        ("seq_1", "id", 1),
        ("id", "mul", 1),
        ("mul", "mul_out", 1),
    ]
    v = view(g, depth=3)
    assert v.names() == ["x", "seq_0_fc", "seq_0_act", "add", "seq_1_fc", "seq_1_act", "add_1", "id", "mul", "mul_out"]
    assert ("x", "add", 1) in v.edge_names() and ("add", "add_1", 1) in v.edge_names()


def test_builtin_leaves_open_only_without_hide_module_functions() -> None:
    g = two_blocks()
    assert "seq_0_fc" in view(g, depth=9).names()
    v = view(g, depth=9, hide_module_functions=False)
    assert "linear" in v.names() and "seq_0_fc" not in v.names()
    assert "id" in v.names()  # nothing recorded inside: always a box


def test_inner_tensors_shown_and_alias_kept_for_a_box() -> None:
    v = view(two_blocks(), depth=2, hide_inner_tensors=False)
    assert v.names() == ["x", "seq_0", "add_out", "seq_1", "add_out_1", "id", "add_out_1_1", "mul", "mul_out"]
    assert v.node("add_out_1_1").ir.copy_of == v.node("add_out_1").id  # Identity's result


def test_alias_of_an_opened_call_is_merged_into_what_it_copies() -> None:
    b = GraphBuilder("Model")
    x = b.input()
    with b.module("skip", "Skip", x) as c:
        b.op("sin", x)  # something inside, so the call opens
        c.returns(x)
    b.output(b.op("cos", c.outputs[0]))
    g = b.finish()
    v = view(g, hide_inner_tensors=False)
    assert v.names() == ["x", "sin", "sin_out", "cos", "cos_out"]
    assert ("x", "cos", 1) in v.edge_names()
    assert view(g, depth=0).edge_names() == [("x", "model", 1), ("model", "cos_out", 1)]


def test_repeated_use_is_counted() -> None:
    b = GraphBuilder("Model")
    x = b.input()
    y = b.op("mul", x, x)
    b.output(b.op("add", y, y))
    g = b.finish()
    assert view(g, hide_inner_tensors=False).edge_names() == [
        ("x", "mul", 2),
        ("mul", "mul_out", 1),
        ("mul_out", "add", 2),
        ("add", "add_out", 1),
    ]
    assert view(g).edge_names() == [("x", "mul", 2), ("mul", "add", 2), ("add", "add_out", 1)]


def test_box_edges_are_counted_once_per_use_not_per_inner_use() -> None:
    b = GraphBuilder("Model")
    x = b.input()
    with b.module("blk", "Block", x) as c:
        y = b.op("mul", x, x)
        c.returns(b.op("add", y, x))
    b.output(c.outputs[0])
    g = b.finish()
    assert view(g, depth=1).edge_names() == [("x", "blk", 1), ("blk", "add_out", 1)]


def test_params_feed_the_box_or_op_that_uses_them() -> None:
    b = GraphBuilder("Model")
    x = b.input()
    with b.module("fc", "Linear", x, builtin=True) as fc:
        w = b.param("fc.weight")
        fc.returns(b.op("linear", x, w))
    w2 = b.param("w2", (4, 2))
    b.output(b.op("matmul", fc.outputs[0], w2, shape=(1, 2)))
    g = b.finish()
    assert "fc_weight" not in view(g).names()
    v = view(g, show_params=True)
    assert v.names() == ["x", "fc", "fc_weight", "w2", "matmul", "matmul_out"]
    assert ("fc_weight", "fc", 1) in v.edge_names() and ("w2", "matmul", 1) in v.edge_names()
    assert ("fc", "matmul", 1) in v.edge_names()  # hidden inner tensor contracted, params stay


def test_result_captured_from_inside_a_box_is_its_result() -> None:
    b = GraphBuilder("Model")
    x = b.input()
    with b.module("enc", "Enc", x) as c:
        h = b.op("sin", x)
        c.returns(b.op("cos", h))
    b.output(b.op("add", c.outputs[0], h))  # h was never returned, still used outside
    g = b.finish()
    v = view(g, depth=1, hide_inner_tensors=False)
    assert ("enc", "sin_out", 1) in v.edge_names() and ("sin_out", "add", 1) in v.edge_names()
    v = view(g, depth=1)
    assert v.edge_names() == [("x", "enc", 1), ("enc", "add", 2), ("add", "add_out", 1)]


def rnn(steps: int = 3) -> Graph:
    b = GraphBuilder("Model")
    h = b.input(name="h")
    for _ in range(steps):
        with b.module("cell", "Cell", h) as c:
            c.returns(b.op("tanh", b.op("linear", h)))
        h = c.outputs[0]
    b.output(h)
    return b.finish()


def test_roll_merges_repeated_calls_with_a_loop() -> None:
    g = rnn(3)
    assert view(g, depth=1).names() == ["h", "cell", "cell_1", "cell_2", "tanh_out_2"]
    v = view(g, depth=1, roll=True)
    assert v.names() == ["h", "cell", "tanh_out_2"]
    assert v.node("cell").calls == 3
    assert v.edge_names() == [("h", "cell", 1), ("cell", "cell", 2), ("cell", "tanh_out_2", 1)]


def test_roll_maps_opened_repeats_to_the_first_call_by_position() -> None:
    v = view(rnn(3), depth=3, roll=True)
    # the steps' inner nodes are the first step's; the model's output is drawn as itself
    assert v.names() == ["h", "linear", "tanh", "tanh_out_2"]
    assert v.node("linear").calls == 3 and v.node("tanh").calls == 3
    assert v.edge_names() == [
        ("h", "linear", 1),
        ("linear", "tanh", 3),
        ("tanh", "linear", 2),
        ("tanh", "tanh_out_2", 1),
    ]


def stack(n: int, cls: str = "Layer", ext: bool = True) -> Graph:
    b = GraphBuilder("Model")
    x = b.input()
    pos = b.input((1, 4), name="pos")
    with b.module("layers", "Stack", x) as st:
        h = x
        for i in range(n):
            args = (h, pos) if ext else (h,)
            with b.module(f"layers.{i}", cls, *args) as layer:
                y = b.leaf(f"layers.{i}.fc", "Linear", h)
                layer.returns(b.op("add", y, pos) if ext else y)
            h = layer.outputs[0]
        st.returns(h)
    b.output(b.op("relu", st.outputs[0]))
    return b.finish()


def test_fold_turns_identical_runs_into_one_box() -> None:
    g = stack(5)
    assert len(view(g, fold=False).nodes) == 14
    v = view(g, fold=True)
    assert v.folded
    assert v.names() == ["x", "pos", "layers_0", "relu", "relu_out"]
    box = v.node("layers_0")
    assert box.folded == 5 and len(box.members) == 5
    assert v.edge_names() == [
        ("x", "layers_0", 1),
        ("pos", "layers_0", 5),
        ("layers_0", "relu", 1),
        ("relu", "relu_out", 1),
    ]
    # "auto" folds runs of 3 or more repeats whatever the size, but not runs of 2
    assert view(g).names() == v.names()
    assert view(stack(2)).names() == view(stack(2), fold=False).names()


def test_fold_auto_folds_big_graphs() -> None:
    v = view(stack(400, ext=False))
    assert v.folded and v.names() == ["x", "pos", "layers_0", "relu", "relu_out"]
    assert v.node("layers_0").folded == 400


def test_fold_needs_the_same_structure_and_a_chain() -> None:
    b = GraphBuilder("Model")
    x = b.input()
    a = b.leaf("a", "Linear", x)
    c = b.leaf("c", "Linear", x)  # not fed by a
    d = b.leaf("d", "Linear", c, shape=(1, 8))  # different shapes
    b.output(a, d)
    g = b.finish()
    assert [n.folded for n in view(g, fold=True).nodes if n.kind == "module"] == [1, 1, 1]


def test_opaque_module_is_a_box_at_any_depth() -> None:
    b = GraphBuilder("Model")
    x = b.input()
    with b.module("scripted", "RecursiveScriptModule", x, opaque=True) as c:
        pass
    y = b.tensor("y", (1, 4), producer=c.id)
    b.output(y)
    g = b.finish()
    assert view(g, depth=9).names() == ["x", "scripted", "y"]


def test_expand_nested_clusters_nest() -> None:
    v = view(two_blocks(), depth=3, expand_nested=True)
    labels = {c.label: c for c in v.clusters}
    assert set(labels) == {"seq: Sequential", "seq.0: Block", "seq.1: Block"}
    assert labels["seq.0: Block"].parent == labels["seq: Sequential"].id
    assert labels["seq: Sequential"].parent is None
    assert v.node("seq_0_fc").cluster == labels["seq.0: Block"].id
    assert v.node("id").cluster is None
    assert view(two_blocks(), depth=3).clusters == []


def test_view_orders_nodes_and_edges_by_execution() -> None:
    v = view(two_blocks(), depth=3)
    assert [n.index for n in v.nodes] == list(range(len(v.nodes)))
    assert [e.order for e in v.edges] == sorted(e.order for e in v.edges)


def test_graph_is_not_changed_by_views() -> None:
    g = two_blocks()
    before = g.to_dict()
    for kw in ({}, {"roll": True}, {"fold": True}, {"show_params": True, "hide_inner_tensors": False}):
        view(g, **kw)
    assert g.to_dict() == before


@pytest.mark.parametrize(
    ("kw", "err", "match"),
    [
        ({"depth": -1}, InvalidInputError, "depth must be >= 0, got -1"),
        ({"depth": "2"}, InvalidTypeError, "depth must be an int"),
        (
            {"graph_dir": "XY"},
            InvalidInputError,
            r"unknown graph_dir: 'XY' \(must be one of \['BT', 'LR', 'RL', 'TB'\]\)",
        ),
        ({"layout": "fast"}, InvalidInputError, r"unknown layout: 'fast'.*'auto', 'exact'"),
        ({"fold": "yes"}, InvalidInputError, r"unknown fold: 'yes'"),
        ({"roll": 1}, InvalidTypeError, "roll must be True or False"),
    ],
)
def test_options_are_validated(kw: dict[str, object], err: type, match: str) -> None:
    options = RenderOptions if set(kw) & RENDER_OPTION_NAMES else ViewOptions
    with pytest.raises(err, match=match):
        options(**kw)  # type: ignore[arg-type]


def test_replace_rejects_unknown_options() -> None:
    with pytest.raises(InvalidInputError, match=r"unknown view option: 'dpeth'.*'depth'"):
        ViewOptions().replace(dpeth=2)
    assert ViewOptions().replace(depth=1).depth == 1

"""Readable pictures of big models (issue 11), checked on a small Llama (6 layers, hidden
64, on meta) and on hand-built graphs: fold at every depth, a fold drawn opened, one node
per returned field, outputs named after what the model returned, input shapes on ops.
The 70B itself is measured in bench/pictures.py."""

from __future__ import annotations

import collections
import dataclasses
import json
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.drawing import ComputationGraph
from tensorview.errors import InvalidInputError, InvalidTypeError
from tensorview.graph import GraphBuilder
from tensorview.render import JsonRenderer
from tensorview.render.labels import node_label
from tensorview.transform import View, ViewOptions, build_view

from .fixtures import needs
from .fixtures.hf import base_model_cache_field, written_for
from .test_transform import rnn, stack, two_blocks
from .test_transform_models import check

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)

LAYERS = 6
SEQ = 16


@pytest.fixture(scope="module")
def llama() -> ComputationGraph:
    transformers = pytest.importorskip("transformers", reason=needs.TRANSFORMERS)
    cfg = transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_hidden_layers=LAYERS,
        vocab_size=100,
    )
    with torch.device("meta"):
        model = transformers.LlamaModel(cfg)
    ids = torch.zeros(1, SEQ, dtype=torch.long, device="meta")
    return tv.draw_graph(model, input_data={"input_ids": ids}, device="meta")


def view(cg: ComputationGraph, **kw: Any) -> View:
    return check(build_view(cg.graph, cg.options.replace(**kw)))


def modules(v: View) -> list[str]:
    return [n.name for n in v.nodes if n.kind == "module"]


# -- 1. fold at every depth -----------------------------------------------------------------
def test_repeated_layers_fold_at_depth_1(llama: ComputationGraph) -> None:
    v = view(llama, depth=1)
    assert v.folded
    assert modules(v) == ["embed_tokens", "rotary_emb", "layers_0", "norm"]
    box = v.node("layers_0")
    assert box.folded == LAYERS and box.members == tuple(llama.graph.by_name(f"layers_{i}").id for i in range(LAYERS))
    assert "layers.0–5: LlamaDecoderLayer ×6" in llama.view(depth=1).source
    unfolded = view(llama, depth=1, fold=False)
    assert not unfolded.folded and len(modules(unfolded)) == 3 + LAYERS
    # and at the default depth: the opened layers fold into the same box
    assert "layers_0" in modules(view(llama)) and view(llama).node("layers_0").folded == LAYERS


def test_auto_fold_leaves_pictures_where_folding_does_not_help() -> None:
    for g in (stack(2), two_blocks()):  # two repeats: drawn in full
        assert build_view(g).names() == build_view(g, ViewOptions(fold=False)).names()
    # repeated calls of one module are a loop (roll draws them), not a run of layers
    assert build_view(rnn(3), ViewOptions(depth=1)).names() == ["h", "cell", "cell_1", "cell_2", "tanh_out_2"]
    assert build_view(rnn(3), ViewOptions(depth=1, fold=True)).folded
    # three repeats fold whatever the size of the view
    assert build_view(stack(3)).names() == ["x", "pos", "layers_0", "relu", "relu_out"]


# -- 2. a fold drawn opened -----------------------------------------------------------------
def test_open_fold_draws_one_layer_inside_the_fold_box(llama: ComputationGraph) -> None:
    v = view(llama, depth=1, open_folds=True)
    (fold,) = v.clusters
    assert fold.label == "layers.0–5: LlamaDecoderLayer ×6" and fold.parent is None
    assert fold.id == llama.graph.by_name("layers_0").id and fold.folded == LAYERS
    assert (fold.period, fold.shown, len(fold.members)) == (1, 0, LAYERS)
    inside = [n for n in v.nodes if n.cluster == fold.id]
    assert [n.ir.path for n in inside if n.kind == "module"] == [
        "layers.0.input_layernorm",
        "layers.0.self_attn",
        "layers.0.post_attention_layernorm",
        "layers.0.mlp",
    ]
    assert [n.ir.op for n in inside if n.kind == "function"] == ["add", "add"]  # the residual adds
    assert not any(n.ir.path.startswith(("layers.1", "layers.5")) for n in v.nodes)  # the other 5 are counted
    edges = {(a, b): c for a, b, c in v.edge_names()}
    assert edges[("embed_tokens", "layers_0_input_layernorm")] == 1  # only the first layer's input
    assert edges[("layers_0_input_layernorm", "layers_0_self_attn")] == 1  # inside: one layer's edges
    assert edges[("rotary_emb", "layers_0_self_attn")] == 2 * LAYERS  # into every layer: added up
    last_add = [n.name for n in inside if n.kind == "function"][-1]
    assert edges[(last_add, "norm")] == 1  # the last layer's output, no loop back into the layer
    assert not any(b == "layers_0_input_layernorm" and a != "embed_tokens" for a, b, _ in v.edge_names())
    src = llama.view(depth=1, open_folds=True).source
    assert 'subgraph cluster_layers_0 {\n\t\tgraph [label="layers.0–5: LlamaDecoderLayer ×6" style=bold' in src
    assert src != llama.view(depth=1).source


def test_open_fold_at_the_default_depth_opens_the_layer_and_nests(llama: ComputationGraph) -> None:
    closed = view(llama)
    opened = view(llama, open_folds=True)
    assert len(opened.nodes) > len(closed.nodes) + 40  # the layer's ops are drawn
    (fold,) = opened.clusters
    inside = {n.ir.path for n in opened.nodes if n.cluster == fold.id}
    assert {"layers.0", "layers.0.self_attn", "layers.0.mlp", "layers.0.self_attn.q_proj"} <= inside
    nested = view(llama, depth=3, open_folds=True, expand_nested=True)
    by_label = {c.label: c for c in nested.clusters}
    fold_c = by_label["layers.0–5: LlamaDecoderLayer ×6"]
    assert by_label["layers.0.self_attn: LlamaAttention"].parent == fold_c.id
    assert nested.node("layers_0_self_attn_q_proj").cluster == by_label["layers.0.self_attn: LlamaAttention"].id


def test_open_folds_picks_the_repeat_shown(llama: ComputationGraph) -> None:
    v = view(llama, depth=1, open_folds=-1)
    (fold,) = v.clusters
    assert fold.shown == LAYERS - 1 and fold.label == "layers.0–5: LlamaDecoderLayer ×6"
    assert {n.ir.path for n in v.nodes if n.cluster == fold.id} >= {"layers.5.self_attn", "layers.5.mlp"}
    assert view(llama, depth=1, open_folds=2).clusters[0].shown == 2
    with pytest.raises(InvalidInputError, match=r"open_folds=6: .*the longest has 6.*from -6 to 5"):
        build_view(llama.graph, ViewOptions(depth=1, open_folds=6))
    with pytest.raises(InvalidTypeError, match="open_folds must be True, False or the index"):
        ViewOptions(open_folds="first")  # type: ignore[arg-type]


def test_open_fold_of_a_repeated_group() -> None:
    model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(4, 4), nn.ReLU())], nn.Linear(4, 2))
    with tv.Recorder(model) as rec:
        model(torch.randn(1, 4))
    v = check(build_view(rec.graph.graph, ViewOptions(open_folds=True)))
    (fold,) = v.clusters
    assert fold.label == "0–7: Linear, ReLU ×4" and fold.period == 2
    assert [(n.name, n.cluster) for n in v.nodes if n.kind == "module"] == [
        ("_0", fold.id),
        ("_1", fold.id),
        ("_8", None),
    ]
    assert v.edge_names() == [("input", "_0", 1), ("_0", "_1", 1), ("_1", "_8", 1), ("_8", "linear_4_out", 1)]
    assert node_label(v, v.node("linear_4_out")) == "output\n(1, 2)"


def test_open_fold_in_the_view_json(llama: ComputationGraph) -> None:
    data = json.loads(JsonRenderer().render(build_view(llama.graph, ViewOptions(depth=1, open_folds=True))))
    (fold,) = data["clusters"]
    assert fold["members"] == list(build_view(llama.graph, ViewOptions(depth=1)).node("layers_0").members)
    assert (fold["period"], fold["shown"], fold["label"]) == (1, 0, "layers.0–5: LlamaDecoderLayer ×6")
    assert data["graph"]["options"]["open_folds"] is True


# -- 3. one node per returned field ---------------------------------------------------------
def test_kv_cache_outputs_are_one_node(llama: ComputationGraph) -> None:
    g = llama.graph
    field = base_model_cache_field()  # `cache` from transformers 5.24, `past_key_values` before
    kv = [g.tensor(i) for i in g.outputs if g.tensor(i).field == field]
    assert len(kv) == 2 * LAYERS
    assert [t.source_name for t in kv[:3]] == [
        f"{field}.layers[0].keys",
        f"{field}.layers[0].values",
        f"{field}.layers[1].keys",
    ]
    for kw in ({}, {"depth": 1}, {"depth": 1, "open_folds": True}, {"fold": False, "depth": 9}):
        v = view(llama, **kw)
        (node,) = [n for n in v.nodes if n.group]
        assert node.group == tuple(t.id for t in kv) and node.is_output and node.cluster is None
        outputs = [n for n in v.nodes if n.is_output]
        assert len(outputs) == 2  # last_hidden_state and the KV cache
        assert sum(e.count for e in v.edges if e.dst == node.id) == 2 * LAYERS
        assert not any(e.src == node.id for e in v.edges)  # each layer's cache feeds its attention directly
    src = llama.view(depth=1).source
    assert f'label="{field} ({LAYERS} × 2 tensors)\\n(1, 2, {SEQ}, {SEQ})"' in src
    assert 'layers_0 -> cat_3_out [label="×12"]' in src
    assert "cat_4_out" not in src


def test_outputs_of_one_field_group_in_hand_built_graphs() -> None:
    b = GraphBuilder("Model")
    x = b.input()
    a = b.op("relu", x)
    c = b.op("tanh", x, shape=(1, 8))
    b.output(a, c, field="parts")
    v = check(build_view(b.finish()))
    (node,) = [n for n in v.nodes if n.group]
    assert v.names() == ["x", "relu", "relu_out", "tanh"] and node.name == "relu_out"
    assert node_label(v, node) == "parts (2 tensors)\n(1, 4), (1, 8)"
    assert v.edge_names() == [("x", "relu", 1), ("relu", "relu_out", 1), ("x", "tanh", 1), ("tanh", "relu_out", 1)]
    data = json.loads(JsonRenderer().render(v))
    assert [n.get("group") for n in data["nodes"] if n["name"] == "relu_out"] == [[a, c]]


# -- 4. outputs named after what the model returned -------------------------------------------
Pair = collections.namedtuple("Pair", "first second")


@dataclasses.dataclass
class Out:
    logits: torch.Tensor
    aux: list[torch.Tensor]


class Returns(nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> Any:
        y = self.fc(x)
        z = y.relu()
        return {
            "tensor": lambda: y,
            "tuple": lambda: (y, z),
            "dict": lambda: {"logits": y, "hidden": (z, z.tanh())},
            "namedtuple": lambda: Pair(y, z),
            "dataclass": lambda: Out(y, [z, z.tanh(), z.sigmoid()]),
        }[self.kind]()


@pytest.mark.parametrize(
    ("kind", "labels"),
    [
        ("tensor", ["output"]),
        ("tuple", ["output[0]", "output[1]"]),
        ("dict", ["logits", "hidden (2 tensors)"]),
        ("namedtuple", ["first", "second"]),
        ("dataclass", ["logits", "aux (3 tensors)"]),
    ],
)
def test_output_labels_name_what_forward_returned(kind: str, labels: list[str]) -> None:
    cg = tv.draw_graph(Returns(kind), input_size=(1, 4))
    v = cg.get_view()
    outs = [n for n in v.nodes if n.is_output]
    assert [node_label(v, n).split("\n")[0] for n in outs] == labels
    assert outs[0].name == "linear_out"  # node names (DOT ids) are unchanged
    assert cg.graph.tensor(outs[0].id).role == "output"


def test_llama_output_names(llama: ComputationGraph) -> None:
    first = llama.graph.tensor(llama.graph.outputs[0])
    assert (first.source_name, first.field) == ("last_hidden_state", "last_hidden_state")
    assert 'label="last_hidden_state\\n(1, 16, 64)"' in llama.source
    assert llama.graph.to_dict()["nodes"][first.id]["source_name"] == "last_hidden_state"


def test_returned_input_keeps_its_argument_name() -> None:
    class Echo(nn.Module):
        def forward(self, x: torch.Tensor) -> Any:
            return {"same": x, "double": x * 2}

    cg = tv.draw_graph(Echo(), input_size=(1, 4))
    g = cg.graph
    same = g.tensor(g.outputs[0])  # the root call's pass-through result, merged into x
    assert (same.source_name, same.copy_of) == ("same", g.inputs[0])
    assert g.tensor(g.inputs[0]).source_name == "x"
    v = cg.get_view()
    assert [(node_label(v, n).split("\n")[0], n.is_input, n.is_output) for n in v.nodes if n.kind == "tensor"] == [
        ("x", True, True),
        ("double", False, True),
    ]


# -- 5. input shapes on op labels ---------------------------------------------------------------
def test_op_labels_show_input_shapes_when_they_differ() -> None:
    b = GraphBuilder("Model")
    x = b.input((1, 8))
    w = b.param("w", (16, 8))
    h = b.op("linear", x, w, shape=(1, 16))
    y = b.op("add", h, h)
    m = b.op("mean", y, shape=(1, 1))
    b.output(b.op("to", m, shape=(1, 1)))
    parts = [b.op("relu", x) for _ in range(5)]
    b.output(b.op("cat", *parts, shape=(5, 8)))
    b.output(b.op("view", b.op("cat", x, m, shape=(1, 9)), shape=(3, 3)))
    b.output(b.op("reshape", b.input((11, 12, 13, 14, 15, 16, 17), name="big"), shape=(1, 1, 1, 1, 1, 1, 1)))
    v = build_view(b.finish(), ViewOptions(show_params=True))
    label = {n.name: node_label(v, n) for n in v.nodes}
    assert label["linear"] == "linear\n(1, 8) → (1, 16)"  # the weight (a parameter) is left out
    assert label["add"] == "add\n→ (1, 16)"  # same shapes in and out: only the result
    assert label["mean"] == "mean\n(1, 16) → (1, 1)"
    assert label["to"] == "to\n→ (1, 1)"
    assert label["cat"] == "cat\n(1, 8), (1, 8), …+3 → (5, 8)"  # at most two input shapes
    assert label["cat_1"] == "cat\n(1, 8), (1, 1) → (1, 9)"
    assert label["reshape"] == "reshape\n(11, 12, 13, 14, 15, 16, 17)\n→ (1, 1, 1, 1, 1, 1, 1)"  # a long line splits


def test_llama_op_labels(llama: ComputationGraph) -> None:
    src = llama.view(depth=9, hide_module_functions=False, open_folds=True).source
    assert 'label="linear\\n(1, 16, 64) → (1, 16, 128)"' in src  # gate/up projection
    assert 'label="linear\\n(1, 16, 128) → (1, 16, 64)"' in src  # down projection


def test_output_made_in_the_last_repeat_is_drawn_outside_the_opened_fold() -> None:
    b = GraphBuilder("Model")
    h = b.input()
    for i in range(4):
        with b.module(f"layers.{i}", "Block", h) as blk:
            blk.returns(b.op("tanh", b.op("linear", h)))
        h = blk.outputs[0]
    b.output(h)  # the last block's result, made inside it
    g = b.finish()
    v = check(build_view(g, ViewOptions(open_folds=True)))
    (fold,) = v.clusters
    out = v.node("tanh_out_3")  # itself, not the first block's tanh_out
    assert out.is_output and out.cluster is None
    assert [(n.name, n.cluster) for n in v.nodes] == [
        ("x", None),
        ("linear", fold.id),
        ("tanh", fold.id),
        ("tanh_out_3", None),
    ]
    assert v.edge_names() == [("x", "linear", 1), ("linear", "tanh", 1), ("tanh", "tanh_out_3", 1)]
    v = check(build_view(g, ViewOptions(open_folds=-1, expand_nested=True)))
    assert [n.name for n in v.nodes] == ["x", "linear_3", "tanh_3", "tanh_out_3"]
    (fold,) = v.clusters
    assert fold.shown == 3 and v.node("tanh_out_3").cluster == fold.id  # the repeat drawn made it

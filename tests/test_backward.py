"""``tv.autograd_graph``: the autograd graph of a tensor, checked against torchviz's
``make_dot`` (the reference picture) on the CPU and on meta."""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.graph import FunctionNode, TensorNode

from .fixtures import needs
from .fixtures.hf import written_for
from .test_html import unpack

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)

torchviz = pytest.importorskip("torchviz", reason=needs.TORCHVIZ)


def torchviz_nodes(out: Any, params: dict[str, torch.Tensor], **kw: Any) -> tuple[Counter[str], Counter[str]]:
    """``(backward node names, leaf names)`` of torchviz's picture, with their counts, from
    its DOT source (a backward node has no fillcolor; a leaf is lightblue)."""
    fns: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    with warnings.catch_warnings():  # torchviz 0.0.3 compares versions with distutils
        warnings.simplefilter("ignore", DeprecationWarning)
        dot = torchviz.make_dot(out, params=params, **kw)
    for line in dot.body:
        m = re.match(r"\s*\d+ \[label=(\"[^\"]*\"|\S+?)( fillcolor=(\w+))?\]", line)
        if m is None:
            continue
        label = m.group(1).strip('"')
        if m.group(3) is None:
            fns[label.split("\\n")[0]] += 1
        elif m.group(3) == "lightblue":
            leaves[label.split("\n")[0]] += 1
    return fns, leaves


def our_nodes(g: tv.ComputationGraph) -> tuple[Counter[str], Counter[str]]:
    fns = Counter(n.op for n in g.graph if isinstance(n, FunctionNode))
    leaves = Counter(
        n.source_name or ""
        for n in g.graph
        if isinstance(n, TensorNode) and n.role in ("parameter", "input") and g.graph.successors(n.id)
    )
    return fns, leaves


def mlp() -> tuple[nn.Module, Callable[[nn.Module, str], torch.Tensor]]:
    model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Dropout(0.1), nn.Linear(8, 3))
    return model, lambda m, dev: m(torch.randn(4, 6, device=dev)).log_softmax(-1).mean()


def cnn() -> tuple[nn.Module, Callable[[nn.Module, str], torch.Tensor]]:
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 2)
    )
    return model, lambda m, dev: m(torch.randn(2, 3, 8, 8, device=dev)).sum()


def lstm() -> tuple[nn.Module, Callable[[nn.Module, str], torch.Tensor]]:
    model = nn.LSTM(5, 7, num_layers=2, batch_first=True)
    return model, lambda m, dev: m(torch.randn(2, 4, 5, device=dev))[0].pow(2).sum()


def llama() -> tuple[nn.Module, Callable[[nn.Module, str], torch.Tensor]]:
    transformers = pytest.importorskip("transformers", reason=needs.TRANSFORMERS)
    cfg = transformers.LlamaConfig(
        hidden_size=32,
        intermediate_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_hidden_layers=2,
        vocab_size=50,
    )
    model = transformers.LlamaForCausalLM(cfg)
    return model, lambda m, dev: m(input_ids=torch.zeros(1, 6, dtype=torch.long, device=dev), use_cache=True).logits


MODELS = {"mlp": mlp, "cnn": cnn, "lstm": lstm, "llama": llama}


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_backward_nodes_equal_torchviz(name: str, device: str) -> None:
    torch.manual_seed(0)
    model, run = MODELS[name]()
    model = model.to(device).train()
    out = run(model, device)
    params = dict(model.named_parameters())
    expected = torchviz_nodes(out, params)
    g = tv.autograd_graph(out, params)
    assert our_nodes(g) == expected
    assert sum(expected[0].values()) > 5  # a real graph, not an empty one
    assert expected[1]  # leaves named after parameters
    g.graph.lint()


def test_parameter_leaves_and_edges_follow_the_autograd_graph() -> None:
    model = nn.Linear(3, 2)
    out = model(torch.randn(4, 3)).sum()
    g = tv.autograd_graph(out, model.named_parameters())
    v = g.get_view()
    names = {n.name for n in v.nodes}
    assert {"weight", "bias", "AddmmBackward0", "TBackward0", "SumBackward0"} <= names
    edges = {(a, b) for a, b, _ in v.edge_names()}
    assert ("weight", "AccumulateGrad_1") in edges or ("weight", "AccumulateGrad") in edges
    assert ("AddmmBackward0", "SumBackward0") in edges
    assert ("TBackward0", "AddmmBackward0") in edges


def test_saved_tensors_shapes_and_bytes_equal_saved_tensors_hooks() -> None:
    model = nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Linear(6, 2))
    packed: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        packed.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(torch.randn(3, 5)).sum()
    g = tv.autograd_graph(out, dict(model.named_parameters()), show_saved=True)
    saved = g.graph.annotations.layer("saved_bytes")
    expected = sum(t.untyped_storage().nbytes() for t in packed)
    assert sum(saved.values()) == expected
    shapes = sorted(g.graph.tensor(i).shape for i in saved)
    assert shapes == sorted(tuple(t.shape) for t in packed)
    assert "saved_bytes: " in g.source
    without = tv.autograd_graph(out, dict(model.named_parameters()))
    assert not without.graph.annotations.layer("saved_bytes")


def test_show_attrs_lists_the_saved_values() -> None:
    x = torch.randn(3, 4, requires_grad=True)
    out = x.sum(dim=1, keepdim=True).mean()
    g = tv.autograd_graph(out, show_attrs=True)
    attrs = g.graph.annotations.layer("attrs")
    (sum_node,) = [n for n in g.graph.functions() if n.op == "SumBackward1"]
    assert attrs[sum_node.id]["keepdim"] is True
    assert "keepdim=True" in g.source


def test_a_custom_function_and_its_saved_tensors() -> None:
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = torch.randn(2, 3, requires_grad=True)
    out = Square.apply(x).exp()
    g = tv.autograd_graph(out, {"x": x})
    assert our_nodes(g) == torchviz_nodes(out, {"x": x})
    assert "SquareBackward" in {n.op for n in g.graph.functions()}
    saved = g.graph.annotations.layer("saved_bytes")
    assert list(saved.values()) == [24]


def test_integer_and_no_grad_paths_have_no_backward_nodes() -> None:
    x = torch.randn(4, 3, requires_grad=True)
    idx = x.argmax(dim=1)  # integer: no grad_fn
    with torch.no_grad():
        scale = x.norm()
    out = x[torch.arange(4), idx] * scale
    g = tv.autograd_graph(out, {"x": x})
    ops = Counter(n.op for n in g.graph.functions())
    assert ops == torchviz_nodes(out, {"x": x})[0]
    assert not any("Norm" in op or "Argmax" in op for op in ops)
    plain = tv.autograd_graph(torch.arange(3))
    assert not list(plain.graph.functions())
    assert [n.role for n in plain.graph.tensors()] == ["constant"]


def test_several_outputs_and_a_deep_chain_need_no_recursion() -> None:
    x = torch.randn(3, requires_grad=True)
    y = x
    for _ in range(5000):  # deeper than Python's recursion limit allows a recursive walk
        y = y * 1.0
    a, b = y.sin(), y.cos()
    g = tv.autograd_graph((a, b), {"x": x})
    ops = Counter(n.op for n in g.graph.functions())
    assert ops == Counter({"MulBackward0": 5000, "SinBackward0": 1, "CosBackward0": 1, "AccumulateGrad": 1})
    assert [g.graph.tensor(i).source_name for i in g.graph.outputs] == ["output[0]", "output[1]"]


def test_bad_arguments_name_the_value() -> None:
    with pytest.raises(tv.InvalidTypeError, match="tensor or a tuple/list of tensors, got str"):
        tv.autograd_graph("y")
    with pytest.raises(tv.InvalidTypeError, match="params must map names to tensors"):
        tv.autograd_graph(torch.ones(1, requires_grad=True).sum(), {"w": 3})


def test_hostile_parameter_names_are_escaped() -> None:
    w = nn.Parameter(torch.randn(2))
    out = (w * 2).sum()
    g = tv.autograd_graph(out, {'<b>"evil"</b>': w})
    assert '<b>"evil"</b>' not in g.source
    assert '<b>"evil"</b>' not in g.svg()
    assert "&lt;b&gt;&quot;evil&quot;&lt;/b&gt;" in g.svg()


# -- the joint graph: draw_graph(backward=True) ----------------------------------------------
def backward_ops(g: tv.ComputationGraph) -> Counter[str]:
    marks = g.graph.annotations.layer("backward")
    return Counter(n.op for n in g.graph.functions() if marks.get(n.id) == "node")


def plain_outputs(model: nn.Module, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, ...]:
    out = model(*args, **kwargs)
    return tuple(t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor))


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_joint_graph_has_torchvizs_backward_nodes_in_module_boxes(name: str, device: str) -> None:
    torch.manual_seed(0)
    model, _ = MODELS[name]()
    model.train()
    shape = (4, 6) if name == "mlp" else (2, 3, 8, 8)
    g = tv.draw_graph(model, input_size=shape, device=device, mode="train", backward=True)
    x = torch.randn(shape)
    expected, _ = torchviz_nodes(plain_outputs(model, x), dict(model.named_parameters()))
    assert backward_ops(g) == expected
    ir = g.graph
    marks = ir.annotations.layer("backward")
    # every autograd node sits in the module call of the forward op that made it
    for f in ir.functions():
        if marks.get(f.id) == "node" and f.op in ("AddmmBackward0", "ConvolutionBackward0", "NativeBatchNormBackward0"):
            assert ir.module(f.parent).cls_name in ("Linear", "Conv2d", "BatchNorm2d"), f
    # AccumulateGrad reads its parameter node
    for f in ir.functions():
        if f.op == "AccumulateGrad":
            (p,) = [i for i in ir.predecessors(f.id) if ir.tensor(i).is_param]
            assert ir.tensor(p).path == f.path
            assert [marks.get(i) for i in ir.predecessors(f.id) if i != p] == ["grad"]
    # gradients run in reverse: the output feeds the last op's autograd node
    (out,) = ir.outputs
    assert any(marks.get(s) == "node" for s in ir.successors(out))
    alone = g.backward_view(backward_only=True)
    assert backward_ops(alone) == expected
    assert all(alone.graph.annotations.layer("backward").get(f.id) == "node" for f in alone.graph.functions())
    assert {m.path for m in alone.graph.modules()} == {m.path for m in ir.modules()}
    # the forward ops are unchanged
    forward = tv.draw_graph(model, input_size=shape, device=device, mode="train")
    assert Counter(f.op for f in ir.functions() if f.id not in marks) == Counter(
        f.op for f in forward.graph.functions()
    )


def test_joint_graph_folds_and_collapses_like_the_forward() -> None:
    model = nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(3)])
    g = tv.draw_graph(model, input_size=(2, 8), backward=True)
    names = [n.name for n in g.view(depth=1, fold=False).get_view().nodes]
    assert not any("Backward" in n or "AccumulateGrad" in n for n in names)  # inside the boxes
    opened = [n.name for n in g.view(depth=3, hide_module_functions=False, fold=False).get_view().nodes]
    assert sum("AddmmBackward0" in n for n in opened) == 3
    assert sum("TanhBackward0" in n for n in opened) == 3


def test_integer_paths_have_no_backward_nodes_in_the_joint_graph() -> None:
    model = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 2))
    ids = torch.tensor([[1, 2, 3]])
    g = tv.draw_graph(model, input_data=ids, backward=True)
    ops = backward_ops(g)
    assert ops == torchviz_nodes(plain_outputs(model, ids), dict(model.named_parameters()))[0]
    assert ops["EmbeddingBackward0"] == 1
    assert not any("Backward" in f.op for f in g.graph.functions() if f.op == "embedding")


def test_backward_view_needs_a_backward_recording() -> None:
    g = tv.draw_graph(nn.Linear(2, 2), input_size=(1, 2))
    with pytest.raises(tv.InvalidInputError, match=r"backward=True"):
        g.backward_view()
    with pytest.raises(tv.InvalidTypeError, match="backward must be True or False, got 1"):
        tv.draw_graph(nn.Linear(2, 2), input_size=(1, 2), backward=1)
    model = nn.Linear(2, 2)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tv.draw_graph(model, input_size=(1, 2), backward=True)
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_json_version_3_marks_the_backward_pass(tmp_path: Any) -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    g = tv.draw_graph(model, input_size=(2, 3), backward=True)
    data = g.to_json()
    assert data["schema_version"] == 3 and data["graph"]["backward"] is True
    by_op = {n["op"]: n for n in data["nodes"] if n["kind"] == "function"}
    assert by_op["AddmmBackward0"]["notes"]["backward"] == "node"
    assert by_op["ReluBackward0"]["notes"]["saved_bytes"] == 2 * 4 * 4
    assert "backward" not in by_op["linear"].get("notes", {})
    assert tv.draw_graph(model, input_size=(2, 3)).to_json()["graph"]["backward"] is False
    assert tv.autograd_graph(model(torch.randn(2, 3)).sum()).to_json()["graph"]["backward"] is True
    page = Path(g.save(tmp_path / "g.html")).read_text()
    (packed,) = re.findall(r"<!--tv:data:\n(.*?)-->", page, re.S)  # the viewer's data (render/html.py)
    assert "AddmmBackward0" in unpack(packed)


# -- checkpointing, double backward, hooks, retain_graph, non-differentiable outputs ---------
class Checkpointed(nn.Module):
    def __init__(self, reentrant: bool) -> None:
        super().__init__()
        self.a, self.b, self.reentrant = nn.Linear(4, 4), nn.Linear(4, 4), reentrant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = torch.utils.checkpoint.checkpoint(self.inner, x, use_reentrant=self.reentrant)
        return self.b(inner)

    def inner(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(x).tanh()


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpointed_ops_are_marked_recomputed(reentrant: bool) -> None:
    model = Checkpointed(reentrant)
    x = torch.randn(2, 4, requires_grad=True)
    g = tv.draw_graph(model, input_data=x, backward=True)
    recomputed = g.graph.annotations.layer("recomputed")
    assert sorted((g.graph[i].op, g.graph[i].path) for i in recomputed) == [("linear", "a"), ("tanh", "")]
    assert "recomputed: checkpoint" in g.view(hide_module_functions=False).source
    expected = torchviz_nodes(plain_outputs(model, x), dict(model.named_parameters()))[0]
    assert backward_ops(g) == expected
    assert ("CheckpointFunctionBackward" in expected) == reentrant


def test_double_backward_graph_of_a_gradient() -> None:
    x = torch.randn(3, requires_grad=True)
    (gx,) = torch.autograd.grad((x**3).sum(), x, create_graph=True)
    out = gx.sum()
    g = tv.autograd_graph(out, {"x": x})
    assert our_nodes(g) == torchviz_nodes(out, {"x": x})
    assert {"PowBackward0", "MulBackward0"} <= {f.op for f in g.graph.functions()}


def test_tensor_hooks_and_retain_graph_change_nothing_drawn() -> None:
    x = torch.randn(3, requires_grad=True)
    z = x * 2
    z.register_hook(lambda grad: grad * 2)
    out = (z.exp()).sum()
    before = tv.autograd_graph(out, {"x": x}, show_saved=True)
    assert our_nodes(before) == torchviz_nodes(out, {"x": x})
    out.backward(retain_graph=True)
    kept = tv.autograd_graph(out, {"x": x}, show_saved=True)
    assert kept.graph.annotations.layer("saved_bytes") == before.graph.annotations.layer("saved_bytes")
    out.backward()  # frees what was saved: the nodes are still drawn, without saved tensors
    freed = tv.autograd_graph(out, {"x": x}, show_saved=True)
    assert our_nodes(freed) == our_nodes(before)
    assert not freed.graph.annotations.layer("saved_bytes")


def test_non_differentiable_outputs_have_no_backward_nodes() -> None:
    class MaxAndIndex(nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            values, indices = x.max(dim=1)
            return values, indices

    model = MaxAndIndex()
    x = torch.randn(3, 4, requires_grad=True)
    g = tv.draw_graph(model, input_data=x, backward=True)
    assert backward_ops(g) == torchviz_nodes(plain_outputs(model, x), {"x": x})[0]
    ir = g.graph
    indices = [o for o in ir.outputs if ir.tensor(o).dtype == "int64"]
    assert len(indices) == 1
    assert not [s for s in ir.successors(indices[0]) if ir.annotations.layer("backward").get(s)]


def test_fake_and_meta_draw_the_same_backward_as_the_cpu() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    drawn = {d: tv.draw_graph(model, input_size=(2, 3), backward=True, device=d) for d in ("cpu", "meta", "fake")}
    sources = {d: g.view(hide_module_functions=False).source for d, g in drawn.items()}
    assert sources["cpu"] == sources["meta"].replace("meta", "cpu") == sources["fake"].replace("meta", "cpu")
    assert {d: sorted(g.graph.annotations.layer("saved_bytes").values()) for d, g in drawn.items()} == {
        d: [24, 32, 64] for d in drawn
    }


def recurrent_and_attention_models() -> dict[str, tuple[nn.Module, Any]]:
    torch.manual_seed(0)
    models: dict[str, tuple[nn.Module, Any]] = {
        "lstm": (nn.LSTM(5, 7, num_layers=2, batch_first=True), torch.randn(2, 4, 5)),
        "gru": (nn.GRU(4, 4), torch.randn(3, 2, 4)),
        "encoder_layer": (nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dropout=0.0), torch.randn(2, 5, 8)),
    }
    return models


@pytest.mark.parametrize("name", ["lstm", "gru", "encoder_layer", "llama"])
def test_joint_graph_equals_torchviz_for_recurrent_and_attention_models(name: str) -> None:
    if name == "llama":
        model, _ = llama()
        x: Any = {"input_ids": torch.zeros(1, 6, dtype=torch.long)}
    else:
        model, x = recurrent_and_attention_models()[name]
    model.train()
    g = tv.draw_graph(model, input_data=x, mode="train", backward=True)
    out = plain_outputs(model, **x) if isinstance(x, dict) else plain_outputs(model, x)
    grads = tuple(t for t in out if t.grad_fn is not None)
    assert backward_ops(g) == torchviz_nodes(grads, dict(model.named_parameters()))[0]


def test_attention_on_meta_has_the_cpus_autograd_node() -> None:
    """On meta the probe runs attention through the CPU's fused kernel (cost/memory.py), so
    the joint graph has the CPU's attention backward node, not the math path's."""
    model, x = recurrent_and_attention_models()["encoder_layer"]
    model.train()
    on_cpu = backward_ops(tv.draw_graph(model, input_data=x, mode="train", backward=True))
    on_meta = backward_ops(tv.draw_graph(model, input_data=x, mode="train", backward=True, device="meta"))
    assert on_meta == on_cpu
    assert any("ScaledDotProduct" in op for op in on_meta)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_run_backward_times_every_autograd_node_and_writes_no_grad(device: str) -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    g = tv.draw_graph(model, input_size=(2, 3), backward=True, run_backward=True, device=device)
    times = g.graph.annotations.layer("backward_us")
    marks = g.graph.annotations.layer("backward")
    timed = {f.id for f in g.graph.functions() if marks.get(f.id) == "node" and f.op != "AccumulateGrad"}
    assert set(times) == timed and len(timed) == 5
    assert all(v > 0 for v in times.values())
    assert g.graph.annotations.layer("saved_bytes")  # read before the backward freed them
    assert all(p.grad is None for p in model.parameters())
    plain = tv.draw_graph(model, input_size=(2, 3), backward=True)
    assert not plain.graph.annotations.layer("backward_us")
    with pytest.raises(tv.InvalidInputError, match="run_backward=True runs the backward drawn by backward=True"):
        tv.draw_graph(model, input_size=(2, 3), run_backward=True)


def test_recorder_with_backward_joins_what_the_call_returned() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    x = torch.randn(2, 3)
    with tv.Recorder(model, backward=True) as rec:
        out = model(x)
    joint = rec.with_backward(out)
    # a plain run: the recorded output's graph also holds the recorder's boundary aliases
    expected = torchviz_nodes(model(x), dict(model.named_parameters()))[0]
    assert backward_ops(joint) == expected
    assert backward_ops(joint.backward_view(backward_only=True)) == expected
    timed = rec.with_backward(out, run_backward=True)
    assert len(timed.graph.annotations.layer("backward_us")) == 5
    assert all(p.grad is None for p in model.parameters())
    with tv.Recorder(model) as plain:
        model(torch.randn(2, 3))
    with pytest.raises(tv.InvalidInputError, match=r"tv.Recorder\(model, backward=True\)"):
        plain.with_backward(out)


def test_the_joint_graph_keeps_no_autograd_node_alive_and_draws_the_backward_alone_when_asked() -> None:
    """The graph keeps integers and strings only: what the forward saved for backward is
    freed with the output, and the backward pass alone is made on first use."""
    import gc
    import weakref

    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    x = torch.randn(2, 3)
    with tv.Recorder(model, backward=True) as rec:
        out = model(x)
    joint = rec.with_backward(out)
    pair = joint.backward
    assert pair is not None and list(pair._made) == [False]  # type: ignore[attr-defined]
    saved = weakref.ref(x)  # saved by the first AddmmBackward0
    del out, x
    gc.collect()
    assert saved() is None  # nothing in the recording held the autograd graph
    alone = joint.backward_view(backward_only=True)
    assert backward_ops(alone) == Counter(
        {"AddmmBackward0": 2, "TBackward0": 2, "TanhBackward0": 1, "AccumulateGrad": 4}
    )
    assert joint.backward_view(backward_only=True).graph is alone.graph  # made once

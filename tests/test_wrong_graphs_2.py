"""Classes of wrong graphs (issue 21, part A, second half): ``torch.cond``, ``Tensor.set_``,
FX GraphModules, a module returning its own parameter, module conversions inside forward,
and how the graph says where it knows it may be incomplete (``Graph.warnings``)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.graph import WARNING_LAYER, FunctionNode, Graph, GraphBuilder, TensorNode


def record(model: nn.Module, *args: Any) -> tuple[Any, Graph]:
    with tv.Recorder(model) as rec:
        out = model(*args)
    return out, rec.graph.graph


def ops(g: Graph) -> list[str]:
    return [n.op for n in g.functions()]


def producer_op(g: Graph, tensor_id: int) -> str | None:
    p = g.producer(tensor_id)
    node = None if p is None else g.nodes[p]
    return node.op if isinstance(node, FunctionNode) else None


def args_of(g: Graph, name: str) -> list[str]:
    """The names (source names for parameters) of the tensors op ``name`` reads."""
    node = g.by_name(name)
    return [t.source_name or t.name for t in (g.tensor(i) for i in g.input_tensors(node.id))]


# -- Graph.warnings ------------------------------------------------------------------------


def test_warnings_are_listed_once_put_on_nodes_and_drawn_in_the_picture() -> None:
    b = GraphBuilder("Net")
    x = b.input((2,))
    y = b.op("relu", x, shape=(2,))
    b.output(y)
    g = b.finish()
    g.warn("storage of x swapped", x)
    g.warn("storage of x swapped", x)
    g.warn("leaf internals not traced")
    assert g.warnings == ["storage of x swapped", "leaf internals not traced"]
    assert g.annotations.layer(WARNING_LAYER) == {x: "storage of x swapped"}
    assert g.to_dict()["graph"]["warnings"] == g.warnings
    drawn = tv.ComputationGraph(g)
    source = drawn.source
    assert "⚠ storage of x swapped" in source and "⚠ leaf internals not traced" in source
    assert "warning: storage of x swapped" in source  # on the node's label too
    assert "warning: leaf internals not traced" in repr(drawn)


# -- torch.cond ----------------------------------------------------------------------------


class Cond(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.randn(4))
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, lambda x: x * self.scale, lambda x: self.lin(x), (x,))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_with_a_branch_reading_a_parameter_records_with_grad_on(sign: float) -> None:
    model = Cond()
    x = (torch.rand(2, 4) + 0.1) * sign
    expected = model(x)
    with torch.enable_grad():
        out, g = record(model, x.requires_grad_())
    torch.testing.assert_close(out, expected)
    # the branch taken is recorded as a Python ``if`` would be: its ops read the parameters
    if sign > 0:
        assert ops(g) == ["sum", "gt", "mul"]
        assert args_of(g, "mul") == ["x", "scale"]
    else:
        assert ops(g) == ["sum", "gt", "linear"]
        assert args_of(g, "linear") == ["x", "lin.weight", "lin.bias"]
        assert [m.path for m in g.modules()] == ["", "lin"]
    assert g.outputs and producer_op(g, g.outputs[0]) == ("mul" if sign > 0 else "linear")


def test_cond_in_draw_graph_draws_the_branch_taken() -> None:
    g = tv.draw_graph(Cond(), input_data=torch.ones(2, 4)).graph
    assert ops(g) == ["sum", "gt", "mul"]
    assert [n.source_name for n in g.tensors() if n.is_param] == ["scale"]
    # on meta, a predicate computed from inputs given with data has its value (values.py)
    g = tv.draw_graph(Cond(), input_data=-torch.ones(2, 4), device="meta").graph
    assert ops(g) == ["sum", "gt", "linear"]


def only(items: list[Any]) -> Any:
    assert len(items) == 1, items
    return items[0]


# -- a module returning its own parameter ------------------------------------------------


class ReturnsBias(nn.Module):
    """As GPT-NeoX-Japanese's attention: the output and a learned bias, added by the caller."""

    def __init__(self) -> None:
        super().__init__()
        self.dense = nn.Linear(4, 4, bias=False)
        self.dense_bias = nn.Parameter(torch.randn(4))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.dense(x), self.dense_bias


class UsesBias(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = ReturnsBias()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, bias = self.attn(x)
        return out + bias


def test_a_parameter_returned_by_forward_flows_out_of_its_module() -> None:
    model = UsesBias()
    x = torch.randn(3, 4)
    out, g = record(model, x)
    torch.testing.assert_close(out, model(x))
    bias = next(t for t in g.tensors() if t.source_name == "attn.dense_bias")
    assert bias.is_param and bias.path == "attn"  # read inside the call that returned it
    attn = next(m for m in g.modules() if m.path == "attn")
    assert attn.contains(bias.id)
    add = g.by_name("add")
    returned = g.tensor(g.input_tensors(add.id)[1])
    assert returned.copy_of == bias.id and g.producer(returned.id) == attn.id  # not made from nothing
    # drawn: the parameter feeds the add when attn is opened; attn's result when it is a box
    opened = tv.ComputationGraph(g, tv.ViewOptions(depth=3, show_params=True)).view()
    assert "\tattn_dense_bias -> add" in opened.source
    boxed = tv.ComputationGraph(g, tv.ViewOptions(depth=1, hide_inner_tensors=False)).view()
    assert "\tattn -> attn_out" in boxed.source and "\tattn_out -> add" in boxed.source


# -- Tensor.set_ ---------------------------------------------------------------------------


class SetStorage(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        y.set_(torch.zeros(3, 4))  # never reaches __torch_function__
        return self.inner(y + 1)


def test_tensor_set_is_detected_and_warned_on_the_stale_node() -> None:
    model = SetStorage()
    x = torch.randn(3, 4)
    out, g = record(model, x)
    torch.testing.assert_close(out, torch.ones(3, 4))
    mul_out = g.tensor(g.output_tensors(g.by_name("mul").id)[0])
    assert args_of(g, "add")[0] == mul_out.name  # the value before set_, the only one known
    assert len(g.warnings) == 1 and "Tensor.set_" in g.warnings[0] and "root module" in g.warnings[0]
    assert g.annotations.layer(WARNING_LAYER) == {mul_out.id: g.warnings[0]}
    assert "⚠ " in tv.ComputationGraph(g).source  # said in the picture


def test_an_ordinary_forward_has_no_warnings() -> None:
    _, g = record(UsesBias(), torch.randn(3, 4))
    assert g.warnings == [] and WARNING_LAYER not in g.annotations


# -- module conversions inside forward ------------------------------------------------------


class CastsRouter(nn.Module):
    """As switch_transformers: the router is cast inside forward (here with a buffer too)."""

    def __init__(self, method: str) -> None:
        super().__init__()
        self.method = method
        self.router = nn.Linear(4, 4)
        self.router.register_buffer("scale", torch.full((4,), 2.0))
        self.expert = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.method == "to":
            self.router.to(torch.float64)
        else:
            getattr(self.router, self.method)()
        dtype = self.router.weight.dtype
        r = self.router(x.to(dtype)) * self.router.scale
        self.router.to(self.router.weight.device)  # converts nothing: drawn as nothing
        return self.expert(x) + r.float()


@pytest.mark.parametrize(("method", "dtype"), [("to", "float64"), ("double", "float64"), ("half", "float16")])
def test_a_module_converted_inside_forward_draws_parameter_conversions(method: str, dtype: str) -> None:
    model = CastsRouter(method)
    before = {k: (v, v.data_ptr(), v.dtype) for k, v in model.state_dict(keep_vars=True).items()}
    if method == "half":  # (no half-precision linear on every CPU: record on meta)
        g = tv.draw_graph(model, input_size=(3, 4), device="meta").graph
    else:
        g = tv.draw_graph(model, input_size=(3, 4)).graph
    # the caller's module is not converted: the same tensors, storages and dtypes
    after = {k: (v, v.data_ptr(), v.dtype) for k, v in model.state_dict(keep_vars=True).items()}
    assert [(k, v[0] is before[k][0], v[1:]) for k, v in after.items()] == [(k, True, v[1:]) for k, v in before.items()]
    assert all(m.router.weight.dtype == torch.float32 for m in [model])
    # drawn as conversions of the parameters and the buffer, in the method call router.<method>
    call = only([m for m in g.modules() if m.method == method])
    conv = [f for f in g.functions() if f.parent == call.id]
    assert call.path == "router" and {f.op for f in conv} == {method}
    assert sorted(args_of(g, f.name)[0] for f in conv) == ["router.bias", "router.scale", "router.weight"]
    assert not {"_has_compatible_shallow_copy_type", "data", "__set__"} & set(ops(g))
    assert all(g.output_tensors(f.id) for f in g.functions())  # no op without a tensor result
    # later reads use the converted values
    linear = next(f for f in g.functions() if f.op == "linear" and f.path == "router")
    weight, bias = (g.tensor(i) for i in g.input_tensors(linear.id)[1:])
    assert producer_op(g, weight.id) == method and producer_op(g, bias.id) == method
    assert weight.dtype == bias.dtype == dtype
    mul = next(f for f in g.functions() if f.op == "mul")
    assert producer_op(g, g.input_tensors(mul.id)[1]) == method  # the buffer, converted
    assert [m for m in g.modules() if m.method == "to" and m.opaque] == []  # .to(same device): nothing
    g.lint()


# -- FX GraphModules -------------------------------------------------------------------------


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x)) + 1


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.block(x) * 2)


class HoldsTraced(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.traced = torch.fx.symbolic_trace(Net())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.traced(x=x).sigmoid()


def test_a_graph_module_is_recorded_with_ops_in_its_leaves_and_its_hierarchy() -> None:
    model = HoldsTraced()
    x = torch.randn(3, 4)
    out, g = record(model, x)
    torch.testing.assert_close(out, model(x))
    calls = [(m.path, m.cls_name, m.parent is not None and g[m.parent].path) for m in g.modules()]
    assert calls == [
        ("", "HoldsTraced", False),
        ("traced", "Net", ""),
        ("traced.block", "Block", "traced"),  # flattened by fx, a call again (nn_module_stack)
        ("traced.block.lin", "Linear", "traced.block"),
        ("traced.head", "Linear", "traced"),
    ]
    assert [(f.op, f.path) for f in g.functions()] == [
        ("linear", "traced.block.lin"),  # inside the leaf
        ("relu", "traced.block"),
        ("add", "traced.block"),
        ("mul", "traced"),
        ("linear", "traced.head"),
        ("sigmoid", ""),
    ]
    block = next(m for m in g.modules() if m.path == "traced.block")
    assert g.input_tensors(block.id) == g.inputs  # x crosses into the call it is read in
    mul = g.by_name("mul")
    assert g.producer(g.input_tensors(mul.id)[0]) == g.by_name("add").id
    assert block.id in g.predecessors(g.input_tensors(mul.id)[0])  # a result of block
    assert "forward" not in vars(model.traced)


# -- FSDP2 and tensor parallel (a fake process group of 4) ----------------------------------


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(8, 16)
        self.down = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


@pytest.fixture
def mesh() -> Any:
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=4)
    try:
        yield init_device_mesh("cpu", (4,))
    finally:
        dist.destroy_process_group()


def _calls_and_ops(g: Graph) -> list[tuple[str, str, str]]:
    return [
        (type(n).__name__, n.path, n.op if isinstance(n, FunctionNode) else "")
        for n in g.nodes
        if not isinstance(n, TensorNode)
    ]


def _fsdp_snapshot(model: nn.Module) -> list[Any]:
    """What recording must leave as it was: the parameter objects, types and local values,
    the hook registries and the training flags."""
    from torch.distributed.tensor import DTensor

    params = [
        (p, type(p), (p.to_local() if isinstance(p, DTensor) else p).detach().clone()) for p in model.parameters()
    ]
    hooks = [(dict(m._forward_pre_hooks), dict(m._forward_hooks)) for m in model.modules()]
    return [params, hooks, [m.training for m in model.modules()]]


def _fsdp_unchanged(model: nn.Module, before: list[Any]) -> None:
    from torch.distributed.tensor import DTensor

    params, hooks, flags = _fsdp_snapshot(model)
    assert [(p, t) for p, t, _ in params] == [(p, t) for p, t, _ in before[0]]
    assert all(torch.equal(a, b) for (_, _, a), (_, _, b) in zip(params, before[0]))
    assert hooks == before[1]
    assert flags == before[2]
    assert all(type(p) is DTensor for p in model.parameters())  # sharded as found


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("mode", ["eval", "same", "train"])
def test_fsdp2_model_records_the_model_it_shards_the_same_on_every_device(mesh: Any, mode: str) -> None:
    """FSDP's hooks (all-gathers into flat buffers, views of them) were drawn in place of
    the parameters on the CPU, and on meta/fake the model could not be copied: now every
    device draws the sharded model's ops reading its parameters in their global shapes,
    each with its shard's placement; the caller's model, its shards and hooks untouched."""
    from torch.distributed.fsdp import fully_shard

    model = MLP()
    fully_shard(model.up, mesh=mesh)
    fully_shard(model, mesh=mesh)
    model.train()
    before = _fsdp_snapshot(model)
    graphs = {d: tv.draw_graph(model, input_size=(2, 8), device=d, mode=mode).graph for d in (None, "meta", "fake")}
    cpu = graphs[None]
    assert [(f.op, f.path) for f in cpu.functions()] == [("linear", "up"), ("relu", ""), ("linear", "down")]
    for device, g in graphs.items():
        assert _calls_and_ops(g) == _calls_and_ops(cpu), device
        assert g.shapes(g.outputs) == [(2, 8)]
        assert [(t.source_name, t.shape) for t in g.tensors() if t.is_param] == [
            ("up.weight", (16, 8)),  # global shapes (a shard is a quarter)
            ("up.bias", (16,)),
            ("down.weight", (8, 16)),
            ("down.bias", (8,)),
        ]
        placed = g.annotations.layer("placement")
        assert {t.source_name: placed.get(t.id) for t in g.tensors() if t.is_param} == dict.fromkeys(
            ["up.weight", "up.bias", "down.weight", "down.bias"], "Shard(dim=0) on mesh (4,)"
        ), device
        assert g.warnings == []
        _fsdp_unchanged(model, before)
    model(torch.randn(2, 8)).sum().backward()  # training goes on as without the recordings
    assert all(p.grad is not None for p in model.parameters())


@pytest.mark.filterwarnings("ignore")
def test_fsdp2_mixed_precision_records_its_casts_and_compute_dtype_on_every_device(mesh: Any) -> None:
    """A ``MixedPrecisionPolicy`` group computes in its ``param_dtype``: its parameters are
    drawn in it, and FSDP's casts of the inputs and outputs are drawn, on every device; a
    group left unsharded by a plain forward (the root's) is drawn with its placements too."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8), nn.LayerNorm(8))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, output_dtype=torch.float32)
    fully_shard([model[0], model[2]], mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh)
    model(torch.randn(2, 8))  # the root keeps its parameters gathered after a forward
    found = [type(p).__name__ for p in model.parameters()]
    for device in (None, "meta", "fake"):
        g = tv.draw_graph(model, input_size=(2, 8), device=device).graph
        assert [(f.op, f.path) for f in g.functions()] == [
            ("to", "0"),
            ("linear", "0"),
            ("to", "0"),
            ("relu", "1"),
            ("to", "2"),
            ("linear", "2"),
            ("to", "2"),
            ("layer_norm", "3"),
        ], device
        params = [t for t in g.tensors() if t.is_param]
        assert [(t.source_name, t.dtype) for t in params] == [
            ("0.weight", "bfloat16"),
            ("0.bias", "bfloat16"),
            ("2.weight", "bfloat16"),
            ("2.bias", "bfloat16"),
            ("3.weight", "float32"),
            ("3.bias", "float32"),
        ]
        placed = g.annotations.layer("placement")
        assert all(placed.get(t.id) == "Shard(dim=0) on mesh (4,)" for t in params)
        assert g.shapes(g.outputs) == [(2, 8)] and g.tensor(g.outputs[0]).dtype == "float32"
    assert [type(p).__name__ for p in model.parameters()] == found


class Locked(nn.Module):
    """A module ``copy.deepcopy`` refuses (a lock), with tensors in a plain list."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("scale", torch.full((4,), 2.0))
        self.masks = [torch.ones(4)]
        self.lock = threading.Lock()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.scale * self.masks[0]


@pytest.mark.parametrize("device", ["meta", "fake"])
def test_a_model_deepcopy_refuses_records_on_meta_and_fake_from_a_copy_of_its_tree(device: str) -> None:
    import copy

    model = Locked()
    with pytest.raises(TypeError):
        copy.deepcopy(model)
    params, masks, lock = list(model.parameters()), model.masks, model.lock
    g = tv.draw_graph(model, input_size=(2, 4), device=device).graph
    assert [(f.op, f.path) for f in g.functions()] == [("linear", "lin"), ("mul", ""), ("mul", "")]
    assert [t.source_name for t in g.tensors() if t.is_param] == ["lin.weight", "lin.bias", "scale"]
    assert g.shapes(g.outputs) == [(2, 4)]
    # the caller's model: the same objects, on the CPU, the list not rewritten
    assert list(model.parameters()) == params and all(p.device.type == "cpu" for p in params)
    assert model.masks is masks and masks[0].device.type == "cpu" and model.lock is lock
    assert model.scale.device.type == "cpu"


@pytest.mark.filterwarnings("ignore")
def test_tensor_parallel_records_the_same_on_every_device_with_placements(mesh: Any) -> None:
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    model = MLP()
    parallelize_module(model, mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
    x = torch.randn(2, 8)
    cpu = tv.draw_graph(model, input_data=x).graph
    meta = tv.draw_graph(model, input_data=x, device="meta").graph
    assert _calls_and_ops(cpu) == _calls_and_ops(meta)  # was 6 ops on the CPU, 11 on meta
    assert [(f.op, f.path) for f in cpu.functions() if f.op in ("linear", "relu")] == [
        ("linear", "up"),
        ("relu", ""),
        ("linear", "down"),
    ]
    assert [(t.source_name, t.shape) for t in cpu.tensors() if t.is_param] == [
        ("up.weight", (16, 8)),  # global shapes
        ("up.bias", (16,)),
        ("down.weight", (8, 16)),
        ("down.bias", (8,)),
    ]
    for g in (cpu, meta):
        placed = g.annotations.layer("placement")
        where = {t.source_name: placed.get(t.id) for t in g.tensors() if t.is_param}
        assert where == {
            "up.weight": "Shard(dim=0) on mesh (4,)",
            "up.bias": "Shard(dim=0) on mesh (4,)",
            "down.weight": "Shard(dim=1) on mesh (4,)",
            "down.bias": "Replicate() on mesh (4,)",
        }
    shown = tv.ComputationGraph(cpu, tv.ViewOptions(show_params=True)).source
    assert "placement: Shard(dim=0) on mesh (4,)" in shown


def test_an_exported_graph_module_recorded_has_its_hierarchy_and_readable_op_names() -> None:
    x = torch.randn(3, 4)
    gm = torch.export.export(Net(), (x,)).module()  # aten ops, nn_module_stack on each
    out, g = record(gm, x)
    torch.testing.assert_close(out, gm(x))
    assert [(f.op, f.path) for f in g.functions()] == [
        ("linear", "block.lin"),  # aten.linear.default, named as the importer names it
        ("relu", "block"),
        ("add", "block"),
        ("mul", ""),
        ("linear", "head"),
    ]
    block = next(m for m in g.modules() if m.path == "block")
    assert block.cls_name == "Block" and g[block.parent].path == ""


class SetsItsWeight(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.lin.weight.set_(torch.zeros(4, 4))  # unseen by __torch_function__
        return self.lin(x)


def test_tensor_set_on_a_parameter_is_warned_and_undone_for_the_caller() -> None:
    model = SetsItsWeight()
    weight = model.lin.weight.detach().clone()
    ptr = model.lin.weight.data_ptr()
    g = tv.draw_graph(model, input_size=(2, 4)).graph
    assert model.lin.weight.data_ptr() == ptr and torch.equal(model.lin.weight, weight)  # as found
    linear = next(f for f in g.functions() if f.op == "linear")
    read = g.tensor(g.input_tensors(linear.id)[1])
    assert read.source_name == "lin.weight"  # the node of the parameter as it was
    assert "Tensor.set_" in g.warnings[0] and "'lin'" in g.warnings[0]
    assert g.annotations.layer(WARNING_LAYER) == {read.id: g.warnings[0]}


class Hidden(nn.Module):
    """Stands for a C++ extension: its kernel calls no torch function."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch._C.DisableTorchFunction():
            return torch.relu(x) * 2


class UsesHidden(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ext = Hidden()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ext(x) + 1


def test_a_result_made_where_no_torch_function_ran_is_warned_on_its_module() -> None:
    model = UsesHidden()
    x = torch.randn(2, 4)
    out, g = record(model, x)
    torch.testing.assert_close(out, model(x))
    ext = next(m for m in g.modules() if m.path == "ext")
    assert ext.opaque and g.input_tensors(ext.id) == g.inputs
    assert [t.id for t in g.tensors() if g.producer(t.id) == ext.id] == g.input_tensors(g.by_name("add").id)
    assert g.warnings == [g.annotations.layer(WARNING_LAYER)[ext.id]]
    assert g.warnings[0].startswith("Hidden at 'ext' returned a tensor made where tensorview cannot see")

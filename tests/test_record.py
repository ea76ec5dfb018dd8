"""Recording the fixture zoo: values unchanged, structure right, model left as found."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from tensorview import Recorder
from tensorview.graph import Graph
from tensorview.recording import RecorderTensor, is_patched

from .fixtures import models as zoo


def record(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> tuple[Any, Graph]:
    with Recorder(model) as rec:
        out = model(*args, **(kwargs or {}))
    return out, rec._session.graph


def fn_nodes(g: Graph, op: str) -> list[Any]:
    return [n for n in g.functions() if n.op == op]


def only(items: list[Any]) -> Any:
    assert len(items) == 1, items
    return items[0]


def inputs_of(g: Graph, node_id: int) -> list[int]:
    return g.input_tensors(node_id)


def produced_by(g: Graph, tensor_id: int) -> Any:
    p = g.producer(tensor_id)
    return None if p is None else g.nodes[p]


def same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor) or type(a) is not type(b):
            return False
        if a.is_sparse:
            return torch.equal(a.to_dense(), b.to_dense())
        return torch.equal(a, b)
    if isinstance(a, dict):
        return type(a) is type(b) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def no_recorder_tensor(obj: Any) -> bool:
    if isinstance(obj, RecorderTensor):
        return False
    if isinstance(obj, dict):
        return all(no_recorder_tensor(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return all(no_recorder_tensor(v) for v in obj)
    return True


def module_calls_seen_by_hooks(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    seen: list[str] = []
    handle = torch.nn.modules.module.register_module_forward_pre_hook(lambda m, i: seen.append(type(m).__name__))
    try:
        model(*args, **kwargs)
    finally:
        handle.remove()
    return seen


@pytest.mark.parametrize("name", sorted(zoo.ZOO))
def test_zoo_output_unchanged_and_calls_complete(name: str) -> None:
    make_model, make_inputs = zoo.ZOO[name]
    model = make_model().eval()
    args, kwargs = make_inputs()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(1)
    expected = model(*args, **kwargs)
    calls = module_calls_seen_by_hooks(model, args, kwargs)
    torch.manual_seed(1)
    out, g = record(model, args, kwargs)
    assert same(expected, out), f"{name}: output changed by recording"
    assert no_recorder_tensor(out)
    assert not is_patched()
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    # every module call, in execution order (the hooks see the root call too; method calls
    # of submodules, such as ``self.enc.encode(x)``, pass no hook)
    assert [m.cls_name for m in g.modules() if m.method is None] == calls
    g.lint()


def test_module_paths_in_execution_order() -> None:
    model = zoo.Recursive()
    _, g = record(model, (zoo.x4(),))
    assert [m.path for m in g.modules()] == ["", "fc", "child", "child.fc", "child.child", "child.child.fc"]
    assert [m.depth for m in g.modules()] == [0, 1, 1, 2, 2, 3]


def test_inplace_method_consumers_see_new_version() -> None:
    _, g = record(zoo.InplaceMethods(), (zoo.x4(),))
    relu = only(fn_nodes(g, "relu_"))
    sig = only(fn_nodes(g, "sigmoid"))
    (relu_out,) = g.output_tensors(relu.id)
    assert inputs_of(g, sig.id) == [relu_out]
    linear_out = only(g.output_tensors(only(fn_nodes(g, "linear")).id))
    assert inputs_of(g, relu.id) == [linear_out]


def test_inplace_module_and_augmented_assignment() -> None:
    _, g = record(zoo.InplaceModule(), (zoo.x4(),))
    relu = only(fn_nodes(g, "relu"))
    lin1, lin2 = fn_nodes(g, "linear")
    assert inputs_of(g, relu.id) == g.output_tensors(lin1.id)
    assert inputs_of(g, lin2.id)[0] == only(g.output_tensors(relu.id))

    x = zoo.x4()
    _, g = record(zoo.AugmentedAssign(), (x,))
    add, mul = only(fn_nodes(g, "add_")), only(fn_nodes(g, "mul_"))
    assert inputs_of(g, mul.id)[0] == only(g.output_tensors(add.id))
    assert g.outputs == g.output_tensors(mul.id)
    assert g.nodes[inputs_of(g, add.id)[1]].role == "input"


def test_inplace_through_view_reaches_base() -> None:
    _, g = record(zoo.InplaceOnView(), (zoo.x4(),))
    mul_ = only(fn_nodes(g, "mul_"))
    final = only(fn_nodes(g, "add"))
    (base_now,) = inputs_of(g, final.id)
    assert produced_by(g, base_now) is mul_  # not the pre-mutation `mul` output
    assert g.nodes[base_now].shape == (2, 4)


def test_setitem_records_value_and_new_version() -> None:
    _, g = record(zoo.SetItem(), (zoo.x4(), torch.randn(2, 2)))
    setitem = only(fn_nodes(g, "setitem"))
    ins = [g.nodes[i] for i in inputs_of(g, setitem.id)]
    assert [n.shape for n in ins] == [(2, 4), (2, 2)]
    assert ins[1].role == "input" and ins[1].name == "z"
    total = only(fn_nodes(g, "sum"))
    assert produced_by(g, inputs_of(g, total.id)[0]) is setitem


def test_created_and_constant_tensors() -> None:
    _, g = record(zoo.CreatesTensors(), (torch.randn(2, 3),))
    roles = {n.name: n.role for n in g.tensors()}
    assert roles["arange"] == "created" and roles["zeros"] == "created" and roles["tensor"] == "constant"
    scale = only([m for m in g.modules() if m.path == "scale"])
    assert [g.nodes[i].name for i in inputs_of(g, scale.id)] == ["tensor"]
    assert not scale.opaque and fn_nodes(g, "linear")


def test_list_held_and_shared_modules() -> None:
    _, g = record(zoo.ListHeld(), (zoo.x4(),))
    assert [m.path for m in g.modules()][1:] == ["blocks.0", "blocks.1"]
    _, g = record(zoo.Shared(), (zoo.x4(),))
    calls = [m for m in g.modules() if m.path == "fc"]
    assert [m.call_index for m in calls] == [0, 1, 2]
    weight = only([t for t in g.tensors() if t.source_name == "fc.weight"])
    assert weight.role == "parameter"
    assert sum(1 for s in g.successors(weight.id) if g.nodes[s].kind == "function") == 3


def test_nested_inputs_and_outputs() -> None:
    model = zoo.Nested()
    args, _ = zoo.ZOO["nested"][1]()
    out, g = record(model, args)
    names = [g.nodes[i].name for i in g.inputs]
    assert names == ["items_0", "items_1_0", "mapping_x", "pair_a", "pair_b", "batch_image", "batch_extra"]
    assert type(out["pair"]) is zoo.Pair and isinstance(out["parts"][1], list)
    assert len(g.outputs) == 4  # sum, a, b, batch.extra (a appears twice, listed once)
    extra = g.nodes[g.inputs[-1]]
    out_extra = g.nodes[g.outputs[-1]]
    assert out_extra.copy_of == extra.id and out_extra.role == "output"


def test_kwargs_integer_and_unused_inputs() -> None:
    mask = torch.rand(2, 4) > 0.5
    _, g = record(zoo.KwargsModel(), (zoo.x4(),), {"mask": mask, "scale": 0.5})
    m = only([g.nodes[i] for i in g.inputs if g.nodes[i].name == "mask"])
    assert m.dtype == "bool"
    assert only(fn_nodes(g, "masked_fill")).id in g.successors(m.id)

    _, g = record(zoo.TokenModel(), (torch.randint(0, 10, (2, 5)),))
    ids = g.nodes[g.inputs[0]]
    assert ids.dtype == "int64" and ids.name == "ids"
    assert only(fn_nodes(g, "embedding")).id in g.successors(ids.id)

    _, g = record(zoo.UnusedInput(), (zoo.x4(), zoo.x4()))
    unused = g.nodes[g.inputs[1]]
    assert unused.name == "unused" and g.successors(unused.id) == [g.root]


def test_scalar_none_outputs_and_returned_input() -> None:
    out, g = record(zoo.ScalarAndNone(), (zoo.x4(),))
    assert out[1] is None and out[2] == 3
    assert [g.nodes[i].name for i in g.outputs] == ["sum_out"]

    x = zoo.x4()
    out, g = record(zoo.ReturnsInput(), (x,))
    assert torch.equal(out, x) and type(out) is torch.Tensor
    (o,) = g.outputs
    assert g.nodes[o].copy_of == g.inputs[0] and g.predecessors(o) == [g.root]


def test_identity_module_result_is_an_alias() -> None:
    _, g = record(zoo.IdentityInside(), (zoo.x4(),))
    ident = only([m for m in g.modules() if m.cls_name == "Identity"])
    assert ident.opaque
    (alias,) = g.output_tensors(ident.id)
    assert g.nodes[alias].copy_of == g.inputs[0]
    assert alias in inputs_of(g, only(fn_nodes(g, "linear")).id)


def test_scripted_module_is_one_opaque_op() -> None:
    _, g = record(zoo.Scripted(), (zoo.x4(),))
    scripted = only([m for m in g.modules() if m.path == "scripted"])
    # TorchScript runs in C++: its call is one op, nothing inside it is visible
    inner = [n for n in g.functions() if scripted.contains(n.id)]
    assert [n.op for n in inner] == ["forward"]
    (res,) = g.output_tensors(scripted.id)
    assert set(g.predecessors(res)) == {scripted.id, inner[0].id}
    assert only(fn_nodes(g, "add")).id in g.successors(res)


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_scripted_module_in_a_copy_is_labelled_forward(mode: str) -> None:
    import tensorview as tv

    model = zoo.Scripted().train()  # draw_graph records a copy (a deep copy of the ScriptModule)
    graph = tv.draw_graph(model, input_size=(2, 4), mode=mode, depth=5, hide_module_functions=False)
    scripted = only([m for m in graph.graph.modules() if m.path == "scripted"])
    (op,) = [n for n in graph.graph.functions() if scripted.contains(n.id)]
    assert (op.op, op.name) == ("forward", "forward")
    assert "ScriptMethod" not in graph.source and "forward" in graph.source


def test_module_invisible_inside_is_opaque() -> None:
    class CallsCpp(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            with torch._C.DisableTorchFunction():  # what a C++ extension looks like to us
                return torch.tanh(x)

    class Outer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ext = CallsCpp()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.ext(x) + 1

    _, g = record(Outer(), (zoo.x4(),))
    ext = only([m for m in g.modules() if m.path == "ext"])
    assert ext.opaque
    (res,) = g.output_tensors(ext.id)
    assert g.predecessors(res) == [ext.id]
    assert only(fn_nodes(g, "add")).id in g.successors(res)


def test_custom_function_hooks_and_control_flow() -> None:
    _, g = record(zoo.CustomFunction(), (zoo.x4(),))
    assert fn_nodes(g, "mul") and fn_nodes(g, "add")
    _, g = record(zoo.Hooked(), (zoo.x4(),))
    fc = only([m for m in g.modules() if m.path == "fc"])
    assert [n.op for n in g.functions() if fc.contains(n.id)] == ["add", "linear", "mul"]
    x = torch.ones(2, 4)
    _, g = record(zoo.ControlFlow(), (x,))
    assert [m.path for m in g.modules()][1:] == ["pos"]
    _, g = record(zoo.ControlFlow(), (-x,))
    assert [m.path for m in g.modules()][1:] == ["neg"]


class AsksQuestions(nn.Module):
    """Queries a forward asks as torch functions and as methods (nn.MultiheadAttention asks
    ``torch.is_floating_point``): answers, not ops."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_floating_point(x) and not torch.is_complex(x) and x.is_signed() and not x.is_conj():
            x = x * torch.numel(x)
        if torch.is_same_size(x, x) and not torch.is_neg(x) and not torch.is_inference(x):
            x = self.fc(x)
        return x


def test_queries_are_answered_not_recorded() -> None:
    out, g = record(AsksQuestions(), (zoo.x4(),))
    assert [n.op for n in g.functions()] == ["mul", "linear"]
    g.lint()


def test_foreign_subclass_complex_and_sparse_inputs() -> None:
    x = zoo.x4().as_subclass(zoo.OtherSubclass)
    model = zoo.InplaceModule()
    out, g = record(model, (x,))
    assert type(out) is type(model(x)) and fn_nodes(g, "relu")
    _, g = record(zoo.ComplexModel(), (torch.randn(2, 4, dtype=torch.complex64),))
    assert g.nodes[g.inputs[0]].dtype == "complex64"
    assert g.nodes[g.outputs[0]].dtype == "float32"
    s = torch.randn(2, 4).relu().to_sparse()
    _, g = record(zoo.SparseModel(), (s,))
    assert g.nodes[g.inputs[0]].shape == (2, 4)
    assert g.output_tensors(g.successors(g.inputs[0])[-1])  # the sparse op has a result


def test_method_other_than_forward_and_direct_params() -> None:
    _, g = record(zoo.MethodNotForward(), (zoo.x4(),))
    assert [(m.path, m.method) for m in g.modules()] == [("", None), ("enc", "encode"), ("enc.fc", None)]
    assert only(fn_nodes(g, "tanh")).path == "enc"

    _, g = record(zoo.DirectParam(), (zoo.x4(),))
    by_source = {t.source_name: t for t in g.tensors() if t.source_name}
    assert by_source["weight"].role == "parameter" and by_source["pos_ids"].role == "buffer"
    proj = only([m for m in g.modules() if m.path == "proj"])
    assert inputs_of(g, proj.id) == [by_source["query"].id]
    matmul = only(fn_nodes(g, "matmul"))
    assert by_source["weight"].id in inputs_of(g, matmul.id)


def test_function_nodes_know_their_module_path() -> None:
    _, g = record(zoo.Buffers(), (zoo.x4(),))
    bn = only(fn_nodes(g, "batch_norm"))
    assert bn.path == "bn"
    srcs = {g.nodes[i].source_name for i in inputs_of(g, bn.id)}
    assert {"bn.running_mean", "bn.running_var", "bn.weight", "bn.bias"} <= srcs


def test_training_batchnorm_mutates_buffers_in_place() -> None:
    model = zoo.Buffers().train()
    _, g = record(model, (zoo.x4(),))
    # num_batches_tracked += 1 makes a new version of the buffer, produced by add_
    counter = only([t for t in g.tensors() if t.source_name == "bn.num_batches_tracked"])
    add_ = only(fn_nodes(g, "add_"))
    assert inputs_of(g, add_.id) == [counter.id]
    (new,) = g.output_tensors(add_.id)
    assert g.nodes[new].shape == () and g.nodes[new].dtype == "int64"


def test_recording_only_the_first_root_call_and_nothing_outside() -> None:
    model = zoo.Shared()
    with Recorder(model) as rec:
        y = model(zoo.x4())
        z = y * 2  # outside the model: not recorded
        model(zoo.x4())  # a second call runs unrecorded
    g = rec._session.graph
    assert len([m for m in g.modules() if m.path == ""]) == 1
    assert not fn_nodes(g, "mul") and type(z) is torch.Tensor


def test_identity_returning_ops_and_as_tensor_keep_the_chain() -> None:
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(4, 4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            w = self.w.to(x.dtype)  # returns the parameter itself
            y = torch.as_tensor(x)  # returns x itself
            return y.contiguous() @ w + self.w.sum()

    _, g = record(M(), (zoo.x4(),))
    w = only([t for t in g.tensors() if t.source_name == "w"])
    to, s = only(fn_nodes(g, "to")), only(fn_nodes(g, "sum"))
    assert inputs_of(g, to.id) == [w.id] and inputs_of(g, s.id) == [w.id]  # later uses see the parameter
    matmul = only(fn_nodes(g, "matmul"))
    assert inputs_of(g, matmul.id)[1] == only(g.output_tensors(to.id))
    as_t = only(fn_nodes(g, "as_tensor"))
    assert inputs_of(g, as_t.id) == g.inputs
    assert not [t for t in g.tensors() if t.role == "constant"]


class Cache:
    """A cache object like transformers' DynamicCache: tensors held in attributes."""

    def __init__(self) -> None:
        self.keys: list[torch.Tensor] = []
        self.last: tuple[torch.Tensor, ...] = ()


class StoresTensors(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.seen: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor, cache: Cache) -> Any:
        y = self.fc(x)
        cache.keys.append(y)  # the caller's cache object is updated in place
        cache.last = (y, x)
        self.attn = y * 2  # a forward that stores a tensor on its module
        self.seen.append(y)
        out = Cache()
        out.keys.append(y + 1)
        return {"y": y, "cache": out}


def test_no_recorder_tensor_escapes_into_objects_or_modules() -> None:
    model, cache = StoresTensors(), Cache()
    out, g = record(model, (zoo.x4(), cache))
    held = [cache.keys[0], *cache.last, model.attn, model.seen[0], out["y"], out["cache"].keys[0]]
    assert all(type(t) is torch.Tensor for t in held)
    assert torch.equal(out["cache"].keys[0], out["y"] + 1)
    assert [g.nodes[i].name for i in g.outputs] == ["linear_out", "add_out"]  # the returned cache too


def test_iterating_a_tensor_records_its_rows() -> None:
    class Rows(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.stack([row * 2 for row in x])

    x = zoo.x4()
    out, g = record(Rows(), (x,))
    assert torch.equal(out, x * 2)
    unbind = only(fn_nodes(g, "unbind"))
    assert inputs_of(g, unbind.id) == g.inputs
    rows = g.output_tensors(unbind.id)
    muls = fn_nodes(g, "mul")
    assert [inputs_of(g, m.id) for m in muls] == [[r] for r in rows]
    assert not [t for t in g.tensors() if t.role == "constant"]


class RepeatedMutations(nn.Module):
    """The same in-place patterns three times, so the meta replay cache is hit."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([zoo.InplaceOnView(), zoo.AugmentedAssign(), zoo.InplaceMethods()] * 3)

    def forward(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
            y = x.clone()
            y[:, :2] = z  # setitem: a version bump without a tensor result
            x = x + y.transpose(0, 1).transpose(0, 1).contiguous()
        return x.split(2, dim=1)[0]


META_ZOO = sorted(set(zoo.ZOO) - {"sparse", "other_subclass", "complex", "scripted", "control_flow"})


@pytest.mark.parametrize("name", META_ZOO + ["repeated_mutations"])
def test_meta_replay_gives_the_same_graph(name: str) -> None:
    if name == "repeated_mutations":
        make_model, make_inputs = RepeatedMutations, lambda: ((zoo.x4(), torch.randn(2, 2)), {})
    else:
        make_model, make_inputs = zoo.ZOO[name]
    with torch.device("meta"):
        model = make_model().eval()
    args, kwargs = make_inputs()
    to_meta = lambda v: v.to("meta") if isinstance(v, torch.Tensor) else v  # noqa: E731
    from tensorview.recording.tree import map_tensors

    args = map_tensors(args, to_meta)
    kwargs = map_tensors(kwargs, to_meta)
    graphs, outs, hits = [], [], []
    for replay in (True, False):
        with torch.no_grad(), Recorder(model, meta_replay=replay) as rec:  # as draw_graph runs
            outs.append(model(*args, **kwargs))
        graphs.append(rec._session.graph.to_dict())
        hits.append(rec._session.meta_hits)
    if name == "repeated_mutations":
        assert hits[0] > 20  # the repeats were replayed, not run
    assert hits[1] == 0
    assert graphs[0] == graphs[1]
    flat = [[(t.shape, t.stride(), t.dtype) for t in _flat(o)] for o in outs]
    assert flat[0] == flat[1]


def _flat(obj: Any) -> list[torch.Tensor]:
    from tensorview.recording.tree import flat_tensors as _flat_tensors

    return _flat_tensors(obj)


def test_out_argument_makes_a_new_version() -> None:
    class OutArg(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            buf = torch.empty_like(x)
            torch.add(x, 1, out=buf)
            return buf * 2

    x = zoo.x4()
    out, g = record(OutArg(), (x,))
    assert torch.equal(out, (x + 1) * 2)
    add = only(fn_nodes(g, "add"))
    buf = only([t for t in g.tensors() if t.role == "created"])
    assert set(inputs_of(g, add.id)) == {g.inputs[0], buf.id}
    mul = only(fn_nodes(g, "mul"))
    assert produced_by(g, inputs_of(g, mul.id)[0]) is add


def test_formatting_a_recorded_tensor_reads_as_without_recording() -> None:
    class Keys(nn.Module):
        """Like switch_transformers: tensor values formatted into dict keys."""

        def __init__(self) -> None:
            super().__init__()
            self.experts = nn.ModuleDict({"expert_0": nn.Linear(4, 4), "expert_1": nn.Linear(4, 4)})

        def forward(self, x: torch.Tensor) -> Any:
            idx = (x.sum() > 1e9).long()  # 0
            text = f"{idx}|{repr(x[0, :1])}|{str(x[0, 0])}"
            return self.experts[f"expert_{idx}"](x), text

    model, x = Keys(), zoo.x4()
    expected = model(x)
    out, g = record(model, (x,))
    assert out[1] == expected[1] and "Recorder" not in out[1]
    assert [m.path for m in g.modules()] == ["", "experts.expert_0"]


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage:UserWarning")
def test_strided_nested_tensor_inputs() -> None:
    """A strided nested tensor has no ``shape`` nor ``stride()`` (both raise): handing the
    caller's tensors back at the end of the forward compared them and raised."""

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, nt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return self.fc(nt).relu(), nt.contiguous()  # contiguous() returns nt itself

    torch.manual_seed(0)
    model = Net()
    nt = torch.nested.nested_tensor([torch.randn(2, 4), torch.randn(3, 4)])
    with torch.no_grad():
        expected = model(nt)[0]
        (out, same), g = record(model, (nt,))
    assert torch.equal(out.to_padded_tensor(0), expected.to_padded_tensor(0))
    assert same is nt  # the caller's own object, as without recording
    assert [f.op for f in g.functions()] == ["linear", "relu", "contiguous"]
    g.lint()


class NoGradPositions(nn.Module):
    """Positions from a table, made under ``@torch.no_grad()`` (as transformers' sinusoidal
    position embeddings) and written in place by the caller with grad on (Kosmos-2.5)."""

    def __init__(self) -> None:
        super().__init__()
        self.table = torch.randn(10, 4)

    @torch.no_grad()
    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.table.index_select(0, ids.view(-1)).view(*ids.shape, 4).detach()


class WritesNoGradResult(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pos = NoGradPositions()
        self.segment = nn.Embedding(3, 4)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        p = self.pos(ids)
        p += self.segment(torch.zeros(1, 1, dtype=torch.long))
        return p * 2


def test_result_made_under_no_grad_can_be_written_in_place_with_grad_on() -> None:
    """A result made under ``no_grad`` is a fresh tensor that may be written in place once
    grad is on; the recorder's alias of it must be writable too (an ``as_subclass`` view
    made under ``no_grad`` is not), and so must an output the caller gets back from a root
    call run under ``no_grad``."""
    model = WritesNoGradResult()
    ids = torch.tensor([[1, 2, 3]])
    plain = model(ids)
    out, g = record(model, (ids,))
    assert torch.equal(out, plain) and out.requires_grad
    g.lint()
    assert [f.op for f in g.functions()][-2:] == ["add_", "mul"]
    out.sum().backward()  # the gradient reaches the embedding through the in-place add
    assert model.segment.weight.grad is not None and model.segment.weight.grad[0].abs().sum() > 0
    # what a no_grad root call returns is as writable as the plain result
    with torch.no_grad():
        plain = model.pos(ids)
    with torch.no_grad(), Recorder(model.pos):
        recorded = model.pos(ids)
    bias = torch.ones(4, requires_grad=True)
    plain += bias
    recorded += bias
    assert torch.equal(recorded, plain) and recorded.requires_grad
    # a view made under no_grad stays unwritable with grad on, as without recording
    rows = nn.Sequential(model.pos, nn.Flatten(0, 1))  # flatten returns a view
    with torch.no_grad():
        view = rows(ids)
    with pytest.raises(RuntimeError, match="no_grad mode"):
        view += bias
    with torch.no_grad(), Recorder(rows):
        view = rows(ids)
    with pytest.raises(RuntimeError, match="no_grad mode"):
        view += bias


class SeesItsResults(nn.Module):
    """Notes, inside its forward, whether each op's result is a view (an ``as_subclass``
    alias is one) and of which class."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.seen: list[tuple[str, bool]] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.lin(x))
        t = y.t()  # a view of y, as without recording
        self.seen = [(type(y).__name__, y._is_view()), (type(t).__name__, t._is_view())]
        return t


def test_no_grad_results_are_the_ops_own_tensors() -> None:
    """Under ``no_grad`` (as ``draw_graph`` records) a fresh result that torch's op alone
    holds becomes the RecorderTensor itself instead of getting an ``as_subclass`` alias (a
    view): the forward sees the same tensors as without recording, and it is cheaper."""
    model, x = SeesItsResults(), torch.randn(2, 4)
    with torch.no_grad():
        plain = model(x)
    assert model.seen == [("Tensor", False), ("Tensor", True)]
    with torch.no_grad(), Recorder(model) as rec:
        out = model(x)
    assert model.seen == [("RecorderTensor", False), ("RecorderTensor", True)]
    assert type(out) is torch.Tensor and torch.equal(out, plain)
    g = rec._session.graph
    assert [f.op for f in g.functions()] == ["linear", "relu", "t", "_is_view", "_is_view"]
    assert not any(type(v) is RecorderTensor for v in vars(model).values())


def test_owned_needs_the_sole_holder_and_a_torch_op() -> None:
    """``owned`` proves a result the op's own only when nothing else holds its TensorImpl
    (a view of it, C++ state) and the op is torch's own, running no user code (another
    package's function or a custom autograd Function might keep what it returns)."""
    from tensorview.recording.tensor import OWNED, owned

    def theirs(t: torch.Tensor) -> torch.Tensor:
        return t

    theirs.__module__ = "somepackage.cache"
    fresh = torch.relu(torch.randn(3))
    assert owned(fresh, torch.relu) == OWNED
    assert owned(fresh, torch.nn.functional.relu) == OWNED
    assert owned(fresh, torch.Tensor.relu) == OWNED
    assert owned(fresh, theirs) is None
    theirs.__module__ = "torch.autograd.function"  # Function.apply runs the user's forward
    assert owned(fresh, theirs) is None
    view = fresh.view(3)  # holds fresh's TensorImpl as its base
    assert owned(fresh, torch.relu) is None
    del view
    assert owned(fresh, torch.relu) == OWNED

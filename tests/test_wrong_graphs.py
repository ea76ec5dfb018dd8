"""Issue 21, part A: classes of models that were recorded as wrong graphs (a method that
calls its own module first, a module assigned in forward, parameters written through
``.data``, ``torch.vmap`` inside forward, deep nesting)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.graph import Graph, ModuleNode
from tensorview.recording import Recorder

from .fixtures.deep import default_recursion_limit, nested, plain_max_depth


def record(model: nn.Module, *inputs: torch.Tensor) -> Graph:
    with Recorder(model) as rec:
        model(*inputs)
    return rec.graph


def calls(g: Graph) -> list[tuple[str, str | None]]:
    """``(call_name, parent's call_name)`` of every module call, in order."""
    return [(m.call_name, g.module(m.parent).call_name if m.parent is not None else None) for m in g.modules()]


def call_of(g: Graph, call_name: str) -> ModuleNode:
    (m,) = [m for m in g.modules() if m.call_name == call_name]
    return m


# -- a submodule's method whose first torch call is the module itself ----------------------


class Enc(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self(x) * 2  # the module itself first, then an op

    def encode_op_first(self, x: torch.Tensor) -> torch.Tensor:
        return self(x.neg()) * 2  # an op first

    def generate(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(2):
            x = self(x)  # only calls of the module itself, then an op
        return x.tanh()

    def generate_forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(2):
            x = self.forward(x)  # forward called directly: no call of the module
        return x.tanh()


class UsesMethod(nn.Module):
    def __init__(self, method: str) -> None:
        super().__init__()
        self.enc = Enc()
        self.method = method

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return getattr(self.enc, self.method)(x) + 1


def test_method_calling_its_module_first_is_a_method_call() -> None:
    g = record(UsesMethod("encode"), torch.randn(2, 4))
    assert calls(g) == [("", None), ("enc.encode", ""), ("enc", "enc.encode"), ("enc.fc", "enc")]
    encode = call_of(g, "enc.encode")
    (mul,) = [f for f in g.functions() if f.op == "mul"]
    assert mul.parent == encode.id  # the op after the call belongs to the method, not the caller
    (add,) = [f for f in g.functions() if f.op == "add"]
    assert add.parent == g.root
    # the method's result leaves it and feeds the caller's add
    (mul_out,) = g.successors(mul.id)
    assert (encode.id, mul_out) in g.edges and (mul_out, add.id) in g.edges
    # the same calls whatever runs first
    g = record(UsesMethod("encode_op_first"), torch.randn(2, 4))
    assert calls(g) == [("", None), ("enc.encode_op_first", ""), ("enc", "enc.encode_op_first"), ("enc.fc", "enc")]
    encode = call_of(g, "enc.encode_op_first")
    assert [f.parent for f in g.functions() if f.op in ("neg", "mul")] == [encode.id, encode.id]


def test_generate_loop_of_module_calls_is_one_method_call() -> None:
    g = record(UsesMethod("generate"), torch.randn(2, 4))
    assert calls(g) == [
        ("", None),
        ("enc.generate", ""),
        ("enc", "enc.generate"),
        ("enc.fc", "enc"),
        ("enc", "enc.generate"),
        ("enc.fc", "enc"),
    ]
    (tanh,) = [f for f in g.functions() if f.op == "tanh"]
    assert tanh.parent == call_of(g, "enc.generate").id
    g = record(UsesMethod("generate_forward"), torch.randn(2, 4))
    assert calls(g) == [
        ("", None),
        ("enc.generate_forward", ""),
        ("enc.fc", "enc.generate_forward"),
        ("enc.fc", "enc.generate_forward"),
    ]


# -- modules assigned or made in forward ------------------------------------------------------


class Attn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.q(x)


class SwitchesAttn(nn.Module):
    """Replaces its attention inside forward (BigBird switches implementations so)."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = Attn()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.attn = Attn()  # registered in forward: the old one may be freed now
        act = nn.ReLU()  # made in forward, never registered
        kept = [nn.Tanh()]
        return kept[0](act(self.attn(x)))


class HasBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = SwitchesAttn()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.block.gate = nn.Sigmoid()  # registered on a child, called from here
        return self.block.gate(self.block(x))


def test_module_assigned_in_forward_gets_its_attribute_path() -> None:
    g = tv.draw_graph(HasBlock(), input_size=(2, 4)).graph
    assert [(m.path, m.cls_name) for m in g.modules()] == [
        ("", "HasBlock"),
        ("block", "SwitchesAttn"),
        ("block.attn", "Attn"),
        ("block.attn.q", "Linear"),
        ("block.ReLU", "ReLU"),  # a local: its class, under the call that made it
        ("block.Tanh", "Tanh"),
        ("block.gate", "Sigmoid"),
    ]
    assert not any("_modules" in n.path for n in g.nodes)


# -- parameters written through ``.data`` ---------------------------------------------------


class EMATeacher(nn.Module):
    """MoCo/BYOL/DINO: the teacher's weights follow the student's, written through ``.data``."""

    def __init__(self) -> None:
        super().__init__()
        self.student = nn.Linear(4, 4)
        self.teacher = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            for ps, pt in zip(self.student.parameters(), self.teacher.parameters()):
                pt.data.mul_(0.9).add_(ps.data, alpha=0.1)
        return self.student(x) + self.teacher(x)


class ClipsWeights(nn.Module):
    """Weight clipping (WGAN): ``p.data = ...`` and writes into a view of ``p.data``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.fc.weight.data = self.fc.weight.data.clamp(-0.1, 0.1)
        self.fc.bias.data[:2].zero_()
        return self.fc(x)


class WritesThroughDetach(nn.Module):
    """Writes through tensors sharing the parameter's storage and version counter but
    owning no view of it: ``detach()`` and the values of ``state_dict()`` (timm's EMA)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            self.fc.weight.detach().mul_(0.5)
            torch._foreach_mul_(list(self.fc.state_dict().values()), 2.0)
        return self.fc(x)


def producer_op(g: Graph, node_id: int) -> str:
    (p,) = g.predecessors(node_id)
    return g.nodes[p].op  # type: ignore[union-attr]


def test_writes_through_data_are_new_versions_of_the_parameter() -> None:
    g = record(EMATeacher(), torch.randn(2, 4))
    teacher_linear = [f for f in g.functions() if f.op == "linear" and f.path == "teacher"][0]
    weight, bias = g.predecessors(teacher_linear.id)[1:]
    # the teacher reads what the EMA update wrote, not its stale parameter nodes
    assert producer_op(g, weight) == "add_" and producer_op(g, bias) == "add_"
    assert g.tensor(weight).shape == (4, 4) and g.tensor(bias).shape == (4,)
    # and the update reads the teacher's parameter and the student's (through .data)
    (mul,) = [f for f in g.functions() if f.op == "mul_" and g.tensor(g.successors(f.id)[0]).shape == (4, 4)]
    (data_out,) = g.predecessors(mul.id)
    (data,) = g.predecessors(data_out)
    assert g.nodes[data].op == "data"  # type: ignore[union-attr]
    assert [g.nodes[p].name for p in g.predecessors(data)] == ["teacher_weight"]
    student_linear = [f for f in g.functions() if f.op == "linear" and f.path == "student"][0]
    assert [g.nodes[p].name for p in g.predecessors(student_linear.id)[1:]] == ["student_weight", "student_bias"]


def test_data_replaced_and_written_through_a_view() -> None:
    g = record(ClipsWeights(), torch.randn(2, 4))
    (linear,) = [f for f in g.functions() if f.op == "linear"]
    weight, bias = g.predecessors(linear.id)[1:]
    setter = g.predecessors(weight)[0]
    assert g.nodes[setter].op == "data"  # the weight is what ``.data = `` put there
    old, new = g.predecessors(setter)
    assert g.nodes[old].name == "fc_weight" and producer_op(g, new) == "clamp"
    assert producer_op(g, bias) == "zero_" and g.tensor(bias).shape == (4,)


def test_writes_through_detached_aliases_are_new_versions() -> None:
    g = record(WritesThroughDetach(), torch.randn(2, 4))
    (linear,) = [f for f in g.functions() if f.op == "linear"]
    weight, bias = g.predecessors(linear.id)[1:]
    assert producer_op(g, weight) == "_foreach_mul_" and producer_op(g, bias) == "_foreach_mul_"
    assert g.tensor(weight).shape == (4, 4) and g.tensor(bias).shape == (4,)


def test_writes_through_data_leave_the_model_as_it_was() -> None:
    for model in (EMATeacher(), ClipsWeights(), WritesThroughDetach()):
        before = {k: (p, p.detach().clone(), p.data_ptr()) for k, p in model.named_parameters()}
        tv.draw_graph(model, input_size=(2, 4))
        tv.summary(model, input_size=(2, 4))
        for k, p in model.named_parameters():
            same, value, ptr = before[k]
            assert p is same and p.data_ptr() == ptr and torch.equal(p, value), k


# -- deep nesting ---------------------------------------------------------------------------


LONG_CHAIN = """
import torch
from torch import nn
from tensorview.recording import Recorder

class Chain(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(2, 2))

    def forward(self, x):
        for _ in range(40_000):
            x = torch.nn.functional.linear(x, self.w)
        return x

m = Chain()
with Recorder(m) as rec:
    y = m(torch.ones(2))
del y  # the autograd chain of 40k nodes is freed here
print(sum(1 for n in rec.graph.nodes if type(n).__name__ == "FunctionNode"))
"""


def test_a_long_chain_recorded_with_grad_is_freed_as_the_plain_forwards() -> None:
    """Recording reads no op's ``grad_fn``: a node keeps the Python object of its grad_fn,
    and a chain of such nodes is freed recursively (a 40k-op chain crashed the process
    with a segmentation fault where the plain forward's chain is freed without one)."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    done = subprocess.run([sys.executable, "-c", LONG_CHAIN], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["40000"]


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_deep_nesting_records_where_the_plain_forward_runs(device: str, tmp_path: Path) -> None:
    with default_recursion_limit():
        deep_nesting_records(device, tmp_path)


def deep_nesting_records(device: str, tmp_path: Path) -> None:
    levels = plain_max_depth(device) * 9 // 10
    assert levels > 150
    model = nested(levels)
    for mode in ("same", "train"):  # "train": a copy of the module tree
        g = tv.draw_graph(model, input_size=(1, 2), device=device, mode=mode, depth=10**6)
        modules = list(g.graph.modules())
        assert len(modules) == levels + 1
        assert modules[-1].path == ".".join(["inner"] * levels) and modules[-1].depth == levels
    assert len([f for f in g.graph.functions() if f.op == "add"]) == levels
    dot = g.view(depth=10**6, expand_nested=True).source
    assert dot.count("subgraph cluster") == levels - 1  # every Nest below the root opened as a box
    assert len(g.to_json()["nodes"]) == len(g.graph.nodes)
    html = g.save(tmp_path / "deep.html")
    assert Path(html).stat().st_size > 0
    s = tv.summary(model, input_size=(1, 2), device=device, depth=None)
    assert s.total_params == 6 and len(s.rows) >= levels


# -- torch.vmap inside forward --------------------------------------------------------------


class Ensemble(nn.Module):
    """``stack_module_state`` + ``vmap(functional_call)``: three linear models at once."""

    def __init__(self) -> None:
        super().__init__()
        self.models = nn.ModuleList([nn.Linear(4, 3) for _ in range(3)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        params, buffers = torch.func.stack_module_state(list(self.models))  # type: ignore[arg-type]

        def one(p: dict[str, torch.Tensor], b: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
            return torch.func.functional_call(self.models[0], (p, b), (x,))

        return torch.vmap(one, in_dims=(0, 0, None))(params, buffers, x)


class Vmapped(nn.Module):
    def __init__(self, case: str) -> None:
        super().__init__()
        self.case = case
        self.layer = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.case == "lambda":
            return torch.vmap(lambda r: r.sum() * r)(x) + 1
        if self.case == "module":
            return torch.vmap(self.layer)(x).relu()
        if self.case == "out_dims":
            return torch.vmap(lambda r: r * 2, out_dims=1)(x)
        if self.case == "nested":
            return torch.vmap(torch.vmap(torch.exp))(x)
        # per-sample gradients
        params = {k: v.detach() for k, v in self.layer.named_parameters()}

        def loss(p: dict[str, torch.Tensor], xi: torch.Tensor) -> torch.Tensor:
            return torch.func.functional_call(self.layer, p, (xi,)).sum()

        return torch.vmap(torch.func.grad(loss), in_dims=(None, 0))(params, x)["weight"]


def ancestors(g: Graph, node_id: int) -> set[int]:
    seen: set[int] = set()
    todo = [node_id]
    while todo:
        for p in g.predecessors(todo.pop()):
            if p not in seen:
                seen.add(p)
                todo.append(p)
    return seen


def test_vmap_connects_the_real_inputs_to_the_outputs() -> None:
    x = torch.randn(2, 4)
    model = Ensemble()
    with Recorder(model) as rec:
        out = model(x)
    g = rec.graph
    assert out.shape == (3, 2, 3)
    (linear,) = [f for f in g.functions() if f.op == "linear"]
    inp, weight, bias = g.predecessors(linear.id)
    assert g.nodes[inp].name == "x"
    # the weights are the models' parameters, stacked: no constant appears
    assert not [t for t in g.tensors() if t.role == "constant"]
    stacked = {g.nodes[p].name for p in ancestors(g, weight) | ancestors(g, bias) if g.nodes[p].kind == "tensor"}
    assert {f"models_{i}_{k}" for i in range(3) for k in ("weight", "bias")} <= stacked
    # the output is made by the vmap from what the function returned, with the batched shape
    (output,) = g.outputs
    (vmap,) = [p for p in g.predecessors(output) if g.nodes[p].kind == "function"]
    assert g.nodes[vmap].op == "vmap" and g.tensor(output).shape == (3, 2, 3)  # type: ignore[union-attr]
    assert g.predecessors(vmap) == [g.successors(linear.id)[0]]
    assert g.tensor(g.successors(linear.id)[0]).shape == (2, 3)  # the per-model shape vmap's function sees


def test_vmap_variants_are_connected() -> None:
    expected = {
        "lambda": (["sum", "mul", "vmap", "add"], (2, 4)),
        "module": (["linear", "vmap", "relu"], (2, 3)),
        "out_dims": (["mul", "vmap"], (4, 2)),
        "nested": (["exp", "vmap"], (2, 4)),
        "grad": (["detach", "detach", "linear", "sum", "grad", "vmap"], (2, 3, 4)),
    }
    for case, (ops, shape) in expected.items():
        model = Vmapped(case)
        with Recorder(model) as rec:
            model(torch.randn(2, 4))
        g = rec.graph
        (output,) = g.outputs
        assert g.tensor(output).shape == shape, case
        assert [g.nodes[i].op for i in sorted(ancestors(g, output)) if g.nodes[i].kind == "function"] == ops, case
        assert g.inputs[0] in ancestors(g, output), case  # the output depends on the input
        assert not [t for t in g.tensors() if t.role == "constant"], case


class KeepsNothing(nn.Module):
    """Notes whether the tensors made inside a vmap outlive it (they do not without us)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        refs = []

        def f(r: torch.Tensor) -> torch.Tensor:
            y = r * 2
            refs.append(weakref.ref(torch._C._functorch.get_unwrapped(y)))
            return y.sum()

        out = torch.vmap(f)(x)
        gc.collect()
        self.alive = [w() is not None for w in refs]
        return out


def test_vmap_intermediates_are_freed_as_without_recording() -> None:
    model = KeepsNothing()
    model(torch.randn(2, 4))
    assert model.alive == [False]
    g = record(model, torch.randn(2, 4))
    assert model.alive == [False]
    assert [f.op for f in g.functions()] == ["mul", "sum", "vmap"]


class TwoVmaps(nn.Module):
    """The same per-sample op in two vmaps (chunked, then whole): meta replay would stand a
    plain tensor in for the second one's batched result."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.vmap(torch.sin, chunk_size=1)(x) + torch.vmap(torch.sin)(x)


def test_vmap_on_meta_is_the_graph_on_cpu() -> None:
    graphs = [tv.draw_graph(TwoVmaps(), input_size=(2, 4), device=d).graph for d in ("cpu", "meta")]
    cpu, meta = ([(n.kind, n.name, getattr(n, "shape", None)) for n in g.nodes] for g in graphs)
    assert meta == cpu
    assert [f.op for f in graphs[1].functions()].count("vmap") == 3


class LongVmap(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def f(r: torch.Tensor) -> torch.Tensor:
            for _ in range(50):
                r = r * 1.5
            return r

        return torch.vmap(f)(x)


def test_vmap_intermediates_leave_no_bookkeeping_behind() -> None:
    model = LongVmap()
    with Recorder(model) as rec:
        seen = []
        model.register_forward_hook(lambda *_: seen.append(rec._session.transforms.pending()))  # type: ignore[union-attr]
        model(torch.randn(2, 4))
    assert seen == [1]  # the output's, not yet handed out: the 49 intermediates' went with them
    assert [f.op for f in rec.graph.functions()].count("mul") == 50

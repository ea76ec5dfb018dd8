"""``torch.export`` programs and ``torch.fx`` GraphModules drawn from their graphs: the
module hierarchy rebuilt from ``nn_module_stack`` equals the eager recording's (paths,
call counts, each call's input and output shapes), parameters and buffers come from the
graph signature, shapes from node metadata, and nothing of the user's is altered."""

from __future__ import annotations

import functools
import itertools
from typing import Any

import pytest
import torch
from torch import nn
from torch.export import Dim

import tensorview as tv
from tensorview.graph import FunctionNode, Graph, ModuleNode
from tensorview.transform import ViewOptions, build_view

from .fixtures import needs
from .fixtures.cost_models import tiny_llama_config
from .fixtures.hf import written_for
from .fixtures.models import InplaceMethods

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)


class Block(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.bn(self.conv(x)))


class SmallCNN(nn.Module):
    """conv/bn/relu blocks in a Sequential, a module called twice, an op at the root."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3), Block(8), Block(8))
        self.act = nn.ReLU()
        self.fc = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act(self.features(x))
        return self.fc(self.act(x.mean((2, 3))))


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU())
        self.head = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.layers(x)).softmax(-1)


def _llama() -> nn.Module:
    transformers = pytest.importorskip("transformers", reason=needs.TRANSFORMERS)
    # eager attention: with SDPA, transformers skips the causal mask in the eager forward
    # but builds it while exporting, so the two programs differ (not the drawings)
    return transformers.AutoModel.from_config(tiny_llama_config(attn_implementation="eager"))


MODELS: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "cnn": (SmallCNN, lambda: (torch.randn(1, 3, 8, 8),), {}),
    "mlp": (MLP, lambda: (torch.randn(2, 6),), {}),
    "llama": (_llama, lambda: (torch.randint(0, 100, (1, 8)),), {"use_cache": False}),
}


@functools.cache
def exported(name: str) -> tuple[nn.Module, tuple[Any, ...], dict[str, Any], torch.export.ExportedProgram]:
    make, inputs, kwargs = MODELS[name]
    torch.manual_seed(0)
    model = make().eval()
    args = inputs()
    return model, args, kwargs, torch.export.export(model, args, kwargs=kwargs)


@functools.cache
def eager(name: str) -> Graph:
    model, args, kwargs, _ = exported(name)
    with torch.no_grad(), tv.Recorder(model) as rec:
        model(*args, **kwargs)
    return rec.graph.graph


def calls(g: Graph) -> dict[tuple[str, int], tuple[str, list[tuple[int, ...]], list[tuple[int, ...]]]]:
    """Every module call: class, shapes of the arguments its ops read (a closed call reads
    them all) and of the results read after it or returned.  Arguments never read and
    results nobody reads exist in the eager forward only; a traced program drops them."""
    out = {}
    returned = set(g.outputs)
    for m in g.modules():

        def inside(i: int, m: ModuleNode = m) -> bool:
            return m.id < i < m.end

        ins = g.input_tensors(m.id)
        if m.parent is not None and not m.opaque:
            ins = [t for t in ins if any(inside(s) and _reads(g, s) for s in g.successors(t))]
        res = [t for t in g.output_tensors(m.id) if t in returned or any(not inside(s) for s in g.successors(t))]
        out[(m.path, m.call_index)] = (m.cls_name, sorted(g.shapes(ins)), sorted(g.shapes(res)))
    return out


def _reads(g: Graph, node_id: int) -> bool:
    n = g[node_id]
    return isinstance(n, FunctionNode) or (isinstance(n, ModuleNode) and n.opaque)


def check_views(g: Graph) -> None:
    """Consistent views at every depth, folded or not; the inputs and outputs are drawn."""
    for depth, fold, hide in itertools.product(range(5), (False, True), (True, False)):
        v = build_view(g, ViewOptions(depth=depth, fold=fold, hide_module_functions=hide))
        v.lint()
        drawn = {n.id for n in v.nodes}
        assert set(g.inputs) <= drawn and set(g.outputs) <= drawn


@pytest.mark.parametrize("name", sorted(MODELS))
def test_exported_program_has_the_eager_module_calls(name: str) -> None:
    model, _, _, ep = exported(name)
    before = len(ep.graph.nodes)
    g = tv.draw_graph(ep).graph  # no inputs needed: drawn from the graph, nothing runs
    g.lint()
    assert calls(g) == calls(eager(name))
    check_views(g)
    # parameters and buffers from the graph signature, named by their qualified names
    made = {t.source_name: t.role for t in g.tensors() if t.is_param}
    params = {n for n, _ in model.named_parameters()}
    assert {n for n, r in made.items() if r == "parameter"} == params
    assert {n for n, r in made.items() if r == "buffer"} <= {n for n, _ in model.named_buffers()}
    assert [g[t].source_name for t in g.inputs] == [n for n in ep.graph_signature.user_inputs if isinstance(n, str)]
    assert len(ep.graph.nodes) == before


def test_small_cnn_draws_as_its_eager_recording_at_every_depth() -> None:
    """An ExportedProgram and its unlifted module (``mode="eval"``, the default, used to
    fail with "Calling train() is not supported") give the eager views, node for node."""
    model, args, _, ep = exported("cnn")
    want = tv.draw_graph(model, args[0])
    for program in (ep, ep.module()):
        got = tv.draw_graph(program)
        for depth, fold, hide in itertools.product(range(5), (False, True), (True, False)):
            opts = dict(depth=depth, fold=fold, hide_module_functions=hide)
            a, b = (
                build_view(got.graph, got.options.replace(**opts)),
                build_view(want.graph, want.options.replace(**opts)),
            )
            assert a.edge_names() == b.edge_names(), opts
    # the second call of `act` is call 1 of the same path
    acts = [m for m in got.graph.modules() if m.path == "act"]
    assert [m.call_index for m in acts] == [0, 1]
    assert [got.graph.shapes(got.graph.input_tensors(m.id)) for m in acts] == [[(1, 8, 6, 6)], [(1, 8)]]


@pytest.mark.parametrize("name", ["cnn", "mlp", "llama"])
def test_unlifted_module_keeps_the_hierarchy(name: str) -> None:
    """``ep.module()`` failed under ``mode="eval"`` ("Calling train() is not supported")
    and lost the hierarchy with ``mode="same"``; given inputs are checked, not run."""
    _, args, kwargs, ep = exported(name)
    for mode in ("eval", "same"):
        g = tv.draw_graph(ep.module(), args[0], mode=mode, **kwargs).graph
        assert calls(g) == calls(eager(name))
    g = tv.draw_graph(ep.module()).graph
    assert calls(g) == calls(eager(name))
    assert {t.source_name for t in g.tensors() if t.role == "parameter"} == {
        n for n, _ in exported(name)[0].named_parameters()
    }


@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_symbolic_trace_with_inputs_is_recorded_as_its_eager_module(name: str) -> None:
    """A GraphModule is a runnable module: given inputs, it is recorded, with the ops inside
    the leaf modules fx did not trace into and the hierarchy from ``nn_module_stack``."""
    model, args, _, _ = exported(name)
    gm = torch.fx.symbolic_trace(model)
    with pytest.raises(tv.InvalidInputError, match="no shape metadata.*pass input_size or input_data: it is then rec"):
        tv.draw_graph(gm)
    state = {k: v.clone() for k, v in gm.state_dict().items()}
    g = tv.draw_graph(gm, input_size=tuple(args[0].shape)).graph
    assert calls(g) == calls(eager(name))
    check_views(g)
    assert [f.op for f in g.functions()] == [f.op for f in eager(name).functions()]
    assert [(m.path, m.parent and g[m.parent].path) for m in g.modules()] == [
        (m.path, m.parent and eager(name)[m.parent].path) for m in eager(name).modules()
    ]
    assert not any(m.opaque for m in g.modules()) and g.warnings == []
    # the user's graph module is untouched
    assert not any("tensor_meta" in n.meta or "val" in n.meta for n in gm.graph.nodes)
    assert all(torch.equal(v, state[k]) for k, v in gm.state_dict().items())
    assert "forward" not in vars(gm)


@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_symbolic_trace_without_inputs_is_imported_and_says_leaves_are_not_traced(name: str) -> None:
    model, args, _, _ = exported(name)
    gm = torch.fx.symbolic_trace(model)
    torch.fx.passes.shape_prop.ShapeProp(gm).propagate(*args)  # shapes: importable as it is
    drawn = tv.draw_graph(gm)
    g = drawn.graph
    assert calls(g) == calls(eager(name))
    leaf_modules = {path for path, m in model.named_modules() if path and not list(m.children())}
    closed = {m.path for m in g.modules() if m.opaque}
    assert closed == leaf_modules
    assert len(g.warnings) == 1 and "internals are not traced" in g.warnings[0]
    assert {g[i].path for i in g.annotations.layer("warning")} == leaf_modules
    assert "⚠ modules fx did not trace into" in drawn.source  # said in the picture


def test_fx_ops_read_like_the_recorder_and_in_place_ops_make_versions() -> None:
    """``y.relu_()`` then ``y.sigmoid()``: sigmoid reads the new version, as recorded."""
    model = InplaceMethods()
    x = torch.randn(2, 4)
    g = tv.draw_graph(torch.fx.symbolic_trace(model), x).graph
    relu, sigmoid = g.by_name("relu_"), g.by_name("sigmoid")
    assert g.predecessors(sigmoid.id) == g.output_tensors(relu.id)
    # fc is a leaf fx did not trace into: recorded inside, as in the eager module
    assert [(f.op, f.path) for f in g.functions()] == [(f.op, f.path) for f in eager_graph(model, x).functions()]


def eager_graph(model: nn.Module, *args: Any) -> Graph:
    with tv.Recorder(model) as rec:
        model(*args)
    return rec.graph.graph


class Split(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> Any:
        a, b = self.fc(x).split(2, dim=-1)
        return torch.cat([a * 2, b], 0).max(dim=0)


def test_dynamic_sizes_come_from_the_given_inputs_and_bad_inputs_are_named() -> None:
    ep = torch.export.export(Split(), (torch.randn(3, 4),), dynamic_shapes=({0: Dim("batch", min=2, max=64)},))
    g = tv.draw_graph(ep).graph  # the example size it was traced with
    split = g.by_name("split")
    assert g.shapes(g.output_tensors(split.id)) == [(3, 2), (3, 2)]  # one node per result, no getitem
    assert g.shapes(g.outputs) == [(2,), (2,)]
    g = tv.draw_graph(ep, input_size=(7, 4)).graph
    assert g.shapes(g.input_tensors(g.by_name("cat").id)) == [(7, 2), (7, 2)]
    assert g.shapes(g.output_tensors(g.by_name("cat").id)) == [(14, 2)]
    with pytest.raises(tv.InvalidInputError, match=r"shape\[1\] to be equal to 4, but got 5"):
        tv.draw_graph(ep, input_size=(7, 5))
    with pytest.raises(tv.InvalidInputError, match="<= 64, but got 65"):
        tv.draw_graph(ep, input_size=(65, 4))
    with pytest.raises(tv.InvalidInputError, match="dtype torch.float64, the program takes torch.float32"):
        tv.draw_graph(ep, torch.zeros(7, 4, dtype=torch.float64))
    with pytest.raises(tv.InvalidInputError, match="mode='train' cannot apply to a ExportedProgram"):
        tv.draw_graph(ep, mode="train")
    with pytest.raises(tv.InvalidInputError, match="did you mean depth"):
        tv.draw_graph(ep, dept=2)


class Cast(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(torch.float32)  # returns x itself


class Norm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.to(torch.float32)  # x itself: export reads later uses of x through h
        return self.weight * h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)


class Residual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm, self.cast, self.fc = Norm(), Cast(), nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.cast(self.norm(x))) + x


def test_no_op_casts_read_after_their_call_are_the_residual() -> None:
    """The residual ``+ x`` reads the norm's input, not a second output of the norm;
    a module returning ``x.to(...)`` unchanged still returns it."""
    model, x = Residual(), torch.randn(2, 4)
    g = tv.draw_graph(torch.export.export(model, (x,))).graph
    assert calls(g) == calls(eager_graph(model, x))
    norm = next(m for m in g.modules() if m.path == "norm")
    assert len(g.output_tensors(norm.id)) == 1
    residual = g.by_name("add_1")
    assert residual.path == "" and g.inputs[0] in g.predecessors(residual.id)


def test_unknown_objects_and_programs_without_inputs_are_clear_errors() -> None:
    with pytest.raises(tv.InvalidTypeError, match="draw_graph needs a torch.nn.Module"):
        tv.draw_graph(object())
    gm = torch.fx.symbolic_trace(MLP())
    with pytest.raises(tv.RecordingError, match="unexpected keyword argument 'y'"):
        tv.draw_graph(gm, input_data={"y": torch.randn(2, 6)})  # recorded: as a module says it
    ep = exported("mlp")[3]
    with pytest.raises(tv.InvalidInputError, match="do not match the program's inputs"):
        tv.draw_graph(ep, input_data=[torch.randn(2, 6), torch.randn(2, 6)])

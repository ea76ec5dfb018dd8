"""Importers: programs torch has already traced, drawn from their graphs without running
the model.  ``import_program`` takes a ``torch.export.ExportedProgram`` or a
``torch.fx.GraphModule`` (``symbolic_trace``, ``ep.module()``) and builds the IR through
``GraphBuilder``: module calls from each node's ``meta["nn_module_stack"]``, shapes and
dtypes from ``meta["val"]`` / ``meta["tensor_meta"]``, parameters and buffers from the
graph signature or the module's own tensors.  Pieces: meta.py (reading node metadata),
walk.py (nodes to items), build.py (call instances and the IR), inputs.py (given inputs)."""

from __future__ import annotations

import itertools
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.fx import GraphModule

from ..errors import InvalidTypeError
from ..graph import Graph
from .build import Builder
from .inputs import check_inputs, program_inputs, propagate, require_inputs
from .meta import Dims, Entry, has_shapes
from .walk import Walk

#: the kinds of program ``import_program`` takes
PROGRAMS = (ExportedProgram, GraphModule)
_ROLES = {InputKind.PARAMETER: "parameter", InputKind.BUFFER: "buffer", InputKind.CONSTANT_TENSOR: "constant"}


#: on each closed leaf call of an imported GraphModule, and in ``graph.warnings``
LEAVES_NOT_TRACED = (
    "modules fx did not trace into (leaf modules such as Linear) are drawn closed: their internals "
    "are not traced; pass input_size or input_data to record the GraphModule with them"
)


def is_program(obj: Any, inputs: bool = False) -> bool:
    """``obj`` is drawn from its graph.  With ``inputs`` given, a GraphModule whose graph
    calls modules (leaves fx did not trace into) is not: it is a runnable module, recorded
    like any other (recording/fxscope.py), so the ops inside its leaves are drawn too."""
    if inputs and isinstance(obj, GraphModule) and _leaf_calls(obj):
        return False
    return isinstance(obj, PROGRAMS)


def _leaf_calls(gm: GraphModule) -> set[str]:
    """The paths of the modules ``gm``'s graph calls for a result (not guards: export's
    ``_guards_fn`` returns nothing)."""
    return {str(n.target) for n in gm.graph.nodes if n.op == "call_module" and n.users}


def import_program(
    program: ExportedProgram | GraphModule, inputs: tuple[tuple[Any, ...], dict[str, Any]] | None
) -> Graph:
    """The IR ``Graph`` of ``program``.  ``inputs`` (``(args, kwargs)``, optional) are
    checked against the program's input specs and fill in its dynamic sizes; a
    GraphModule without shape metadata needs them (propagated on fake tensors)."""
    if isinstance(program, ExportedProgram):
        return _exported(program, inputs)
    if isinstance(program, GraphModule):
        return _graph_module(program, inputs)
    raise InvalidTypeError(
        f"expected a torch.export.ExportedProgram or torch.fx.GraphModule, got {type(program).__name__}"
    )


def _exported(ep: ExportedProgram, inputs: tuple[tuple[Any, ...], dict[str, Any]] | None) -> Graph:
    sig = ep.graph_signature
    roles: dict[str, tuple[str, str]] = {}
    for spec in sig.input_specs:
        name = getattr(spec.arg, "name", None)
        if name is None:
            continue
        if spec.kind == InputKind.USER_INPUT:
            roles[name] = ("input", name)
        elif spec.kind in _ROLES:
            roles[name] = (_ROLES[spec.kind], spec.target or name)
        else:  # tokens, script objects: no tensors of the model
            roles[name] = ("skip", name)
    dims = Dims()
    if inputs is not None:
        users = set(sig.user_inputs)
        placeholders = [n for n in ep.graph.nodes if n.op == "placeholder" and n.name in users]
        check_inputs(placeholders, *inputs, ep.call_spec.in_spec, ep.range_constraints, dims)
    walk = Walk(dims, roles=roles)
    walk.run(ep.graph, ep.graph_module, [s.kind == OutputKind.USER_OUTPUT for s in sig.output_specs])
    return Builder(walk, walk.root or Entry("", "", "ExportedProgram", "torch.export")).build()


def _graph_module(gm: GraphModule, inputs: tuple[tuple[Any, ...], dict[str, Any]] | None) -> Graph:
    params = {name: "buffer" for name, _ in gm.named_buffers(remove_duplicate=False)}
    params.update({name: "parameter" for name, _ in gm.named_parameters(remove_duplicate=False)})
    first = next(itertools.chain(gm.parameters(), gm.buffers()), None)
    device = first.device if first is not None else torch.device("cpu")
    calls = ("placeholder", "call_function", "call_method", "call_module")
    missing = [n for n in gm.graph.nodes if n.op in calls and n.users and not has_shapes(n)]
    dims = Dims()
    shapes = None
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if missing:
        if inputs is None:
            raise require_inputs(missing, bool(_leaf_calls(gm)))
        results = propagate(gm, *inputs, device)
        shapes = results.get
    elif inputs is not None:
        ranges = getattr(gm, "range_constraints", None)
        check_inputs(placeholders, *inputs, getattr(gm, "_in_spec", None), ranges, dims)
    walk = Walk(dims, params=params, shapes=shapes, device=str(device))
    walk.run(gm.graph, gm)
    root = walk.root or Entry("", "", gm._get_name(), type(gm).__module__)
    g = Builder(walk, root).build()
    leaves = _leaf_calls(gm)
    for m in g.modules():  # (the picture says so: graph.warnings)
        if m.opaque and m.path in leaves:
            g.warn(LEAVES_NOT_TRACED, m.id)
    return g


__all__ = ["LEAVES_NOT_TRACED", "PROGRAMS", "import_program", "is_program", "program_inputs"]

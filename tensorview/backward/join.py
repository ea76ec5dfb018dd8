"""The joint graph: a recorded forward with its backward pass beside it.

The forward graph is copied node by node through a new ``NodeFactory``; the autograd
nodes each op created (``BackwardProbe``) are inserted right after that op's results, in
the op's module call, so module boxes hold both passes and depth, folding and
``expand_nested`` treat them as any op.  ``AccumulateGrad`` sits after its parameter's
first node and reads it.  Gradients run in reverse: each autograd node writes one
gradient tensor per input it differentiates (role ``intermediate``, hidden with inner
tensors), read by the autograd node of the op that made that input.  The ``backward``
layer marks every node of the backward pass (``"grad"`` for gradient tensors), and
``saved_bytes`` gives what each autograd node saved (storage bytes, cost/memory.py).

``forward=False`` keeps only the backward pass inside the module boxes (and the parameter
nodes): torchviz's picture with module names.  Nodes keep their ids' order: a backward
node's id comes right after its forward op, not when the backward would run.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any

import torch

from ..cost.memory import storage_nbytes
from ..graph import BACKWARD_LAYER, FunctionNode, Graph, ModuleNode, NodeFactory, TensorNode, unhandled
from .probe import BackwardProbe
from .run import BACKWARD_US, run_backward
from .walk import SAVED_BYTES, _post_order, saved_attrs, wrapped_number
from .walk import _next as _next_of

BACKWARD = BACKWARD_LAYER


def _saved_bytes(fn: Any) -> int:
    """Storage bytes of what ``fn`` saved, as ``saved_tensors_hooks`` sees them: its
    ``_saved_*`` attributes (named once per class) and a custom ``autograd.Function``'s
    ``ctx.save_for_backward`` tensors, but not Python numbers saved as tensors."""
    total = 0
    for attr in (*saved_attrs(fn), *(("saved_tensors",) if hasattr(type(fn), "saved_tensors") else ())):
        try:
            val = getattr(fn, attr)
        except RuntimeError:
            continue
        for t in val if isinstance(val, tuple) else (val,):
            if isinstance(t, torch.Tensor) and not wrapped_number(t):
                total += storage_nbytes(t)
    return total


#: ``(reader, shape, dtype, device)`` of one gradient an autograd node writes (reader: the
#: index of the autograd node that reads it)
Grad = tuple[int, tuple[int | str, ...], str, str]


class _Plan:
    """Where each autograd node goes, computed once for both graphs, in integers and
    strings only: autograd nodes are numbered in post order and no torch object is kept,
    so the plan (kept to draw the backward pass alone when asked) keeps nothing alive."""

    def __init__(self, g: Graph, probe: BackwardProbe, outputs: Sequence[torch.Tensor]) -> None:
        fns = _post_order([t.grad_fn for t in outputs if t.grad_fn is not None])
        index = {fn: i for i, fn in enumerate(fns)}
        self.fns = fns  # dropped by join_backward once used
        self.times: dict[int, float] = {}
        first_param: dict[int, int] = {}  # id(parameter) -> id of its first node
        by_name = {n: i for i, n in probe.param_names.items()}
        for n in g.nodes:
            if isinstance(n, TensorNode) and n.is_param and n.source_name in by_name:
                first_param.setdefault(by_name[n.source_name], n.id)
        self.after: dict[int, list[int]] = {}  # old node id -> autograd nodes placed after it
        self.skip: dict[int, int | None] = {}  # the recorder's own aliases at call boundaries -> what they read
        #: per autograd node: (class name, id of its parameter's node, saved bytes, gradients)
        self.info: dict[int, tuple[str, int | None, int, list[Grad]]] = {}
        metas: dict[Any, list[Any]] = {}  # autograd node -> its _input_metadata, read once
        output_tensors = g.output_tensors
        for i, fn in enumerate(fns):
            var = getattr(fn, "variable", None)
            recomputed = False
            if isinstance(var, torch.Tensor):
                owner = first_param.get(id(var))
            else:
                seq = fn._sequence_nr()
                owner = probe.op_owner(seq)
                recomputed = owner in probe.recomputed
                if owner is None and type(fn).__name__ == "AliasBackward0":
                    nxt = _next_of(fn)
                    self.skip[i] = index[nxt[0]] if nxt else None
                    continue
                if owner is None:
                    owner = probe.owner(seq)
                else:
                    outs = output_tensors(owner)
                    owner = max(outs) if outs else owner
            self.after.setdefault(owner if owner is not None else -1, []).append(i)
            param = first_param.get(id(var)) if var is not None else None
            # a checkpointed op's node keeps nothing: reading what it "saved" would recompute the
            # checkpointed forward (torch.utils.checkpoint's unpack hook) and run user code again
            nbytes = 0 if recomputed else _saved_bytes(fn)
            self.info[i] = (type(fn).__name__, param, nbytes, _gradients(fn, index, metas))
        #: per output: (index of its autograd node or None, shape)
        self.outputs = [(index.get(t.grad_fn), tuple(t.shape)) for t in outputs]


def _gradients(fn: Any, index: dict[Any, int], metas: dict[Any, list[Any]]) -> list[Grad]:
    """The gradients ``fn`` writes: one per input it differentiates, shaped as autograd
    keeps it for the reader (``_input_metadata``, read once per reader into ``metas``)."""
    out = []
    for u, k in getattr(fn, "next_functions", ()):
        if u is None:
            continue
        meta = metas.get(u)
        if meta is None:
            meta = metas[u] = [
                (
                    tuple(d if isinstance(d, int) else str(d) for d in m.shape),
                    str(m.dtype).removeprefix("torch."),
                    str(m.device),
                )
                for m in u._input_metadata
            ]
        out.append((index[u], *meta[k]) if k < len(meta) else (index[u], (), "float32", "cpu"))
    return out


class BackwardGraphs:
    """The joint graph (made at once) and the backward pass alone (made when first asked
    for: ``graph.backward_view(backward_only=True)``); ``pair[False]``, ``pair[True]``."""

    def __init__(self, g: Graph, plan: _Plan) -> None:
        self._g, self._plan = g, plan
        self._made: dict[bool, Graph] = {}

    def __getitem__(self, backward_only: bool) -> Graph:
        key = bool(backward_only)
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = _quiet(_emit, self._g, self._plan, not key)
        return made


def _quiet(f: Any, *args: Any) -> Any:
    """``f(*args)`` with the cyclic GC paused: only acyclic plain data is made (as in
    transform/build.py), and its repeated scans of a big heap cost a third of the time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return f(*args)
    finally:
        if enabled:
            gc.enable()


def join_backward(
    g: Graph, probe: BackwardProbe, outputs: Sequence[torch.Tensor], *, run: bool = False
) -> BackwardGraphs:
    """The joint graph of ``g`` (recorded with ``probe`` and grad enabled) and the
    autograd graph of ``outputs``, and the backward pass alone (module docstring), as
    ``BackwardGraphs``; ``run``: run the backward once, timing each node (run.py: the
    ``backward_us`` layer)."""
    outputs = [t for t in outputs if isinstance(t, torch.Tensor)]
    plan = _quiet(_Plan, g, probe, outputs)
    if run:
        index = {fn: i for i, fn in enumerate(plan.fns)}
        plan.times = {index[fn]: us for fn, us in run_backward(outputs, [plan.fns[i] for i in plan.info]).items()}
    plan.fns = []
    pair = BackwardGraphs(g, plan)
    pair[False]  # noqa: B018 (the joint graph, drawn by default, is made now)
    return pair


def _emit(g: Graph, plan: _Plan, forward: bool) -> Graph:
    after = {k: list(v) for k, v in plan.after.items()}
    skip = plan.skip
    f = NodeFactory()
    new: dict[int, int] = {}  # old id -> new id
    stack: list[tuple[ModuleNode, ModuleNode]] = []  # (old call, new call)
    placed: dict[int, int] = {}  # autograd node -> its node
    marks: dict[int, str] = {}
    saved: dict[int, int] = {}
    grads: list[tuple[int, int]] = []  # (gradient tensor id, autograd node reading it)

    def close_until(node_id: int) -> None:
        while stack and not stack[-1][0].contains(node_id):
            old, m = stack.pop()
            f.end_call(m)
            m.failed, m.opaque = old.failed, old.opaque

    def place(fns_here: list[int], parent: ModuleNode) -> None:
        for fn in fns_here:
            name, param, nbytes, outs = plan.info[fn]
            node = f.add_function(name, parent, [new[param]] if param in new else [])
            placed[fn] = node.id
            marks[node.id] = "node"
            saved[node.id] = nbytes
            for u, shape, dtype, device in outs:
                t = f.add_tensor("grad", parent, shape, dtype, device, "intermediate", producer=node.id)
                marks[t.id] = "grad"
                grads.append((t.id, u))

    for old in g.nodes:
        close_until(old.id)
        parent = stack[-1][1] if stack else None
        match old:
            case ModuleNode():
                m = f.add_module(old.path, old.cls_name, old.cls_module, parent, method=old.method)
                new[old.id] = m.id
                stack.append((old, m))
            case FunctionNode():
                if forward and parent is not None:
                    new[old.id] = f.add_function(old.op, parent).id
                    f.graph.nodes[new[old.id]].failed = old.failed  # type: ignore[union-attr]
            case TensorNode():
                if parent is not None and (forward or old.is_param):
                    t = f.add_tensor(
                        old.name, parent, old.shape, old.dtype, old.device, old.role,
                        copy_of=new.get(old.copy_of) if old.copy_of is not None else None,
                        source_name=old.source_name,
                    )  # fmt: skip
                    t.field = old.field
                    new[old.id] = t.id
            case _:
                unhandled(old)
        if old.id in after and parent is not None:
            place(after.pop(old.id), parent)
    root = f.graph.nodes[0] if f.graph.nodes else None
    if isinstance(root, ModuleNode):
        for fns_left in after.values():
            place(fns_left, root)
    while stack:
        old, m = stack.pop()
        f.end_call(m)
        m.failed, m.opaque = old.failed, old.opaque
    ng = f.graph
    for s, d in g.edges:
        if s in new and d in new:
            ng.edges.add(new[s], new[d])

    def target(u: int | None) -> int | None:
        while u is not None and u in skip:
            u = skip[u]
        return placed.get(u) if u is not None else None

    for tid, u in grads:
        if (dst := target(u)) is not None:
            ng.edges.add(tid, dst)
    if forward:
        for i in g.inputs:
            ng.inputs.append(new[i])
        for o in g.outputs:
            f.mark_output(ng.tensor(new[o]))
        # the backward pass starts at the outputs: each output into its autograd node
        for fn_index, shape in plan.outputs:
            dst = target(fn_index)
            mine = [new[o] for o in g.outputs if ng.tensor(new[o]).shape == shape]
            if dst is not None and mine:
                ng.edges.add(mine[0], dst)
    f.close()
    for name in g.annotations:
        ng.annotations.set(name, {new[k]: v for k, v in g.annotations.layer(name).items() if k in new})
    ng.annotations.set(BACKWARD, marks)
    if plan.times:
        ng.annotations.set(BACKWARD_US, {placed[fn]: us for fn, us in plan.times.items() if fn in placed})
    # the cost model's saved_bytes of ops and calls (stats=...) stay beside the autograd nodes'
    ng.annotations.set(SAVED_BYTES, {**ng.annotations.layer(SAVED_BYTES), **{k: v for k, v in saved.items() if v}})
    return ng

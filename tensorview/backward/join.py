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

from collections.abc import Sequence
from typing import Any

import torch

from ..cost.memory import storage_nbytes
from ..graph import BACKWARD_LAYER, FunctionNode, Graph, ModuleNode, NodeFactory, TensorNode, unhandled
from .probe import BackwardProbe
from .run import BACKWARD_US, run_backward
from .walk import SAVED_BYTES, _post_order, saved_attrs
from .walk import _next as _next_of

BACKWARD = BACKWARD_LAYER


def _saved_bytes(fn: Any) -> int:
    """Storage bytes of what ``fn`` saved (its ``_saved_*`` attributes, named once per class)."""
    total = 0
    for attr in saved_attrs(fn):
        try:
            val = getattr(fn, attr)
        except RuntimeError:
            continue
        for t in val if isinstance(val, tuple) else (val,):
            if isinstance(t, torch.Tensor):
                total += storage_nbytes(t)
    return total


class _Plan:
    """Where each autograd node goes, computed once for both graphs."""

    def __init__(self, g: Graph, probe: BackwardProbe, outputs: Sequence[torch.Tensor]) -> None:
        self.outputs = [t for t in outputs if isinstance(t, torch.Tensor)]
        self.times: dict[Any, float] = {}
        fns = _post_order([t.grad_fn for t in self.outputs if t.grad_fn is not None])
        self.first_param: dict[int, int] = {}  # id(parameter) -> id of its first node
        by_name = {n: i for i, n in probe.param_names.items()}
        for n in g.nodes:
            if isinstance(n, TensorNode) and n.is_param and n.source_name in by_name:
                self.first_param.setdefault(by_name[n.source_name], n.id)
        self.after: dict[int, list[Any]] = {}  # old node id -> autograd nodes placed after it
        self.skip: dict[Any, Any] = {}  # the recorder's own aliases at call boundaries -> what they read
        #: autograd node -> (class name, id of its parameter's node, saved bytes, gradients)
        self.info: dict[Any, tuple[str, int | None, int, list[tuple[Any, tuple[int | str, ...], str, str]]]] = {}
        for fn in fns:
            var = getattr(fn, "variable", None)
            if isinstance(var, torch.Tensor):
                owner = self.first_param.get(id(var))
            else:
                seq = fn._sequence_nr()
                owner = probe.op_owner(seq)
                if owner is None and type(fn).__name__ == "AliasBackward0":
                    self.skip[fn] = next(iter(_next_of(fn)), None)
                    continue
                if owner is None:
                    owner = probe.owner(seq)
                else:
                    outs = g.output_tensors(owner)
                    owner = max(outs) if outs else owner
            self.after.setdefault(owner if owner is not None else -1, []).append(fn)
            param = self.first_param.get(id(var)) if var is not None else None
            self.info[fn] = (type(fn).__name__, param, _saved_bytes(fn), _gradients(fn))


def _gradients(fn: Any) -> list[tuple[Any, tuple[int | str, ...], str, str]]:
    """``(reader, shape, dtype, device)`` of each gradient ``fn`` writes: one per input it
    differentiates, shaped as autograd keeps it for the reader (``_input_metadata``)."""
    out = []
    for u, k in getattr(fn, "next_functions", ()):
        if u is None:
            continue
        meta = u._input_metadata
        if k < len(meta):
            m = meta[k]
            shape = tuple(d if isinstance(d, int) else str(d) for d in m.shape)
            out.append((u, shape, str(m.dtype).removeprefix("torch."), str(m.device)))
        else:
            out.append((u, (), "float32", "cpu"))
    return out


def join_backward(
    g: Graph, probe: BackwardProbe, outputs: Sequence[torch.Tensor], *, run: bool = False
) -> tuple[Graph, Graph]:
    """The joint graph of ``g`` (recorded with ``probe`` and grad enabled) and the
    autograd graph of ``outputs``, and the backward pass alone (module docstring); ``run``:
    run the backward once, timing each node (run.py: the ``backward_us`` layer)."""
    plan = _Plan(g, probe, outputs)
    if run:
        plan.times = run_backward(plan.outputs, list(plan.info))
    return _emit(g, plan, True), _emit(g, plan, False)


def _emit(g: Graph, plan: _Plan, forward: bool) -> Graph:
    after = {k: list(v) for k, v in plan.after.items()}
    skip, outputs = plan.skip, plan.outputs
    f = NodeFactory()
    new: dict[int, int] = {}  # old id -> new id
    stack: list[tuple[ModuleNode, ModuleNode]] = []  # (old call, new call)
    placed: dict[Any, int] = {}
    marks: dict[int, str] = {}
    saved: dict[int, int] = {}
    grads: list[tuple[int, Any]] = []  # (gradient tensor id, autograd node reading it)

    def close_until(node_id: int) -> None:
        while stack and not stack[-1][0].contains(node_id):
            old, m = stack.pop()
            f.end_call(m)
            m.failed, m.opaque = old.failed, old.opaque

    def place(fns_here: list[Any], parent: ModuleNode) -> None:
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

    def target(u: Any) -> int | None:
        while u in skip:
            u = skip[u]
        return placed.get(u)

    for tid, u in grads:
        if (dst := target(u)) is not None:
            ng.edges.add(tid, dst)
    if forward:
        for i in g.inputs:
            ng.inputs.append(new[i])
        for o in g.outputs:
            f.mark_output(ng.tensor(new[o]))
        # the backward pass starts at the outputs: each output into its autograd node
        for out in outputs:
            dst = target(out.grad_fn) if out.grad_fn is not None else None
            mine = [new[o] for o in g.outputs if ng.tensor(new[o]).shape == tuple(out.shape)]
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

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
from .walk import SAVED_BYTES, _post_order
from .walk import _next as _next_of

BACKWARD = BACKWARD_LAYER


def _saved_bytes(fn: Any) -> int:
    total = 0
    for attr in dir(fn):
        if attr.startswith("_saved_"):
            try:
                val = getattr(fn, attr)
            except RuntimeError:
                continue
            for t in val if isinstance(val, tuple) else (val,):
                if isinstance(t, torch.Tensor):
                    total += storage_nbytes(t)
    return total


def join_backward(g: Graph, probe: BackwardProbe, outputs: Sequence[torch.Tensor], *, forward: bool = True) -> Graph:
    """The joint graph of ``g`` (recorded with ``probe`` and grad enabled) and the
    autograd graph of ``outputs`` (module docstring)."""
    fns = _post_order([t.grad_fn for t in outputs if isinstance(t, torch.Tensor) and t.grad_fn is not None])
    first_param: dict[str, int] = {}
    for n in g.nodes:
        if isinstance(n, TensorNode) and n.is_param and n.source_name:
            first_param.setdefault(n.source_name, n.id)
    after: dict[int, list[Any]] = {}  # old node id -> autograd nodes placed after it
    skip: dict[Any, Any] = {}  # the recorder's own aliases at call boundaries -> what they read
    for fn in fns:
        var = getattr(fn, "variable", None)
        if isinstance(var, torch.Tensor):
            owner = first_param.get(probe.param_names.get(id(var), ""))
        else:
            owner = probe.owner(fn._sequence_nr())
            if type(fn).__name__ == "AliasBackward0" and (owner is None or isinstance(g.nodes[owner], ModuleNode)):
                skip[fn] = next(iter(_next_of(fn)), None)
                continue
        if owner is not None and g.nodes[owner].__class__ is FunctionNode:
            outs = g.output_tensors(owner)
            owner = max(outs) if outs else owner
        after.setdefault(owner if owner is not None else -1, []).append(fn)

    f = NodeFactory()
    new: dict[int, int] = {}  # old id -> new id
    stack: list[tuple[ModuleNode, ModuleNode]] = []  # (old call, new call)
    placed: dict[Any, int] = {}
    marks: dict[int, str] = {}
    saved: dict[int, int] = {}
    grads: list[tuple[int, Any]] = []  # (gradient tensor id, autograd node reading it)
    keep_params: set[int] = set()

    def close_until(node_id: int) -> None:
        while stack and not stack[-1][0].contains(node_id):
            old, m = stack.pop()
            f.end_call(m)
            m.failed, m.opaque = old.failed, old.opaque

    def place(fns_here: list[Any], parent: ModuleNode) -> None:
        for fn in fns_here:
            var = getattr(fn, "variable", None)
            reads = [new[first_param[probe.param_names[id(var)]]]] if id(var) in probe.param_names else []
            node = f.add_function(type(fn).__name__, parent, [r for r in reads if r >= 0])
            placed[fn] = node.id
            marks[node.id] = "node"
            saved[node.id] = _saved_bytes(fn)
            for u, k in getattr(fn, "next_functions", ()):
                if u is None:
                    continue
                meta = getattr(u, "_input_metadata", ())
                shape = tuple(int(d) for d in meta[k].shape) if k < len(meta) else ()
                t = f.add_tensor("grad", parent, shape, "float32", "cpu", "intermediate", producer=node.id)
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
                    if old.is_param:
                        keep_params.add(t.id)
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
    # the cost model's saved_bytes of ops and calls (stats=...) stay beside the autograd nodes'
    ng.annotations.set(SAVED_BYTES, {**ng.annotations.layer(SAVED_BYTES), **{k: v for k, v in saved.items() if v}})
    return ng

"""What the diff compares, read once from each ``Graph``: the tree of module calls, each
call's own ops, parameters, input/output metadata, the data flow among its direct parts,
and a structural signature (a hash of all that without names or devices).

A call's **parts** are its direct children in execution order: child module calls and the
ops it runs itself.  Its **flow** is the set of edges ``(from, to)`` between part
positions, with ``IN`` for what comes from outside the call and ``OUT`` for what it
returns: the graph collapsed to one level, so a change deep inside a layer shows in that
layer's flow and nowhere above.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from ..graph import PARAM_ROLES, FunctionNode, Graph, ModuleNode, TensorNode

#: flow endpoints outside the call's parts
IN, OUT = -1, -2
#: a tensor's metadata as compared: shape and dtype (never the device)
Meta = tuple[tuple[int | str, ...], str]
#: the cost layers compared where both recordings carry them (``tv.diff(..., stats=True)``)
COSTS = ("flops", "saved_bytes")


@dataclass(slots=True, eq=False)
class Call:
    """One module call as the diff sees it."""

    id: int
    path: str  # the call name: path, with ``.method`` for a method call
    cls: str
    #: the module defining the class (``torch.ao.nn.quantized.dynamic.modules.linear``)
    mod: str
    #: the name relative to the enclosing call (``0.attn`` under ``layers``), with the call index
    key: tuple[str, int]
    parent: int | None
    ins: tuple[Meta, ...] = ()
    outs: tuple[Meta, ...] = ()
    #: own parameters and buffers: leaf name -> metadata (read in the first call of the path)
    params: dict[str, Meta] = field(default_factory=dict)
    #: direct parts in execution order: ids of child calls and own ops
    parts: list[int] = field(default_factory=list)
    children: list[int] = field(default_factory=list)
    ops: list[int] = field(default_factory=list)
    flow: set[tuple[int, int]] = field(default_factory=set)
    sig: int = 0


@dataclass(slots=True, eq=False)
class Op:
    """One op run directly inside a call."""

    id: int
    name: str
    ins: tuple[Meta, ...]
    outs: tuple[Meta, ...]


class Tree:
    """The calls and ops of one graph, indexed by node id."""

    def __init__(self, graph: Graph, name: str = "", costs: tuple[str, ...] = ()) -> None:
        self.graph = graph
        self.name = name
        self.calls: dict[int, Call] = {}
        self.ops: dict[int, Op] = {}
        #: cost layer -> node id -> value, for the layers of ``costs`` (both graphs of a diff
        #: carry them); they are part of each call's ``sig``, never of ``stable_sig``
        self.costs: dict[str, dict[int, int]] = {
            k: {i: int(v) for i, v in graph.annotations.layer(k).items()} for k in costs if k in graph.annotations
        }
        self._read(graph)
        self._flows(graph)
        self._signatures()

    @property
    def root(self) -> Call:
        if self.graph.root is None:
            raise ValueError("the graph has no root call")
        return self.calls[self.graph.root]

    def own_cost(self, layer: str, call: Call) -> int:
        """A call's own ``layer`` (flops, saved_bytes): the sum over its own ops, so that a
        change deep inside shows in the call holding it and nowhere above (the rolled-up
        values of the calls above differ too, and the whole model's are ``total_cost``)."""
        values = self.costs[layer]
        return sum(values.get(o, 0) for o in call.ops)

    def total_cost(self, layer: str) -> int | None:
        """The root call's rolled-up ``layer`` (``None`` when the graph has none)."""
        values = self.costs.get(layer)
        return None if values is None else values.get(self.root.id, 0)

    def pos(self, call: Call) -> dict[int, int]:
        """Part id -> position in ``call.parts``."""
        return {p: i for i, p in enumerate(call.parts)}

    # -- reading -----------------------------------------------------------------------
    def _read(self, g: Graph) -> None:
        nodes = g.nodes
        succ, pred = g.adjacency()

        def metas(ids: list[int]) -> tuple[Meta, ...]:
            ts = [nodes[i] for i in ids]
            return tuple((t.shape, t.dtype) for t in ts if type(t) is TensorNode and t.role not in PARAM_ROLES)

        owned: dict[str, dict[str, Meta]] = {}
        for n in nodes:
            if type(n) is ModuleNode:
                parent = self.calls.get(n.parent) if n.parent is not None else None
                rel = _relative(n.call_name, parent.path if parent is not None else None)
                call = Call(
                    n.id, n.call_name, n.cls_name, n.cls_module, (rel, n.call_index), n.parent, metas(pred[n.id])
                )
                call.outs = metas(succ[n.id])
                self.calls[n.id] = call
                if parent is not None:
                    parent.parts.append(n.id)
                    parent.children.append(n.id)
            elif type(n) is FunctionNode:
                self.ops[n.id] = Op(n.id, n.op, metas(pred[n.id]), metas(succ[n.id]))
                if n.parent is not None and n.parent in self.calls:
                    c = self.calls[n.parent]
                    c.parts.append(n.id)
                    c.ops.append(n.id)
            elif type(n) is TensorNode and n.is_param and n.source_name:
                owner, _, leaf = n.source_name.rpartition(".")
                owned.setdefault(owner, {}).setdefault(leaf, (tuple(n.shape), n.dtype))
        for call in self.calls.values():
            if call.key[1] == 0:
                call.params = owned.get(call.path.rpartition(".")[0] if _is_method(g, call) else call.path, {})

    def _flows(self, g: Graph) -> None:
        """Each call's flow among its parts, in one pass over the edges into parts."""
        nodes = g.nodes
        calls = self.calls
        succ, pred = g.adjacency()
        ends = {c.id: _end(nodes[c.id]) for c in calls.values()}

        def part_of(node_id: int | None, call: int) -> int:
            """The part of ``call`` holding ``node_id`` (IN when outside the call)."""
            if node_id is None or not call < node_id < ends[call]:
                return IN
            n = nodes[node_id]
            while n.parent != call:
                if n.parent is None:
                    return IN
                n = nodes[n.parent]
            return n.id

        def producer(t: int) -> int | None:  # Graph.producer, on the shared lists
            best: int | None = None
            for p in pred[t]:
                if type(nodes[p]) is FunctionNode:
                    return p
                if best is None or p > best:
                    best = p
            return best

        positions = {c.id: self.pos(c) for c in calls.values()}
        for unit in (*self.ops, *calls):
            parent = nodes[unit].parent
            owner = calls.get(parent) if parent is not None else None
            if owner is None:
                continue
            pos = positions[owner.id]
            flow = owner.flow
            here = pos[unit]
            for t in pred[unit]:
                n = nodes[t]
                if type(n) is not TensorNode or n.is_param:
                    continue
                flow.add((pos.get(part_of(producer(t), owner.id), IN), here))
        for call in calls.values():
            pos = positions[call.id]
            for t in succ[call.id]:
                if type(nodes[t]) is TensorNode:
                    src = part_of(_inner(g, t, call.id), call.id)
                    call.flow.add((pos.get(src, IN), OUT))

    def _signatures(self) -> None:
        """Bottom-up hashes of each call's structure (no names, no devices), for matching
        within this process (``stable_sig`` is the one that is the same in every run)."""
        for cid in sorted(self.calls, reverse=True):  # children have larger ids
            c = self.calls[cid]
            own = tuple(self.own_cost(k, c) for k in self.costs)
            c.sig = hash((self._structure(c, lambda child: child.sig), own))

    def _structure(self, c: Call, sig_of: Callable[[Call], Hashable]) -> tuple[Hashable, ...]:
        ops = tuple((o.name, o.ins, o.outs) for o in (self.ops[i] for i in c.ops))
        names = {o: self.ops[o].name for o in c.ops}
        parts = tuple(sig_of(self.calls[p]) if p in self.calls else names[p] for p in c.parts)
        return (c.cls, c.ins, c.outs, tuple(sorted(c.params.values(), key=repr)), ops, parts, tuple(sorted(c.flow)))

    def stable_sig(self) -> str:
        """A hash of the root's structure that is the same in every run and on every machine."""
        digests: dict[int, str] = {}
        for cid in sorted(self.calls, reverse=True):
            c = self.calls[cid]
            text = repr(self._structure(c, lambda child: digests[child.id]))
            digests[cid] = hashlib.sha256(text.encode()).hexdigest()[:32]
        return digests[self.root.id]


def _end(n: Any) -> int:
    return n.end if isinstance(n, ModuleNode) and n.end >= 0 else 1 << 62


def _relative(path: str, parent: str | None) -> str:
    if parent is None:
        return ""
    if parent and path.startswith(parent + "."):
        return path[len(parent) + 1 :]
    return path


def _is_method(g: Graph, call: Call) -> bool:
    n = g.nodes[call.id]
    return isinstance(n, ModuleNode) and n.method is not None


def _inner(g: Graph, tensor: int, call: int) -> int | None:
    """The innermost node inside ``call`` that produced ``tensor`` (``None``: it came in)."""
    m = g.nodes[call]
    best: int | None = None
    for p in g.predecessors(tensor):
        if p == call or not (isinstance(m, ModuleNode) and m.contains(p)):
            continue
        if type(g.nodes[p]) is FunctionNode:
            return p
        if best is None or p > best:
            best = p
    return best

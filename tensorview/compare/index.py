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
from dataclasses import dataclass, field

from ..graph import FunctionNode, Graph, ModuleNode, TensorNode

#: flow endpoints outside the call's parts
IN, OUT = -1, -2
#: a tensor's metadata as compared: shape and dtype (never the device)
Meta = tuple[tuple[int | str, ...], str]


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
    sig: str = ""


@dataclass(slots=True, eq=False)
class Op:
    """One op run directly inside a call."""

    id: int
    name: str
    ins: tuple[Meta, ...]
    outs: tuple[Meta, ...]


class Tree:
    """The calls and ops of one graph, indexed by node id."""

    def __init__(self, graph: Graph, name: str = "") -> None:
        self.graph = graph
        self.name = name
        self.calls: dict[int, Call] = {}
        self.ops: dict[int, Op] = {}
        self._read(graph)
        self._flows(graph)
        self._signatures()

    @property
    def root(self) -> Call:
        if self.graph.root is None:
            raise ValueError("the graph has no root call")
        return self.calls[self.graph.root]

    def pos(self, call: Call) -> dict[int, int]:
        """Part id -> position in ``call.parts``."""
        return {p: i for i, p in enumerate(call.parts)}

    # -- reading -----------------------------------------------------------------------
    def _read(self, g: Graph) -> None:
        nodes = g.nodes
        succ, pred = g.adjacency()

        def metas(ids: list[int]) -> tuple[Meta, ...]:
            out = []
            for i in ids:
                t = nodes[i]
                if type(t) is TensorNode and not t.is_param:
                    out.append((tuple(t.shape), t.dtype))
            return tuple(out)

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

        def part_of(node_id: int | None, call: Call) -> int:
            """The part of ``call`` holding ``node_id`` (IN when outside the call)."""
            m = g.nodes[call.id]
            if node_id is None or not isinstance(m, ModuleNode) or not m.contains(node_id):
                return IN
            n = nodes[node_id]
            while n.parent != call.id:
                if n.parent is None:
                    return IN
                n = nodes[n.parent]
            return n.id

        positions = {c.id: self.pos(c) for c in calls.values()}
        for unit in (*self.ops, *calls):
            parent = nodes[unit].parent
            owner = calls.get(parent) if parent is not None else None
            if owner is None:
                continue
            pos = positions[owner.id]
            for t in g.input_tensors(unit):
                if g.tensor(t).is_param:
                    continue
                src = part_of(g.producer(t), owner)
                owner.flow.add((pos.get(src, IN), pos[unit]))
        for call in calls.values():
            pos = positions[call.id]
            for t in g.output_tensors(call.id):
                src = part_of(_inner(g, t, call.id), call)
                call.flow.add((pos.get(src, IN), OUT))

    def _signatures(self) -> None:
        """Bottom-up hashes of each call's structure (no names, no devices)."""
        for cid in sorted(self.calls, reverse=True):  # children have larger ids
            c = self.calls[cid]
            ops = [(o.name, o.ins, o.outs) for o in (self.ops[i] for i in c.ops)]
            parts = [self.calls[p].sig if p in self.calls else ops[c.ops.index(p)][0] for p in c.parts]
            text = repr((c.cls, c.ins, c.outs, sorted(c.params.values()), ops, parts, sorted(c.flow)))
            c.sig = hashlib.sha256(text.encode()).hexdigest()[:32]


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

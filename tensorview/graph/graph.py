"""The recorded graph: nodes in execution order and data-flow edges.

Edges run from producer to consumer: tensor -> function (argument), function -> tensor
(result), tensor -> module (argument of a module call) and module -> tensor (result of a
module call).  An edge is listed once per use, so ``x * x`` gives the edge ``x -> mul``
twice; renderers show that as ``×2``.  The list order is execution order.

A ``Graph`` is filled by ``NodeFactory`` (factory.py; ``GraphBuilder`` for scripts) and
read by everything else.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import InvalidTypeError, shown
from .annotations import WARNING_LAYER, Annotations
from .names import Namespace, assign_names, unique_names
from .nodes import FunctionNode, ModuleNode, Node, Shape, TensorNode


class EdgeList:
    """The edges ``(source id, target id)`` in use order, two 32-bit integers each (8
    bytes an edge instead of a 64-byte tuple in a list; a graph of 2**31 nodes would need
    over 100 GB for its nodes alone).  Iterating gives tuples."""

    __slots__ = ("_ids",)

    def __init__(self, edges: Iterable[tuple[int, int]] = ()) -> None:
        self._ids = array("i")
        for s, d in edges:
            self._ids.append(s)
            self._ids.append(d)

    def add(self, src: int, dst: int) -> None:
        # one call adds both ends: an interrupt (Ctrl-C, any asynchronous exception) comes
        # between two bytecodes, never between the ends, so no half edge is ever left
        self._ids.extend((src, dst))

    def add_into(self, srcs: Iterable[int], dst: int) -> None:
        """An edge from each of ``srcs`` (in order) to ``dst``."""
        extend = self._ids.extend
        for s in srcs:
            extend((s, dst))

    def __len__(self) -> int:
        return len(self._ids) >> 1

    def has_target(self, dst: int) -> bool:
        """Whether an edge ends at ``dst``."""
        return dst in self._ids[1::2]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        ids = self._ids
        return zip(ids[0::2], ids[1::2])

    def __getitem__(self, i: int) -> tuple[int, int]:
        if i < 0:
            i += len(self)
        return self._ids[2 * i], self._ids[2 * i + 1]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EdgeList):
            return self._ids == other._ids
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"EdgeList({list(self)!r})"


class Graph:
    """Nodes (indexed by id) and edges of one recorded forward pass.

    ``inputs``/``outputs`` are tensor-node ids in argument/return order.  ``root`` is the
    id of the root module call.  ``error`` holds a short description when the forward
    raised and this is the partial graph recorded up to the failure.  ``annotations``
    holds named per-node values added by annotation passes (annotations.py).
    ``warnings`` lists every place where the recording knows the graph may be incomplete
    or wrong (``warn``), each once, in the order found.
    """

    def __init__(self) -> None:
        self._nodes: list[Node] = []
        #: names still to hand out, on the first read of ``nodes`` (``defer_names``)
        self._unnamed: tuple[list[str], int, dict[int, int], Namespace] | None = None
        self.edges = EdgeList()
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.root: int | None = None
        self.error: str | None = None
        self.warnings: list[str] = []
        self.annotations = Annotations()
        self._adj_size = -1
        self._succ: list[list[int]] = []
        self._pred: list[list[int]] = []

    # -- the nodes --------------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        """The nodes, indexed by id (execution order), named."""
        if self._unnamed is not None:
            self._name_now()
        return self._nodes

    def building(self) -> list[Node]:
        """The node list itself, for ``NodeFactory`` to append to (names may be pending)."""
        return self._nodes

    def defer_names(self, after: dict[int, int], names: Namespace, start: int) -> None:
        """Name ``nodes[start:]`` (``name_nodes``) when ``nodes`` is first read, not now: a
        recording that is never read pays nothing for names (half a microsecond a node);
        whoever reads sees the same names as if they were given at once.  The base names are
        kept aside, so that naming is done again from them if an asynchronous exception
        (Ctrl-C) stops it."""
        if start < len(self._nodes):
            self._unnamed = ([n.name for n in self._nodes[start:]], start, after, names)

    def _name_now(self) -> None:
        pending = self._unnamed
        if pending is not None:
            bases, start, after, names = pending
            nodes = self._nodes
            assign_names(nodes, start, unique_names(nodes, bases, start, after, names.copy()))
            self._unnamed = None

    # -- reading --------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __getitem__(self, node_id: int) -> Node:
        return self.nodes[node_id]

    def tensor(self, node_id: int) -> TensorNode:
        """Node ``node_id``, which must be a tensor (``TypeError`` otherwise)."""
        n = self.nodes[node_id]
        if type(n) is not TensorNode:
            raise TypeError(f"{n!r} is not a tensor node")
        return n

    def module(self, node_id: int) -> ModuleNode:
        """Node ``node_id``, which must be a module call (``TypeError`` otherwise)."""
        n = self.nodes[node_id]
        if type(n) is not ModuleNode:
            raise TypeError(f"{n!r} is not a module node")
        return n

    def tensors(self) -> Iterator[TensorNode]:
        return (n for n in self.nodes if type(n) is TensorNode)

    def functions(self) -> Iterator[FunctionNode]:
        return (n for n in self.nodes if type(n) is FunctionNode)

    def modules(self) -> Iterator[ModuleNode]:
        return (n for n in self.nodes if type(n) is ModuleNode)

    def by_name(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def adjacency(self) -> tuple[list[list[int]], list[list[int]]]:
        """``(succ, pred)``: consumers and producers/arguments of every node, once per
        use, in edge order.  Built once per edge count and shared: do not modify."""
        if self._adj_size != len(self.edges) or len(self._succ) != len(self.nodes):
            n = len(self.nodes)
            succ: list[list[int]] = [[] for _ in range(n)]
            pred: list[list[int]] = [[] for _ in range(n)]
            for s, d in self.edges:
                succ[s].append(d)
                pred[d].append(s)
            self._succ, self._pred, self._adj_size = succ, pred, len(self.edges)
        return self._succ, self._pred

    def successors(self, node_id: int) -> list[int]:
        """Consumers of ``node_id`` in execution order, once per use."""
        return self.adjacency()[0][node_id]

    def predecessors(self, node_id: int) -> list[int]:
        """Arguments (or producers) of ``node_id`` in argument order, once per use."""
        return self.adjacency()[1][node_id]

    def producer(self, tensor_id: int) -> int | None:
        """The innermost node that produced a tensor: a function, else a module call."""
        best: int | None = None
        for p in self.predecessors(tensor_id):
            if type(self.nodes[p]) is FunctionNode:
                return p
            if best is None or p > best:  # later-started module call is the inner one
                best = p
        return best

    def children(self, module_id: int) -> list[Node]:
        return [n for n in self.nodes if n.parent == module_id]

    def shapes(self, ids: list[int]) -> list[Shape]:
        nodes = self.nodes
        return [n.shape for n in (nodes[i] for i in ids) if type(n) is TensorNode]

    def input_tensors(self, node_id: int) -> list[int]:
        return [p for p in self.predecessors(node_id) if type(self.nodes[p]) is TensorNode]

    def output_tensors(self, node_id: int) -> list[int]:
        return [s for s in self.successors(node_id) if type(self.nodes[s]) is TensorNode]

    def warn(self, message: str, node_id: int | None = None) -> None:
        """Note that the graph may be incomplete or wrong: ``message`` joins ``warnings``
        (once) and, with ``node_id``, that node's ``warning`` annotation (drawn in its
        label; a second message on the same node is appended)."""
        if message not in self.warnings:
            self.warnings.append(message)
        if node_id is not None:
            layer = dict(self.annotations.layer(WARNING_LAYER))
            old = layer.get(node_id)
            if old is None or message not in old.split("; "):
                layer[node_id] = message if old is None else f"{old}; {message}"
                self.annotations.set(WARNING_LAYER, layer)

    # -- checks and listings ----------------------------------------------------
    def lint(self) -> None:
        """Check the invariants; raise ``GraphLintError`` naming the first broken one."""
        from .lint import lint

        lint(self)

    def table(self) -> str:
        """One row per node: name, kind, module path, op/class, input and output shapes."""
        from .listing import table

        return table(self)

    def to_dict(self) -> dict[str, Any]:
        """The full graph in networkx node-link form (see docs/json-schema.md)."""
        from .serialize import to_dict

        return to_dict(self)


def ir_of(graph: object, what: str) -> Graph:
    """The IR of a ``ComputationGraph`` (its ``.graph``) or of a ``Graph`` itself; a clear
    error for anything else.  ``what`` names the caller in the message."""
    ir = graph if isinstance(graph, Graph) else getattr(graph, "graph", None)
    if not isinstance(ir, Graph):
        raise InvalidTypeError(
            f"{what} needs a tensorview Graph or ComputationGraph (what draw_graph and tv.record return, "
            f"or its .graph), got {type(graph).__name__}: {shown(graph)}"
        )
    return ir

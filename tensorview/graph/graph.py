"""The recorded graph: nodes in execution order and data-flow edges.

Edges run from producer to consumer: tensor -> function (argument), function -> tensor
(result), tensor -> module (argument of a module call) and module -> tensor (result of a
module call).  An edge is listed once per use, so ``x * x`` gives the edge ``x -> mul``
twice; renderers show that as ``×2``.  The list order is execution order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .nodes import FUNCTION, MODULE, TENSOR, FunctionNode, ModuleNode, Node, TensorNode


class Namespace:
    """Hands out unique readable names: ``add``, ``add_1``, ``add_2`` (as torch.fx does)."""

    __slots__ = ("_used", "_clean")

    def __init__(self) -> None:
        self._used: dict[str, int] = {}
        self._clean: dict[str, str] = {}

    def __call__(self, base: str) -> str:
        clean = self._clean.get(base)
        if clean is None:
            clean = self._clean[base] = _sanitize(base)
        base = clean
        n = self._used.get(base)
        if n is None:
            self._used[base] = 0
            return base
        while True:
            n += 1
            candidate = f"{base}_{n}"
            if candidate not in self._used:
                self._used[base] = n
                self._used[candidate] = 0
                return candidate


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _sanitize(base: str) -> str:
    if not base:
        return "node"
    if base.isascii() and base.isidentifier():  # the common case, checked in C
        return base
    if all(c in _SAFE for c in base):
        out = base
    else:
        out = "".join(c if c in _SAFE else "_" for c in base)
    if out[0].isdigit():
        out = "_" + out
    return out


class Graph:
    """Nodes (indexed by id) and edges of one recorded forward pass.

    ``inputs``/``outputs`` are tensor-node ids in argument/return order.  ``root`` is the
    id of the root module call.  ``error`` holds a short description when the forward
    raised and this is the partial graph recorded up to the failure.
    """

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.edges: list[tuple[int, int]] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.root: int | None = None
        self.error: str | None = None
        self.names = Namespace()
        self._adj_size = -1
        self._succ: list[list[int]] = []
        self._pred: list[list[int]] = []

    # -- building -------------------------------------------------------------
    def add(self, node: Node) -> Node:
        assert node.id == len(self.nodes), "node ids must be handed out by Graph.next_id"
        self.nodes.append(node)
        return node

    @property
    def next_id(self) -> int:
        return len(self.nodes)

    # -- reading --------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __getitem__(self, node_id: int) -> Node:
        return self.nodes[node_id]

    def tensors(self) -> Iterator[TensorNode]:
        return (n for n in self.nodes if n.kind == TENSOR)  # type: ignore[misc]

    def functions(self) -> Iterator[FunctionNode]:
        return (n for n in self.nodes if n.kind == FUNCTION)  # type: ignore[misc]

    def modules(self) -> Iterator[ModuleNode]:
        return (n for n in self.nodes if n.kind == MODULE)  # type: ignore[misc]

    def by_name(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def _adjacency(self) -> None:
        if self._adj_size == len(self.edges) and len(self._succ) == len(self.nodes):
            return
        n = len(self.nodes)
        succ: list[list[int]] = [[] for _ in range(n)]
        pred: list[list[int]] = [[] for _ in range(n)]
        for s, d in self.edges:
            succ[s].append(d)
            pred[d].append(s)
        self._succ, self._pred, self._adj_size = succ, pred, len(self.edges)

    def successors(self, node_id: int) -> list[int]:
        """Consumers of ``node_id`` in execution order, once per use."""
        self._adjacency()
        return self._succ[node_id]

    def predecessors(self, node_id: int) -> list[int]:
        """Arguments (or producers) of ``node_id`` in argument order, once per use."""
        self._adjacency()
        return self._pred[node_id]

    def producer(self, tensor_id: int) -> int | None:
        """The innermost node that produced a tensor: a function, else a module call."""
        best: int | None = None
        for p in self.predecessors(tensor_id):
            if self.nodes[p].kind == FUNCTION:
                return p
            if best is None or p > best:  # later-started module call is the inner one
                best = p
        return best

    def children(self, module_id: int) -> list[Node]:
        return [n for n in self.nodes if n.parent == module_id]

    def shapes(self, ids: list[int]) -> list[tuple[int, ...]]:
        return [self.nodes[i].shape for i in ids if self.nodes[i].kind == TENSOR]  # type: ignore[attr-defined]

    def input_tensors(self, node_id: int) -> list[int]:
        return [p for p in self.predecessors(node_id) if self.nodes[p].kind == TENSOR]

    def output_tensors(self, node_id: int) -> list[int]:
        return [s for s in self.successors(node_id) if self.nodes[s].kind == TENSOR]

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

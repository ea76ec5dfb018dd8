"""Invariants of a recorded graph (in the spirit of ``torch.fx.Graph.lint``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import GraphLintError
from .nodes import ROLES, SOURCE_ROLES, FunctionNode, ModuleNode, TensorNode

if TYPE_CHECKING:
    from .graph import Graph


def lint(g: Graph) -> None:
    nodes = g.nodes
    n = len(nodes)
    for i, node in enumerate(nodes):
        if node.id != i:
            raise GraphLintError(f"node {node!r} is stored at index {i}")
    names = set()
    for node in nodes:
        if node.name in names:
            raise GraphLintError(f"duplicate node name {node.name!r}")
        names.add(node.name)
    # edges: ends exist, kinds alternate tensor <-> op/module
    for s, d in g.edges:
        if not (0 <= s < n and 0 <= d < n):
            raise GraphLintError(f"edge ({s}, {d}) names a missing node")
        a, b = nodes[s], nodes[d]
        if isinstance(a, TensorNode) == isinstance(b, TensorNode):
            raise GraphLintError(f"edge {a.name} -> {b.name} joins {a.kind} to {b.kind}")
    # module nesting
    roots = [m for m in nodes if isinstance(m, ModuleNode) and m.parent is None]
    if nodes and len(roots) != 1:
        raise GraphLintError(f"expected exactly one root module call, found {len(roots)}")
    for node in nodes:
        if node.parent is None:
            if not isinstance(node, ModuleNode):
                raise GraphLintError(f"{node!r} has no parent module")
            if node.depth != 0 or node.path != "":
                raise GraphLintError(f"root call {node!r} must have depth 0 and path ''")
            continue
        p = nodes[node.parent] if 0 <= node.parent < n else None
        if not isinstance(p, ModuleNode):
            raise GraphLintError(f"{node!r} has parent {node.parent}, not a module call")
        if node.depth != p.depth + 1:
            raise GraphLintError(f"{node!r} has depth {node.depth} under parent depth {p.depth}")
        if isinstance(node, ModuleNode):
            if p.path and not node.path:
                raise GraphLintError(f"{node!r} has an empty path under {p!r}")
        elif node.path != p.path:
            raise GraphLintError(f"{node!r} has path {node.path!r}, its module is {p.path!r}")
        if not isinstance(node, TensorNode) and not p.contains(node.id):
            raise GraphLintError(f"{node!r} lies outside the call of its parent {p!r}")
    for m in nodes:
        if isinstance(m, ModuleNode) and m.end >= 0 and m.end < m.id:
            raise GraphLintError(f"{m!r} ends before it starts")
    # tensors: a producer unless a source; roles known
    pred = g.adjacency()[1]
    for t in nodes:
        if not isinstance(t, TensorNode):
            continue
        role = t.role
        if role not in ROLES:
            raise GraphLintError(f"{t!r} has unknown role {role!r}")
        producers = pred[t.id]
        if role in SOURCE_ROLES:
            if producers:
                raise GraphLintError(f"source tensor {t!r} ({role}) has a producer")
        elif not producers:
            raise GraphLintError(f"tensor {t!r} ({role}) has no producer")
        if sum(1 for p in producers if isinstance(nodes[p], FunctionNode)) > 1:
            raise GraphLintError(f"tensor {t!r} has more than one producing function")
        c = t.copy_of
        if c is not None and not (0 <= c < n and isinstance(nodes[c], TensorNode)):
            raise GraphLintError(f"{t!r} is a copy of {c}, not a tensor")
    for i in g.inputs + g.outputs:
        if not (0 <= i < n and isinstance(nodes[i], TensorNode)):
            raise GraphLintError(f"graph input/output {i} is not a tensor node")
    _check_acyclic(g)


def _check_acyclic(g: Graph) -> None:
    # Kahn's algorithm over the edge list
    n = len(g.nodes)
    indeg = [0] * n
    for _, d in g.edges:
        indeg[d] += 1
    succ = g.adjacency()[0]
    stack = [i for i in range(n) if indeg[i] == 0]
    seen = 0
    while stack:
        v = stack.pop()
        seen += 1
        for w in succ[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                stack.append(w)
    if seen != n:
        bad = next(g.nodes[i] for i in range(n) if indeg[i] > 0)
        raise GraphLintError(f"the graph has a cycle through {bad!r}")

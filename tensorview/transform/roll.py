"""Roll: repeated calls of one module path (weight sharing, recursion, RNN loops) are
drawn as the first call's node.  For an opened repeated call whose recorded structure
matches the first call's, every inner node maps to its counterpart by position.

Opened folds map the same way: every node of a ghost repeat maps to its counterpart in
the repeat that is drawn (``fold_canon``)."""

from __future__ import annotations

from ..graph import Graph, ModuleNode
from .fold import call_end, same_call
from .scope import Scope


def fold_canon(g: Graph, s: Scope) -> list[int]:
    """``canon[i]``: the node of the shown repeat that node ``i`` of a ghost repeat is
    drawn as (``i`` itself elsewhere)."""
    canon = list(range(len(g.nodes)))
    nodes = g.nodes
    # inner folds first: a ghost inside the shown repeat of an outer fold must already map
    # onto its own shown repeat when the outer ghosts copy the outer shown repeat's mapping
    for m in sorted(s.shadow, key=lambda m: (-nodes[m].depth, m)):
        off = m - s.shadow[m]
        for j in range(m, call_end(g, g.module(m))):
            canon[j] = canon[j - off]
    return canon


def canonical(g: Graph, s: Scope, canon: list[int] | None = None) -> list[int]:
    """``canon[i]``: the node that node ``i`` is drawn as (``i`` itself unless rolled),
    starting from ``canon`` (the identity by default)."""
    canon = canon if canon is not None else list(range(len(g.nodes)))
    first: dict[tuple[str, str | None], int] = {}
    nodes, box_of, opened = g.nodes, s.box_of, s.opened
    for m in nodes:
        if type(m) is not ModuleNode:
            continue
        i = m.id
        f = first.setdefault((m.path, m.method), i)
        if f == i:
            continue
        if box_of[i] == i and box_of[f] == f and i not in s.members and f not in s.members:
            canon[i] = canon[f]
        elif opened[i] and opened[f] and same_call(g, g.module(f), m):
            off = i - f
            for j in range(i, call_end(g, m)):
                canon[j] = canon[j - off]
    return canon

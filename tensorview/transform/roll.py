"""Roll: repeated calls of one module path (weight sharing, recursion, RNN loops) are
drawn as the first call's node.  For an opened repeated call whose recorded structure
matches the first call's, every inner node maps to its counterpart by position."""

from __future__ import annotations

from ..graph import Graph, ModuleNode
from .fold import call_end, same_call
from .scope import Scope


def canonical(g: Graph, s: Scope) -> list[int]:
    """``canon[i]``: the node that node ``i`` is drawn as (``i`` itself unless rolled)."""
    canon = list(range(len(g.nodes)))
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

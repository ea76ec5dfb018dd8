"""Roll: repeated calls of one module path (weight sharing, recursion, RNN loops) are
drawn as the first call's node.  For an opened repeated call whose recorded structure
matches the first call's, every inner node maps to its counterpart by position
(parameters and buffers left out: only the first call made nodes for them), except the
model's outputs: each is drawn as itself (two results of one shared ReLU stay two).

Opened folds map the same way: every node of a ghost repeat maps to its counterpart in
the repeat that is drawn (``fold_canon``)."""

from __future__ import annotations

from ..graph import Graph, ModuleNode
from .fold import call_end, counterparts
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
    outputs = set(g.outputs)
    for m in nodes:
        if type(m) is not ModuleNode:
            continue
        i = m.id
        f = first.setdefault((m.path, m.method), i)
        if f == i:
            continue
        if box_of[i] == i and box_of[f] == f and i not in s.members and f not in s.members:
            canon[i] = canon[f]
        elif opened[i] and opened[f]:
            for j, k in counterparts(g, g.module(f), m) or ():
                if j not in outputs:  # an output of the model is drawn as itself, named as returned
                    canon[j] = canon[k]
    return canon

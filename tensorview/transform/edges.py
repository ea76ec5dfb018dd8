"""Edges between drawn nodes, aggregated per pair with a use count and the order of
first use.

Each recorded edge maps its ends to the nodes they are drawn as.  An edge of a call
drawn as a box (``x -> box``, ``box -> y``) or of a drawn op is *explicit* and counts
every use.  An edge of a node hidden inside a box is *implicit*: it only adds a pair the
box's own edges lack (a parameter used inside the box, a tensor captured from outside),
once.  Edges of contracted tensors (``hide_inner_tensors``) are then joined
producer -> consumer.  Everything is one pass over the edges plus one over the
contracted tensors' few edges.

With opened folds, the edges inside a ghost repeat are left out (the repeat drawn has
the same ones), and so is an edge between two repeats of one fold (the hidden state
handed from layer 3 to layer 4: mapped onto the repeat drawn it would loop back from its
end to its start); edges between a ghost repeat and the rest of the graph count on the
repeat drawn.  A grouped output's producers feed its group's node.
"""

from __future__ import annotations

from ..graph import Graph, TensorNode, ViewEdge
from .scope import Scope
from .tensors import CONTRACTED, NONE, Tensors

Pair = tuple[int, int]


def edges(g: Graph, s: Scope, vn: list[int], tv: Tensors, keep_loops: bool) -> list[ViewEdge]:
    box_of, ghost_top, group, kept = s.box_of, s.ghost_top, tv.group, tv.kept
    ghosts = bool(s.shadow)
    target, state, home, merged = tv.target, tv.state, tv.home, tv.merged
    explicit: dict[Pair, list[int]] = {}
    implicit: dict[Pair, int] = {}
    is_tensor = bytearray(len(g.nodes))
    top = bytearray(len(g.nodes))  # 1: drawn at its own level, not hidden inside a box
    for node in g.nodes:
        if type(node) is TensorNode:
            is_tensor[node.id] = 1
        else:
            p = node.parent
            top[node.id] = p is None or box_of[p] < 0

    for order, (a, b) in enumerate(g.edges):
        if ghosts and (ghost_top[a] >= 0 or ghost_top[b] >= 0) and _hidden(g, s, a, b, group, kept):
            continue
        if is_tensor[a]:
            t = target[a]
            if state[t] == NONE:
                continue
            v = vn[b]
            h = home[a]
            if v < 0 or (h >= 0 and box_of[b] == h):
                continue
            pair = (t, v)
            is_explicit = top[b]
        else:
            v = vn[a]
            t = target[b]
            if v < 0 or merged[b] or state[t] == NONE:
                continue
            pair = (v, t)
            is_explicit = top[a]
        if is_explicit:
            e = explicit.get(pair)
            if e is None:
                explicit[pair] = [1, order]
            else:
                e[0] += 1
        elif pair not in implicit:
            implicit[pair] = order
    for pair, order in implicit.items():
        if pair not in explicit:
            explicit[pair] = [1, order]
    return _contract(explicit, state, keep_loops, tv.group)


def _hidden(g: Graph, s: Scope, a: int, b: int, group: dict[int, int], kept: set[int]) -> bool:
    """Whether the edge ``a -> b``, one end in a ghost repeat, is inside that repeat or
    between two repeats of one opened fold (and makes no output: outputs made in a ghost
    repeat are drawn outside the fold)."""
    if b in group or b in kept:
        return False
    ga, gb = s.ghost_top[a], s.ghost_top[b]
    if ga == gb:
        return True
    return (ga >= 0 and _in_fold(g, s.span[ga], b)) or (gb >= 0 and _in_fold(g, s.span[gb], a))


def _in_fold(g: Graph, span: tuple[int, int, int], i: int) -> bool:
    lo, hi, parent = span
    node = g.nodes[i]
    return lo <= i < hi and (type(node) is not TensorNode or node.parent != parent)


def _contract(
    pairs: dict[Pair, list[int]], state: bytearray, keep_loops: bool, group: dict[int, int]
) -> list[ViewEdge]:
    out: dict[Pair, list[int]] = {}
    ins: dict[int, list[int]] = {}
    outs: dict[int, list[tuple[int, int, int]]] = {}

    def add(pair: Pair, count: int, order: int) -> None:
        if pair[0] == pair[1] and not keep_loops:
            return
        e = out.get(pair)
        if e is None:
            out[pair] = [count, order]
        else:
            e[0] += count
            if order < e[1]:
                e[1] = order

    for (a, b), (count, order) in pairs.items():
        if state[a] == CONTRACTED or a in group:  # a tensor: (tensor, consumer)
            outs.setdefault(a, []).append((b, count, order))
        elif state[b] == CONTRACTED or b in group:  # (producer, tensor)
            ins.setdefault(b, []).append(a)
            if b in group:
                add((a, group[b]), count, order)
        else:
            add((a, b), count, order)
    for t, consumers in outs.items():
        for a in ins.get(t, ()):
            for b, count, order in consumers:
                add((a, b), count, order)
    result = [ViewEdge(a, b, c, o) for (a, b), (c, o) in out.items()]
    result.sort(key=lambda e: (e.order, e.src, e.dst))
    return result

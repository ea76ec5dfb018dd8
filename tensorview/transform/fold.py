"""Fold detection: runs of consecutive sibling module calls that are the same computation
(same class, same inner sequence of kinds/ops/classes/shapes), each fed by the previous
one, such as the 80 decoder layers of a Llama.  Each comparison walks the two calls'
ranges once, so finding runs costs O(size of the siblings)."""

from __future__ import annotations

from ..graph import FunctionNode, Graph, ModuleNode, Node, Shape, TensorNode


def call_end(g: Graph, m: ModuleNode) -> int:
    """First id after the call (the whole rest of the graph for a call that never ended)."""
    return m.end if m.end >= 0 else len(g.nodes)


def _io_shapes(g: Graph, m: ModuleNode) -> tuple[list[Shape], list[Shape]]:
    succ, pred = g.adjacency()  # the lists directly: this runs once per sibling call
    return g.shapes(pred[m.id]), g.shapes(succ[m.id])


def same_call(g: Graph, a: ModuleNode, b: ModuleNode) -> bool:
    """Whether calls ``a`` and ``b`` did the same computation, node by node."""
    ea, eb = call_end(g, a), call_end(g, b)
    if ea - a.id != eb - b.id or not _header_same(g, a, b):
        return False
    nodes = g.nodes
    off = b.id - a.id
    for i in range(a.id + 1, ea):
        x, y = nodes[i], nodes[i + off]
        if type(x) is not type(y) or (x.parent or 0) - a.id != (y.parent or 0) - b.id or not _same_node(x, y):
            return False
    return True


def counterparts(g: Graph, a: ModuleNode, b: ModuleNode) -> list[tuple[int, int]] | None:
    """For two calls of one module (``b`` after ``a``) that did the same computation: each
    node of ``b`` (its own id first) paired with its counterpart in ``a``; else ``None``.
    Parameters and buffers are left out: they become nodes where they are first used, in
    ``a`` only, and ``b`` uses those same nodes."""
    if not _header_same(g, a, b):
        return None
    nodes = g.nodes

    def inner(m: ModuleNode) -> list[int]:
        return [i for i in range(m.id + 1, call_end(g, m)) if getattr(nodes[i], "role", None) not in _WEIGHTS]

    xs, ys = inner(a), inner(b)
    if len(xs) != len(ys):
        return None
    pairs = {a.id: b.id}
    for i, j in zip(xs, ys):
        x, y = nodes[i], nodes[j]
        if type(x) is not type(y) or pairs.get(x.parent or 0) != y.parent or not _same_node(x, y):
            return None
        pairs[i] = j
    return [(j, i) for i, j in pairs.items()]


def _header_same(g: Graph, a: ModuleNode, b: ModuleNode) -> bool:
    if a.cls_name != b.cls_name or a.cls_module != b.cls_module or a.method != b.method or a.failed or b.failed:
        return False
    return a.opaque == b.opaque and _io_shapes(g, a) == _io_shapes(g, b)


def _same_node(x: Node, y: Node) -> bool:
    """Nodes ``x`` and ``y`` (of one type) stand for the same step."""
    match x, y:
        case TensorNode(), TensorNode():
            return x.shape == y.shape and x.dtype == y.dtype
        case FunctionNode(), FunctionNode():
            return x.op == y.op
        case ModuleNode(), ModuleNode():
            return x.cls_name == y.cls_name and x.method == y.method
        case _:  # same type (checked by the caller), so a kind this match does not know
            raise TypeError(f"unhandled node kind {type(x).__name__}")


#: tensor roles made at first use only (a repeated call of the same module reuses them)
_WEIGHTS = frozenset({"parameter", "buffer"})


def fed_by(g: Graph, prev: ModuleNode, cur: ModuleNode) -> bool:
    """Whether ``cur`` takes a tensor that ``prev`` produced (or returned)."""
    end = call_end(g, prev)
    pred = g.adjacency()[1]
    return any(prev.id < t < end or prev.id in pred[t] for t in pred[cur.id])


#: longest repeated group of sibling calls that folds (``Linear, ReLU`` repeats: period 2)
MAX_PERIOD = 4


def runs(g: Graph, kids: list[int]) -> list[tuple[list[int], int]]:
    """Foldable runs among one module's direct children ``kids`` (module and function ids
    in execution order; a function between two calls breaks a run), as ``(calls, period)``:
    a group of ``period`` consecutive calls repeated at least twice, each call the same
    computation as the one ``period`` places before and fed by its predecessor."""
    nodes = g.nodes
    out: list[tuple[list[int], int]] = []
    segment: list[ModuleNode] = []
    for k in kids + [-1]:
        node = nodes[k] if k >= 0 else None
        if type(node) is ModuleNode:
            segment.append(node)
            continue
        i = 0
        while i < len(segment):
            best, best_len = 0, 0
            for p in range(1, MAX_PERIOD + 1):
                j = i + p
                while (
                    j < len(segment)
                    and same_call(g, segment[j - p], segment[j])
                    and fed_by(g, segment[j - 1], segment[j])
                ):
                    j += 1
                covered = (j - i) // p * p
                if covered >= 2 * p and covered > best_len:
                    best, best_len = p, covered
            if best:
                out.append(([m.id for m in segment[i : i + best_len]], best))
                i += best_len
            else:
                i += 1
        segment = []
    return out

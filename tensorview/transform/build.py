"""``build_view``: compose the stages (scope -> roll -> tensors -> edges) into a ``View``.

Every stage is one or two passes over nodes or edges, so a view costs O(nodes + edges)."""

from __future__ import annotations

import gc

from ..graph import Cluster, FunctionNode, Graph, ModuleNode, TensorNode, View, ViewNode, ViewOptions
from .edges import edges as view_edges
from .roll import canonical, fold_canon
from .scope import FOLD_AUTO_REPEATS, Scope, auto_select, fold_all, scope
from .tensors import DRAWN, Tensors, node_map, tensors

#: ``fold="auto"`` also folds runs of two repeats when more functions and boxes than this
#: would still be drawn (runs of ``FOLD_AUTO_REPEATS`` or more always fold)
FOLD_AUTO_THRESHOLD = 300

__all__ = ["FOLD_AUTO_REPEATS", "FOLD_AUTO_THRESHOLD", "build_view"]


def build_view(graph: Graph, options: ViewOptions | None = None) -> View:
    """The view of ``graph`` that ``options`` ask for (see ``ViewOptions``)."""
    # only acyclic plain data is allocated here: pausing the cyclic GC saves its repeated
    # scans of a big heap (a third of the time on a 200k-node graph)
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _build(graph, options if options is not None else ViewOptions())
    finally:
        if enabled:
            gc.enable()


def _build(graph: Graph, opts: ViewOptions) -> View:
    g = graph
    if not g.nodes:
        return View(g, opts, [], [], [], False)
    auto = opts.fold == "auto"
    s = scope(g, opts, auto_select(g) if auto else fold_all if opts.fold is True else None)
    if auto and s.visible > FOLD_AUTO_THRESHOLD:
        s = scope(g, opts, fold_all)
    canon = fold_canon(g, s) if s.shadow else list(range(len(g.nodes)))
    if opts.roll:
        canon = canonical(g, s, canon)
    vn = node_map(g, s, canon)
    tv = tensors(g, opts, s, canon, vn)
    nodes = _nodes(g, s, canon, vn, tv, opts.expand_nested)
    for head, group in tv.groups.items():
        nodes[head].group = group
        nodes[head].cluster = None  # it stands for tensors from everywhere: top level
    for i in g.inputs:
        if tv.target[i] in nodes:
            nodes[tv.target[i]].is_input = True
    for i in g.outputs:
        t = tv.group.get(i, tv.target[i])
        if t in nodes:
            nodes[t].is_output = True
    clusters = _clusters(g, s, canon, nodes, opts.expand_nested) if opts.expand_nested or s.open else []
    edge_list = view_edges(g, s, vn, tv, keep_loops=opts.roll)
    ordered = list(nodes.values())
    for k, n in enumerate(ordered):
        n.index = k
    return View(g, opts, ordered, edge_list, clusters, bool(s.members))


def _nodes(g: Graph, s: Scope, canon: list[int], vn: list[int], tv: Tensors, nested: bool) -> dict[int, ViewNode]:
    out: dict[int, ViewNode] = {}
    state, groups, kept = tv.state, tv.groups, tv.kept
    box_of, ghost = s.box_of, s.ghost
    # the clusters drawn: opened modules (expand_nested), else only opened folds
    region = s.region if nested else s.fregion
    clustered = nested or bool(s.open)
    node_list = g.nodes
    for node in node_list:
        i = node.id
        is_module = type(node) is ModuleNode
        if type(node) is TensorNode:
            if state[i] != DRAWN or (canon[i] != i and i not in groups and i not in kept):
                continue
            p = node.parent
            if i in kept:  # made in a ghost repeat: drawn where the fold is
                p = s.span[s.ghost_top[i]][2]
            cl = region[p] if clustered and p is not None else -1
        elif vn[i] == i:
            p = node.parent
            if type(node) is FunctionNode:
                cl = region[p] if clustered and p is not None else -1
            else:
                cl = region[i] if clustered else -1
        else:
            if canon[i] != i and box_of[i] in (i, -1) and vn[i] >= 0 and not ghost[i]:
                out[vn[i]].calls += 1  # a rolled repeat of an earlier node
            continue
        v = out[i] = ViewNode(node, canon[cl] if cl >= 0 else None)
        if is_module and i in s.members:
            v.members = s.members[i]
            v.period = s.period[i]
    return out


def _clusters(g: Graph, s: Scope, canon: list[int], nodes: dict[int, ViewNode], nested: bool) -> list[Cluster]:
    """The opened calls (``nested``) and opened folds that contain a drawn node, with
    their enclosing ones."""
    region = s.region if nested else s.fregion
    used: dict[int, int | None] = {}
    todo = [n.cluster for n in nodes.values() if n.cluster is not None]
    while todo:
        c = todo.pop()
        if c in used:
            continue
        p = g.nodes[c].parent
        f = s.fregion[c]
        if f >= 0 and f != c and (p is None or s.fregion[p] != f):
            # a later call of the repeat shown (the ReLU of Linear, ReLU): in the fold's box
            parent: int | None = f
        else:
            parent = canon[region[p]] if p is not None and region[p] >= 0 else None
        used[c] = parent
        if parent is not None:
            todo.append(parent)
    out = []
    for c in sorted(used):
        head = s.open.get(c)
        if head is None:
            out.append(Cluster(g.module(c), used[c]))
        else:
            members, period = s.members[head], s.period[head]
            shown = members.index(c) // period
            out.append(Cluster(g.module(c), used[c], members, period, shown, g))
    return out

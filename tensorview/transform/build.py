"""``build_view``: compose the stages (scope -> roll -> tensors -> edges) into a ``View``.

Every stage is one or two passes over nodes or edges, so a view costs O(nodes + edges)."""

from __future__ import annotations

import gc

from ..graph import Cluster, FunctionNode, Graph, ModuleNode, TensorNode, View, ViewNode, ViewOptions
from .edges import edges as view_edges
from .roll import canonical
from .scope import Scope, scope
from .tensors import DRAWN, node_map, tensors

#: ``fold="auto"`` folds when more functions and boxes than this would be drawn
FOLD_AUTO_THRESHOLD = 300


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
    fold = opts.fold is True
    s = scope(g, opts, fold)
    if opts.fold == "auto" and s.visible > FOLD_AUTO_THRESHOLD:
        fold = True
        s = scope(g, opts, fold)
    canon = canonical(g, s) if opts.roll else list(range(len(g.nodes)))
    vn = node_map(g, s, canon)
    tv = tensors(g, opts, s, canon, vn)
    nodes = _nodes(g, s, canon, vn, tv.state, opts.expand_nested)
    for i in g.inputs:
        if tv.target[i] in nodes:
            nodes[tv.target[i]].is_input = True
    for i in g.outputs:
        if tv.target[i] in nodes:
            nodes[tv.target[i]].is_output = True
    clusters = _clusters(g, s, canon, nodes) if opts.expand_nested else []
    edge_list = view_edges(g, s, vn, tv, keep_loops=opts.roll)
    ordered = list(nodes.values())
    for k, n in enumerate(ordered):
        n.index = k
    return View(g, opts, ordered, edge_list, clusters, bool(s.members))


def _nodes(g: Graph, s: Scope, canon: list[int], vn: list[int], state: bytearray, nested: bool) -> dict[int, ViewNode]:
    out: dict[int, ViewNode] = {}
    box_of, region = s.box_of, s.region
    node_list = g.nodes
    for node in node_list:
        i = node.id
        is_module = type(node) is ModuleNode
        if type(node) is TensorNode:
            if state[i] != DRAWN or canon[i] != i:
                continue
            cl = region[node.parent] if nested and node.parent is not None else -1
        elif vn[i] == i:
            p = node.parent
            if type(node) is FunctionNode:
                cl = region[p] if nested and p is not None else -1
            else:
                cl = region[i] if nested else -1
        else:
            if canon[i] != i and box_of[i] in (i, -1) and vn[i] >= 0:
                out[vn[i]].calls += 1  # a rolled repeat of an earlier node
            continue
        v = out[i] = ViewNode(node, canon[cl] if cl >= 0 else None)
        if is_module and i in s.members:
            v.members = s.members[i]
            v.period = s.period[i]
    return out


def _clusters(g: Graph, s: Scope, canon: list[int], nodes: dict[int, ViewNode]) -> list[Cluster]:
    """The opened calls that contain a drawn node, with their enclosing opened calls."""
    used: dict[int, int | None] = {}
    todo = [n.cluster for n in nodes.values() if n.cluster is not None]
    while todo:
        c = todo.pop()
        if c in used:
            continue
        p = g.nodes[c].parent
        parent = canon[s.region[p]] if p is not None and s.region[p] >= 0 else None
        used[c] = parent
        if parent is not None:
            todo.append(parent)
    return [Cluster(g.module(c), used[c]) for c in sorted(used)]

"""``DotRenderer``: a view as Graphviz DOT source, byte-identical for the same graph.

Node IDs are the IR nodes' unique names; every attribute passes through ``escape``.
In ``layout="auto"``, a big view gets attributes that bound ``dot``'s work (network
simplex and crossing-minimisation iteration limits, straight edges), so a densely
connected net lays out in seconds instead of never; ``layout="exact"`` leaves them out.
"""

from __future__ import annotations

from typing import Any

import graphviz

from ..graph import Cluster, View, ViewNode
from .base import Renderer
from .escape import attr_list, quote
from .options import RenderOptions
from .style import GraphvizStyler

#: a view with more nodes or edges than these gets the bounded layout (``layout="auto"``)
BIG_NODES = 150
BIG_EDGES = 300
#: Graphviz attributes of the bounded layout
BOUNDED_LAYOUT: dict[str, str] = {
    "newrank": "true",
    "nslimit": "2",
    "nslimit1": "2",
    "mclimit": "0.2",
    "searchsize": "20",
    "remincross": "false",
    "splines": "polyline",
}


#: a view with more nodes or edges than these gets the tighter bounds of ``HUGE_LAYOUT``
HUGE_NODES = 600
HUGE_EDGES = 1000
#: crossing minimisation and network simplex cut further, and straight edges (no spline
#: routing, which also avoids the crash of Graphviz 2.43 on some of these): densenet201's
#: default view (125 nodes, 1,927 edges) lays out about 10x faster than with BOUNDED_LAYOUT;
#: a network-simplex search of 5 edges instead of 20 halves RAFT's (5.5 -> 2.4 s of CPU)
HUGE_LAYOUT: dict[str, str] = {
    **BOUNDED_LAYOUT,
    "nslimit": "1",
    "nslimit1": "1",
    "mclimit": "0.05",
    "searchsize": "5",
    "splines": "line",
}


#: ``dot`` routes a (poly)line edge through one box per rank it crosses, and the routing
#: grows much faster than linearly in those boxes: a small UNet2DConditionModel's default
#: view (268 nodes, 313 edges, ~5,300 ranks crossed beyond the first by skip connections,
#: the time embedding and the text states) took 10.7 s of ``dot`` CPU time in
#: ``routesplines`` alone, an SD-1.5-shaped one over 60 s and then a crash; with straight
#: edges each lays out in about 0.1 s.  Views over this many get ``splines=line``
LONG_EDGE_RANKS = 4000
#: the ranks crossed are nodes of ``dot``'s x-positioning network simplex too: an
#: SD-1.5-shaped UNet's rolled view (361 nodes, ~10,000 ranks crossed, 21,552 nodes to
#: place) took 4.5 s of ``dot`` CPU time there with BOUNDED_LAYOUT, 1.6 s with HUGE_LAYOUT.
#: Views over this many get HUGE_LAYOUT
HUGE_EDGE_RANKS = 8000


def long_edge_ranks(view: View) -> int:
    """About how many ranks ``dot`` inserts into the view's edges (each rank an edge
    crosses beyond its first): nodes ranked by their longest path from a source (in
    execution order; an edge back, as in a rolled loop, is measured as it lies), a source
    ranked just above its first consumer (``dot`` pulls it down there), doubled when an
    edge is labelled (``×3``), as ``dot`` then puts a rank between every two."""
    pos = {n.id: i for i, n in enumerate(view.nodes)}
    rank = dict.fromkeys(pos, 0)
    succ: dict[int, list[int]] = {}
    has_pred: set[int] = set()
    for e in view.edges:
        if e.src in pos and e.dst in pos:
            succ.setdefault(e.src, []).append(e.dst)
            has_pred.add(e.dst)
    for n in view.nodes:
        for d in succ.get(n.id, ()):
            if pos[d] > pos[n.id]:
                rank[d] = max(rank[d], rank[n.id] + 1)
    for n in view.nodes:
        if n.id not in has_pred and n.id in succ:
            rank[n.id] = min(rank[d] for d in succ[n.id]) - 1
    crossed = sum(max(abs(rank[d] - rank[s]) - 1, 0) for s, ds in succ.items() for d in ds)
    return crossed * 2 if any(e.count > 1 for e in view.edges) else crossed


def is_big(view: View) -> bool:
    return len(view.nodes) > BIG_NODES or len(view.edges) > BIG_EDGES


def is_huge(view: View) -> bool:
    return len(view.nodes) > HUGE_NODES or len(view.edges) > HUGE_EDGES


def layout_attrs(view: View) -> dict[str, str]:
    """The graph attributes that bound ``dot``'s work on ``view`` (``layout="auto"``)."""
    ranks = long_edge_ranks(view)
    if is_huge(view) or ranks > HUGE_EDGE_RANKS:
        return HUGE_LAYOUT
    attrs = BOUNDED_LAYOUT if is_big(view) else {}
    return {**attrs, "splines": "line"} if ranks > LONG_EDGE_RANKS else attrs


class DotRenderer(Renderer):
    """Render a view as DOT.  ``styler`` decides the look (default ``GraphvizStyler()``)."""

    def __init__(self, styler: GraphvizStyler | None = None) -> None:
        self.styler = styler if styler is not None else GraphvizStyler()
        self._indent = "\t"

    def begin_graph(self, view: View) -> str:
        self._indent = "\t"
        graph_attr: dict[str, Any] = {"rankdir": self.options.graph_dir}
        graph_attr.update(self.styler.style_graph(view))
        if view.graph.warnings:  # what the recording knows may be missing, said in the picture
            graph_attr.setdefault("label", "\n".join(f"⚠ {w}" for w in view.graph.warnings))
            graph_attr.setdefault("labelloc", "t")
            graph_attr.setdefault("labeljust", "l")
        if self.options.layout == "auto":
            for k, v in layout_attrs(view).items():
                graph_attr.setdefault(k, v)
        lines = [_head(self.options.graph_name)]
        if graph_attr:
            lines.append(f"\tgraph{attr_list(graph_attr)}")
        lines.append(f"\tnode{attr_list(self.styler.node_defaults)}")
        if self.styler.edge_attr:
            lines.append(f"\tedge{attr_list(self.styler.edge_attr)}")
        return "\n".join(lines)

    def render_node(self, node: ViewNode) -> str:
        attrs: dict[str, Any] = self.styler.style_node(node)
        if "label" not in attrs:
            attrs = {"label": self.label(node), **attrs}
        return f"{self._indent}{quote(node.name)}{attr_list(attrs)}"

    def begin_module(self, cluster: Cluster) -> str:
        line = f"{self._indent}subgraph {quote('cluster_' + cluster.ir.name)} {{"
        self._indent += "\t"
        return f"{line}\n{self._indent}graph{attr_list(self.styler.style_cluster(cluster))}"

    def end_module(self, cluster: Cluster) -> str:
        self._indent = self._indent[:-1]
        return f"{self._indent}}}"

    def render_edge(self, src: ViewNode, dst: ViewNode, count: int) -> str:
        attrs: dict[str, Any] = dict(self.styler.style_edge(src, dst))
        if count > 1 and "label" not in attrs:
            attrs["label"] = f"×{count}"
        return f"\t{quote(src.name)} -> {quote(dst.name)}{attr_list(attrs)}"

    def end_graph(self, view: View) -> str:
        return "}"

    def digraph(self, view: View, options: RenderOptions | None = None, source: str | None = None) -> graphviz.Digraph:
        """A ``graphviz.Digraph`` whose ``.source`` is this renderer's output, built
        from the body lines directly (no per-node calls into the graphviz package)."""
        opts = options if options is not None else RenderOptions()
        text = source if source is not None else self.render(view, opts)
        name = opts.graph_name
        head = _head(name) + "\n"  # a long name spans several lines
        start = len(head) if text.startswith(head) else text.index("\n") + 1
        body = [line + "\n" for line in text[start:].split("\n")[:-2]]  # up to the closing brace
        # graphviz quotes the name itself: given our quoted text (as plain text, not an HTML
        # string) it writes the same head line, whatever the name holds
        quoted = quote(name) if name else ""
        return graphviz.Digraph(name=graphviz.nohtml(quoted[1:-1]) if quoted.startswith('"') else quoted, body=body)


def _head(graph_name: str) -> str:
    """``digraph model {`` (``digraph {`` for an empty name, as graphviz writes it)."""
    return f"digraph {quote(graph_name)} {{" if graph_name else "digraph {"

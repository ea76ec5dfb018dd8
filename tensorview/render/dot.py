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


def is_big(view: View) -> bool:
    return len(view.nodes) > BIG_NODES or len(view.edges) > BIG_EDGES


def is_huge(view: View) -> bool:
    return len(view.nodes) > HUGE_NODES or len(view.edges) > HUGE_EDGES


def layout_attrs(view: View) -> dict[str, str]:
    """The graph attributes that bound ``dot``'s work on ``view`` (``layout="auto"``)."""
    return HUGE_LAYOUT if is_huge(view) else BOUNDED_LAYOUT if is_big(view) else {}


class DotRenderer(Renderer):
    """Render a view as DOT.  ``styler`` decides the look (default ``GraphvizStyler()``)."""

    def __init__(self, styler: GraphvizStyler | None = None) -> None:
        self.styler = styler if styler is not None else GraphvizStyler()
        self._indent = "\t"

    def begin_graph(self, view: View) -> str:
        self._indent = "\t"
        graph_attr: dict[str, Any] = {"rankdir": self.options.graph_dir}
        graph_attr.update(self.styler.style_graph(view))
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

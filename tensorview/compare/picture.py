"""The diff as a picture side by side (``layout="side"``; merged.py draws the merged one):
both graphs in one Graphviz drawing, each through
the DOT renderer with a styler that colours what differs: calls only in b green, only in
a red, changed amber, the rest white, and a box that holds a difference deeper down
outlined in amber.

The depth drawn is the deepest difference's (at most ``MAX_DEPTH``) unless given;
repeated blocks are never folded, so each layer is drawn as itself.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ..graph import Cluster, Graph, ViewNode, ViewOptions
from ..render import DotRenderer, GraphvizStyler
from ..render.escape import attr_list, quote
from ..render.executable import render_digraph
from ..transform import build_view
from .report import LAYOUTS

if TYPE_CHECKING:
    from .report import GraphDiff

ADDED, REMOVED, CHANGED, HOLDS, SAME = "#7bd87b", "#ff8a8a", "#ffc94d", "darkorange", "white"
MAX_DEPTH = 6
PICTURES = ("svg", "gv", "dot", "png", "pdf")


class DiffStyler(GraphvizStyler):
    """Colours the nodes of one side: ``marks`` maps module-call ids to a fill colour;
    ``holds``: calls with a marked call inside (drawn with an amber outline)."""

    def __init__(self, marks: dict[int, str], holds: set[int], graph: Graph) -> None:
        super().__init__()
        self.marks, self.holds, self.graph = marks, holds, graph

    def _mark(self, node_id: int) -> str | None:
        """The colour of ``node_id``: its own mark, or that of the added or removed call
        holding it (a changed call marks itself only)."""
        g = self.graph
        if node_id in self.marks:
            return self.marks[node_id]
        p = g.nodes[node_id].parent
        while p is not None:
            colour = self.marks.get(p)
            if colour is not None and colour != CHANGED:
                return colour
            p = g.nodes[p].parent
        return None

    def style_node(self, node: ViewNode) -> dict[str, Any]:
        attrs = super().style_node(node)
        colour = self._mark(node.id)
        attrs["fillcolor"] = colour or SAME
        if node.id in self.holds:
            attrs.update(color=HOLDS, penwidth=2)
        return attrs

    def style_cluster(self, cluster: Cluster) -> dict[str, Any]:
        attrs = super().style_cluster(cluster)
        if cluster.ir.id in self.holds or cluster.ir.id in self.marks:
            attrs.update(color=HOLDS, penwidth=2)
        return attrs


class SideRenderer(DotRenderer):
    """DOT of one side, every name prefixed (``a:``/``b:``) so both fit in one graph."""

    def __init__(self, styler: GraphvizStyler, prefix: str) -> None:
        super().__init__(styler)
        self.prefix = prefix

    def render_node(self, node: ViewNode) -> str:
        attrs: dict[str, Any] = self.styler.style_node(node)
        if "label" not in attrs:
            attrs = {"label": self.label(node), **attrs}
        return f"{self._indent}{quote(self.prefix + node.name)}{attr_list(attrs)}"

    def begin_module(self, cluster: Cluster) -> str:
        line = f"{self._indent}subgraph {quote('cluster_' + self.prefix + cluster.ir.name)} {{"
        self._indent += "\t"
        return f"{line}\n{self._indent}graph{attr_list(self.styler.style_cluster(cluster))}"

    def render_edge(self, src: ViewNode, dst: ViewNode, count: int) -> str:
        attrs: dict[str, Any] = dict(self.styler.style_edge(src, dst))
        if count > 1 and "label" not in attrs:
            attrs["label"] = f"×{count}"
        return f"\t{quote(self.prefix + src.name)} -> {quote(self.prefix + dst.name)}{attr_list(attrs)}"


def marks(d: GraphDiff) -> tuple[dict[int, str], dict[int, str]]:
    """The colours of the calls of a and of b: removed red, added green, changed amber."""
    marks_a: dict[int, str] = {e.node: REMOVED for e in d.removed_calls}
    marks_b: dict[int, str] = {e.node: ADDED for e in d.added_calls}
    for c in d.changed:
        marks_a.setdefault(c.nodes[0], CHANGED)
        marks_b.setdefault(c.nodes[1], CHANGED)
    return marks_a, marks_b


def chosen_depth(d: GraphDiff, depth: int | None, open_changed: bool = False) -> int:
    """``depth``, or the deepest difference's (at most ``MAX_DEPTH``); ``open_changed``:
    one deeper for a changed call with children whose own ops or flow differ, so that
    what differs inside it is drawn."""
    if d.trees is None:
        raise InvalidInputError("this GraphDiff holds no graphs to draw (it was not made by tv.diff)")
    if depth is not None:
        return depth
    ta, tb = d.trees
    marks_a, marks_b = marks(d)
    deepest = [ta.graph.nodes[i].depth for i in marks_a] + [tb.graph.nodes[i].depth for i in marks_b]
    if open_changed:
        inside = {"ops", "flow", "order"}
        deepest += [
            tb.graph.nodes[c.nodes[1]].depth + 1
            for c in d.changed
            if c.kinds & inside and tb.calls[c.nodes[1]].children
        ]
    return min(max(deepest, default=1), MAX_DEPTH)


def source(d: GraphDiff, depth: int | None = None) -> str:
    """DOT text of the side-by-side picture (``layout="side"``)."""
    depth = chosen_depth(d, depth)
    assert d.trees is not None
    ta, tb = d.trees
    marks_a, marks_b = marks(d)
    parts = [f"digraph {quote('diff')} {{", f"\tgraph{attr_list({'label': str(d).splitlines()[0], 'labelloc': 't'})}"]
    for prefix, t, colours in (("a:", ta, marks_a), ("b:", tb, marks_b)):
        styler = DiffStyler(colours, holders(t.graph, colours), t.graph)
        view = build_view(t.graph, ViewOptions(depth=depth, fold=False, expand_nested=True))
        text = SideRenderer(styler, prefix).render(view)
        body = text.rstrip("\n").split("\n")[1:-1]  # inside the digraph's braces
        label = f"{prefix[0]}: {t.name}"
        parts.append(f"\tsubgraph {quote('cluster_' + prefix)} {{\n\t\tgraph{attr_list({'label': label})}")
        parts.extend("\t" + line for line in body)
        parts.append("\t}")
    parts.append("}")
    return "\n".join(parts) + "\n"


def holders(g: Graph, marks: dict[int, str]) -> set[int]:
    """The module boxes around each node of ``marks`` (a difference lies inside them)."""
    out: set[int] = set()
    for i in marks:
        p = g.nodes[i].parent
        while p is not None and p not in out:
            out.add(p)
            p = g.nodes[p].parent
    return out


def drawing(d: GraphDiff, depth: int | None = None, layout: str = "merged") -> str:
    """DOT text of the picture: ``layout="merged"`` one graph, the union of both
    (merged.py), ``"side"`` both side by side."""
    if layout == "side":
        return source(d, depth)
    if layout == "merged":
        from .merged import merged_source

        return merged_source(d, depth)
    raise InvalidInputError(f"layout must be one of {list(LAYOUTS)}, got {layout!r:.80}")


def save(d: GraphDiff, path: str | os.PathLike[str], *, depth: int | None = None, layout: str | None = None) -> str:
    """Write ``d`` to ``path`` in the format its extension names (report.GraphDiff.save);
    ``layout``: ``"merged"`` (the default of pictures), ``"side"`` or ``"viewer"`` (that
    of the page: live.py)."""
    path = os.fspath(path)
    if layout is not None and layout not in LAYOUTS:
        raise InvalidInputError(f"layout must be one of {list(LAYOUTS)}, got {layout!r:.80}")
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    if ext == "json":
        text = d.to_json() + "\n"
    elif ext == "txt":
        text = str(d) + "\n"
    elif ext == "html" and layout in (None, "viewer"):
        from .live import live_page

        text = live_page(d, depth)
    elif ext == "html":
        from .page import page

        text = page(d, depth, layout or "side")
    elif ext in PICTURES and layout == "viewer":
        raise InvalidInputError(f"layout 'viewer' is the .html page's; a picture ({path!r}) is 'merged' or 'side'")
    elif ext in PICTURES:
        return render_digraph(drawing(d, depth, layout or "merged"), path, ext)
    else:
        raise InvalidInputError(
            f"cannot save a diff as {path!r}: use .json, .txt, .html or a picture ({', '.join(PICTURES)})"
        )
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path

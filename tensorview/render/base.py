"""``Renderer``: the small interface every output format implements.

``render(view)`` calls ``begin_graph``, then for every drawn node ``render_node`` (inside
``begin_module(cluster)``/``end_module(cluster)`` for nested opened modules, innermost
last), then ``render_edge(src, dst, count)`` for every edge in order of first use, then
``end_graph``.  Each hook returns a piece of text (or ``None``); ``render`` joins the
pieces with newlines.  Subclasses need only the hooks; labels come from ``self.label``,
and how to draw (direction, name, numbering) from ``self.options`` (``RenderOptions``).
"""

from __future__ import annotations

from ..graph import Cluster, View, ViewNode
from .labels import node_label
from .options import RenderOptions


class Renderer:
    """Base class of output formats.  Override the hooks; ``render`` drives them."""

    view: View
    options: RenderOptions = RenderOptions()

    def render(self, view: View, options: RenderOptions | None = None) -> str:
        """The text of ``view`` drawn as ``options`` say (default ``RenderOptions()``)."""
        missing = [h for h in ("render_node", "render_edge") if getattr(type(self), h) is getattr(Renderer, h)]
        if missing:
            raise NotImplementedError(
                f"{type(self).__name__} must implement the Renderer hook(s) {' and '.join(missing)} "
                "(render_node(node) and render_edge(src, dst, count) return a piece of text or None)"
            )
        self.view = view
        self.options = options if options is not None else RenderOptions()
        out: list[str] = []

        def put(piece: str | None) -> None:
            if piece is not None:
                out.append(piece)

        put(self.begin_graph(view))
        nodes: dict[int | None, list[ViewNode]] = {}
        for n in view.nodes:
            nodes.setdefault(n.cluster, []).append(n)
        kids: dict[int | None, list[Cluster]] = {}
        for c in view.clusters:
            kids.setdefault(c.parent, []).append(c)

        def region(cluster: int | None) -> list[tuple[int, int, ViewNode | Cluster]]:
            items: list[tuple[int, int, ViewNode | Cluster]] = [(n.order, 0, n) for n in nodes.get(cluster, ())]
            items.extend((c.order, 1, c) for c in kids.get(cluster, ()))
            items.sort(key=lambda item: (item[0], item[1]), reverse=True)
            return items

        # clusters nest as deep as the model: a stack of regions, not recursion
        stack: list[tuple[Cluster | None, list[tuple[int, int, ViewNode | Cluster]]]] = [(None, region(None))]
        while stack:
            cluster, items = stack[-1]
            if not items:
                stack.pop()
                if cluster is not None:
                    put(self.end_module(cluster))
                continue
            item = items.pop()[2]
            if isinstance(item, Cluster):
                put(self.begin_module(item))
                stack.append((item, region(item.id)))
            else:
                put(self.render_node(item))

        by = view.by_id
        for e in view.edges:
            put(self.render_edge(by[e.src], by[e.dst], e.count))
        put(self.end_graph(view))
        return "\n".join(out) + "\n" if out else ""

    def label(self, node: ViewNode) -> str:
        """The node's label text (lines joined with ``\\n``)."""
        return node_label(self.view, node, self.options)

    # -- hooks -------------------------------------------------------------------------
    def begin_graph(self, view: View) -> str | None:
        return None

    def render_node(self, node: ViewNode) -> str | None:
        raise NotImplementedError(f"{type(self).__name__} must implement render_node(node) -> str | None")

    def begin_module(self, cluster: Cluster) -> str | None:
        return None

    def end_module(self, cluster: Cluster) -> str | None:
        return None

    def render_edge(self, src: ViewNode, dst: ViewNode, count: int) -> str | None:
        raise NotImplementedError(f"{type(self).__name__} must implement render_edge(src, dst, count) -> str | None")

    def end_graph(self, view: View) -> str | None:
        return None

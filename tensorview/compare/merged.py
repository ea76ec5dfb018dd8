"""The diff as one picture: the union of both graphs at one depth, drawn through the DOT
renderer.  b's view is the base; what only a has is added to it where it ran, so

- a call or op only in b is green, one only in a red (inside b's counterpart of the
  call that held it), a changed call amber (a change of class or of its own FLOPs and
  saved bytes on the label, every difference in its tooltip), a renamed call labelled with both names, the rest white;
- an edge of b that a lacks is green, one of a that b lacks red and dashed (a residual
  removed, a norm inserted: the edge it replaced), the rest black.

Views are matched node by node: module calls through ``GraphDiff.matched``, ops through
the op pairing of each matched pair of calls, the model's inputs and outputs by position.
Every text goes through render/escape.py (names are user data).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..graph import Cluster, FunctionNode, View, ViewEdge, ViewNode, ViewOptions
from ..render import DotRenderer
from ..render.escape import attr_list, quote
from ..render.labels import label_lines
from ..transform import build_view
from .picture import ADDED, CHANGED, REMOVED, DiffStyler, chosen_depth, holders, marks

if TYPE_CHECKING:
    from .index import Tree
    from .report import GraphDiff

#: edge colours: only in b, only in a
EDGE_ADDED, EDGE_REMOVED = "#2a9d2a", "#d62828"
#: differences of a changed call written on its label (all are in its tooltip)
LABELLED = ("class", "wrap", "flops", "saved_bytes")
#: b's orders are scaled by this, a's own nodes numbered in between
STEP = 1 << 20


def node_pairs(d: GraphDiff) -> dict[int, int]:
    """a node id -> b node id: matched calls (a wrapped one: the call inside the wrapper),
    and the ops of matched calls (in order where the two calls have one structure, else as
    the diff paired them)."""
    assert d.trees is not None
    ta, tb = d.trees
    out = dict(d.matched)
    for x, y in d.matched.items():
        ca, cb = ta.calls[x], tb.calls[y]
        if ca.sig == cb.sig and len(ca.ops) == len(cb.ops):
            out.update(zip(ca.ops, cb.ops, strict=True))
    out.update(d.matched_ops)
    out.update(d.wrapped)  # a wrapped call is its counterpart inside the wrapper
    return out


class Merged:
    """The merged view: b's nodes and clusters, plus a's unmatched ones under negative
    ids (``-1 - id``), and the union of the edges with where each is found."""

    def __init__(self, d: GraphDiff, depth: int) -> None:
        assert d.trees is not None
        ta, tb = d.trees
        opts = ViewOptions(depth=depth, fold=False, expand_nested=True)
        self.va, self.vb = build_view(ta.graph, opts), build_view(tb.graph, opts)
        pairs = node_pairs(d)
        for flag in ("is_input", "is_output"):  # the model's inputs and outputs, by position
            xs = [n.id for n in self.va.nodes if getattr(n, flag)]
            ys = [n.id for n in self.vb.nodes if getattr(n, flag)]
            pairs.update(zip(xs, ys, strict=False))
        b_clusters = {c.id for c in self.vb.clusters}
        #: a view id (node or cluster) -> merged id
        self.to_merged: dict[int, int] = {}
        for n in self.va.nodes:
            y = pairs.get(n.id)
            self.to_merged[n.id] = y if y is not None and y in self.vb.by_id else -1 - n.id
        for c in self.va.clusters:
            y = pairs.get(c.id)
            self.to_merged[c.id] = y if y is not None and y in b_clusters else -1 - c.id
        self.a_only = {-1 - n.id: n for n in self.va.nodes if self.to_merged[n.id] < 0}
        self.pairs = pairs
        self.view = self._view()

    def _view(self) -> View:
        vb, va, m = self.vb, self.va, self.to_merged
        nodes = list(vb.nodes)
        clusters = list(vb.clusters)
        for n in nodes:  # room for a's own between b's (this view is ours to change)
            n.order *= STEP
        for c in clusters:
            c.order *= STEP
        order = 0
        # a's own nodes and clusters sit just after the b counterpart of what ran before them
        items: list[ViewNode | Cluster] = sorted([*va.nodes, *va.clusters], key=lambda x: x.order)
        for item in items:
            mid = m[item.id]
            if mid >= 0:
                order = vb.by_id[mid].order if mid in vb.by_id else _cluster(vb, mid).order
                continue
            order += 1
            parent = item.cluster if isinstance(item, ViewNode) else item.parent
            if isinstance(item, ViewNode):
                node = ViewNode(item.ir, m[parent] if parent is not None else None)
                node.id, node.order, node.is_input, node.is_output = mid, order, item.is_input, item.is_output
                node.calls, node.members, node.period = item.calls, item.members, item.period
                nodes.append(node)
            else:
                box = Cluster(item.ir, m[parent] if parent is not None else None)
                box.id, box.order = mid, order
                clusters.append(box)
        nodes.sort(key=lambda n: n.order)
        self.where: dict[tuple[int, int], set[str]] = {}
        counts: dict[tuple[int, int], int] = {}
        for side, view in (("b", vb), ("a", va)):
            by = {n.id for n in nodes}
            for e in view.edges:
                key = (e.src, e.dst) if side == "b" else (m.get(e.src, 0), m.get(e.dst, 0))
                if key[0] not in by or key[1] not in by or key[0] == key[1]:
                    continue
                self.where.setdefault(key, set()).add(side)
                counts[key] = max(counts.get(key, 0), e.count)
        edges = [ViewEdge(s, t, counts[(s, t)], k) for k, (s, t) in enumerate(self.where)]
        merged = View(vb.graph, vb.options, nodes, edges, clusters, vb.folded)
        return merged


def _cluster(view: View, cid: int) -> Cluster:
    return next(c for c in view.clusters if c.id == cid)


class MergedRenderer(DotRenderer):
    """DOT of the merged view: b's nodes as ``b:name``, a's own as ``a:name``."""

    def __init__(self, d: GraphDiff, merged: Merged) -> None:
        assert d.trees is not None
        ta, tb = d.trees
        ma, mb = marks(d)
        for x in merged.a_only.values():  # ops removed inside matched calls
            ma.setdefault(x.id, REMOVED)
        paired_b = set(merged.pairs.values())
        for n in merged.vb.nodes:  # ops added inside matched calls
            if isinstance(n.ir, FunctionNode) and n.id not in paired_b:
                mb.setdefault(n.id, ADDED)
        super().__init__(DiffStyler(mb, holders(tb.graph, mb), tb.graph))
        self.a_styler = DiffStyler(ma, set(), ta.graph)
        self.d, self.m, self.ta, self.tb = d, merged, ta, tb
        self.renamed = _renamed(d, ta, tb)
        self.changes = {c.nodes[1]: c for c in d.changed}

    def _name(self, node_id: int, name: str) -> str:
        return ("a:" if node_id < 0 else "b:") + name

    def render_node(self, node: ViewNode) -> str:
        if node.id < 0:
            orig = self.m.a_only[node.id]
            attrs = self.a_styler.style_node(orig)
            attrs = {"label": "\n".join(label_lines(self.m.va, orig, self.options)), **attrs, "fillcolor": REMOVED}
        else:
            attrs = self.styler.style_node(node)
            lines = label_lines(self.m.vb, node, self.options)
            attrs = {"label": "\n".join(self._relabel(node.id, lines)), **attrs}
            change = self.changes.get(node.id)
            if change is not None:
                attrs["tooltip"] = "\n".join(f"{x.kind}: {x.detail}" for x in change.differences)
        return f"{self._indent}{quote(self._name(node.id, node.name))}{attr_list(attrs)}"

    def _relabel(self, b_id: int, lines: list[str]) -> list[str]:
        """Both names of a renamed call; the class change of a changed one."""
        old = self.renamed.get(b_id)
        path = self.tb.calls[b_id].path if b_id in self.tb.calls else None
        if old is not None and path is not None and lines and lines[0].startswith(path):
            lines = [f"{old} → {lines[0]}", *lines[1:]]
        change = self.changes.get(b_id)
        if change is not None:
            lines += [
                x.detail if x.kind == "wrap" else f"{x.kind} {x.detail}"
                for x in change.differences
                if x.kind in LABELLED
            ]
        return lines

    def begin_module(self, cluster: Cluster) -> str:
        name = ("a:" if cluster.id < 0 else "b:") + cluster.ir.name
        line = f"{self._indent}subgraph {quote('cluster_' + name)} {{"
        self._indent += "\t"
        attrs = dict(self.styler.style_cluster(cluster))
        if cluster.id < 0:
            attrs.update(color=REMOVED, penwidth=2)
        else:
            attrs["label"] = "\n".join(self._relabel(cluster.id, [attrs["label"]]))
            if self.changes.get(cluster.id) is not None:
                attrs.update(color=CHANGED, penwidth=2)
        return f"{line}\n{self._indent}graph{attr_list(attrs)}"

    def render_edge(self, src: ViewNode, dst: ViewNode, count: int) -> str:
        where = self.m.where[(src.id, dst.id)]
        attrs: dict[str, Any] = {}
        if where == {"b"}:
            attrs.update(color=EDGE_ADDED, penwidth=2)
        elif where == {"a"}:
            attrs.update(color=EDGE_REMOVED, penwidth=2, style="dashed")
        if count > 1:
            attrs["label"] = f"×{count}"
        return f"\t{quote(self._name(src.id, src.name))} -> {quote(self._name(dst.id, dst.name))}{attr_list(attrs)}"


def _renamed(d: GraphDiff, ta: Tree, tb: Tree) -> dict[int, str]:
    """b call id -> its path in a, for renamed calls."""
    names = set(d.renamed)
    return {y: ta.calls[x].path for x, y in d.matched.items() if (ta.calls[x].path, tb.calls[y].path) in names}


def merged_source(d: GraphDiff, depth: int | None = None) -> str:
    """DOT text of the merged picture (``layout="merged"``)."""
    depth = chosen_depth(d, depth, open_changed=True)
    merged = Merged(d, depth)
    renderer = MergedRenderer(d, merged)
    text = renderer.render(merged.view)
    head = f"digraph {quote('diff')} {{"
    title = attr_list({"label": str(d).splitlines()[0], "labelloc": "t"})
    body = text.split("\n", 1)[1]
    return f"{head}\n\tgraph{title}\n{body}"


__all__ = ["EDGE_ADDED", "EDGE_REMOVED", "Merged", "MergedRenderer", "merged_source", "node_pairs"]

"""``ComputationGraph``: the recorded graph as users hold it.

It keeps the full recorded IR (``.graph``) and the view options; ``view(**changes)``
gives another drawing of the same recording without running the model again.  DOT
source, the ``graphviz.Digraph`` and SVG are computed on first use and cached.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

import graphviz

from .errors import InvalidTypeError, RenderError, choices_error
from .graph import Graph, Node, TensorNode
from .graph.listing import fmt_shapes
from .render import DotRenderer, GraphvizStyler, render_digraph, run_dot
from .transform import View, ViewOptions, build_view

SAVE_FORMATS = ("svg", "png", "pdf", "gv", "dot", "json")
#: how many module calls ``repr`` lists before summarising the rest
REPR_MODULES = 40


class ComputationGraph:
    """A recorded forward pass, drawable in Jupyter (SVG) and savable to files, e.g.
    ``graph.view(depth=1, roll=True).save("model.svg")``."""

    def __init__(self, graph: Graph, options: ViewOptions | None = None, *, styler: GraphvizStyler | None = None) -> None:
        self.graph = graph
        self.options = options if options is not None else ViewOptions()
        self.styler = _check_styler(styler)
        self._view: View | None = None
        self._source: str | None = None
        self._digraph: graphviz.Digraph | None = None
        self._svg: str | None = None

    # -- views -------------------------------------------------------------------------
    def view(self, **changes: Any) -> ComputationGraph:
        """The same recording drawn with some options changed (``depth=1, roll=True``);
        ``styler=`` swaps the styler."""
        styler = changes.pop("styler", self.styler)
        return ComputationGraph(self.graph, self.options.replace(**changes), styler=styler)

    def get_view(self) -> View:
        """The ``View`` (drawn nodes, edges, clusters) for the current options."""
        if self._view is None:
            self._view = build_view(self.graph, self.options)
        return self._view

    # -- Graphviz ----------------------------------------------------------------------
    @property
    def source(self) -> str:
        """DOT source of the current view (no ``dot`` program needed)."""
        if self._source is None:
            self._source = DotRenderer(self.styler).render(self.get_view())
        return self._source

    @property
    def visual_graph(self) -> graphviz.Digraph:
        """The ``graphviz.Digraph`` of the current view (same text as ``source``)."""
        if self._digraph is None:
            self._digraph = DotRenderer(self.styler).digraph(self.get_view(), self.source)
        return self._digraph

    def svg(self) -> str:
        """The drawing as SVG text (needs Graphviz ``dot``; else ``RenderError``)."""
        if self._svg is None:
            self._svg = run_dot(self.source, "svg").decode("utf-8")
        return self._svg

    def save(self, path: str | os.PathLike[str], *, format: str | None = None) -> str:
        """Write the drawing; the format comes from the extension (or ``format``): svg,
        png, pdf (via ``dot``), gv/dot (DOT source), json (the full graph, ``to_json``)."""
        path = _check_path(path)
        if format is not None and not isinstance(format, str):
            raise InvalidTypeError(
                f"save format must be a str, one of {list(SAVE_FORMATS)!r}, got {type(format).__name__}: {format!r:.80}"
            )
        fmt = (format or os.path.splitext(path)[1].lstrip(".")).lower()
        if fmt not in SAVE_FORMATS:
            raise choices_error("save format", fmt, SAVE_FORMATS)
        if fmt == "json":
            with open(path, "w", encoding="utf-8") as f:
                json.dump(self.to_json(), f, indent=1, sort_keys=False)
        else:
            render_digraph(self.source, path, fmt)
        return path

    def to_json(self) -> dict[str, Any]:
        """The FULL recorded graph (all depths, all tensors) in node-link form."""
        return self.graph.to_dict()

    # -- display -----------------------------------------------------------------------
    def _repr_mimebundle_(self, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None) -> dict[str, str]:
        include = set(include) if include is not None else {"image/svg+xml", "text/plain"}
        exclude = set(exclude or ())
        bundle: dict[str, str] = {}
        text = repr(self)
        if "image/svg+xml" in include and "image/svg+xml" not in exclude:
            try:
                bundle["image/svg+xml"] = self.svg()
            except RenderError as e:
                text += f"\n(no drawing: {e})"
        if "text/plain" in include and "text/plain" not in exclude:
            bundle["text/plain"] = text
        return bundle

    def __repr__(self) -> str:
        g = self.graph
        counts = {"module": 0, "function": 0, "tensor": 0}
        for n in g.nodes:
            counts[n.kind] += 1
        head = (
            f"ComputationGraph {self.options.graph_name!r}: {counts['module']} module calls, "
            f"{counts['function']} ops, {counts['tensor']} tensors, {len(g.edges)} edges"
        )
        lines = [head]
        if g.error:
            lines.append(f"  error: {g.error}")
        shown = 0
        for m in g.modules():
            if shown == REPR_MODULES:
                lines.append(f"  … {counts['module'] - shown} more module calls")
                break
            shown += 1
            title = f"{m.path}: {m.cls_name}" if m.path else m.cls_name
            ins = fmt_shapes(g.shapes(g.input_tensors(m.id)))
            outs = fmt_shapes(g.shapes(g.output_tensors(m.id)))
            mark = " [failed]" if m.failed else ""
            lines.append(f"{'  ' * (m.depth + 1)}{title}  {ins} -> {outs}{mark}")
        return "\n".join(lines)

    # -- the IR ------------------------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        """IR nodes in execution order (each with ``.name``, ``.kind``, ``.path``)."""
        return self.graph.nodes

    @property
    def inputs(self) -> list[TensorNode]:
        return [self.graph.nodes[i] for i in self.graph.inputs]  # type: ignore[misc]

    @property
    def outputs(self) -> list[TensorNode]:
        return [self.graph.nodes[i] for i in self.graph.outputs]  # type: ignore[misc]

    def table(self) -> str:
        """One row per IR node: name, kind, module path, op/class, shapes."""
        return self.graph.table()


def _check_styler(styler: Any) -> GraphvizStyler | None:
    if styler is None or isinstance(styler, GraphvizStyler):
        return styler
    if isinstance(styler, type) and issubclass(styler, GraphvizStyler):
        raise InvalidTypeError(
            f"styler must be a GraphvizStyler instance, got the class {styler.__name__}: "
            f"pass an instance, e.g. styler={styler.__name__}()"
        )
    raise InvalidTypeError(
        f"styler must be a GraphvizStyler instance (e.g. GraphvizStyler(fontname='Helvetica')) or None, "
        f"got {type(styler).__name__}: {styler!r:.80}"
    )


def _check_path(path: Any) -> str:
    """A file path as ``str``: ``str``, ``bytes`` (decoded as the OS does) or ``os.PathLike``."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise InvalidTypeError(
            f"save path must be a str or os.PathLike such as 'model.svg', got {type(path).__name__}: {path!r:.80}"
        )
    return os.fsdecode(path)


__all__ = ["SAVE_FORMATS", "ComputationGraph"]

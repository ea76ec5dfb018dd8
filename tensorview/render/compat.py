"""torchrecorder-style entry point: ``make_dot(graph, render_depth, styler_cls, **styler_args)``."""

from __future__ import annotations

from typing import Any

import graphviz

from ..errors import InvalidTypeError
from ..graph import Graph
from ..transform import ViewOptions, build_view
from .dot import DotRenderer
from .style import GraphvizStyler


def make_dot(graph: Any, render_depth: int = 256, styler_cls: type[GraphvizStyler] | None = None, **styler_args: Any) -> graphviz.Digraph:
    """A ``graphviz.Digraph`` of a recorded graph (a ``ComputationGraph`` or an IR
    ``Graph``), opened down to ``render_depth`` (the view depth) with a dashed box around
    each opened module, styled by ``styler_cls(**styler_args)``."""
    ir = getattr(graph, "graph", graph)
    if not isinstance(ir, Graph):
        raise InvalidTypeError(
            "make_dot needs a recorded graph (the ComputationGraph from tv.record or draw_graph, "
            f"or its .graph), got {type(graph).__name__}: {graph!r:.80}"
        )
    base = getattr(graph, "options", None) or ViewOptions()
    options = base.replace(depth=render_depth, expand_nested=True)
    styler = (_styler_class(styler_cls) or GraphvizStyler)(**styler_args)
    return DotRenderer(styler).digraph(build_view(ir, options))


def _styler_class(styler_cls: Any) -> type[GraphvizStyler] | None:
    if styler_cls is None or (isinstance(styler_cls, type) and issubclass(styler_cls, GraphvizStyler)):
        return styler_cls
    if isinstance(styler_cls, GraphvizStyler):
        raise InvalidTypeError(
            f"styler_cls must be a class (GraphvizStyler or a subclass), got an instance of "
            f"{type(styler_cls).__name__}: pass the class, e.g. styler_cls={type(styler_cls).__name__}, "
            "and its arguments as keywords of make_dot"
        )
    raise InvalidTypeError(
        f"styler_cls must be GraphvizStyler or a subclass of it, got {styler_cls!r:.80}"
    )

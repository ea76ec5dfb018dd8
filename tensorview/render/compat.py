"""torchrecorder-style entry point: ``make_dot(graph, render_depth, styler_cls, **styler_args)``."""

from __future__ import annotations

from typing import Any

import graphviz

from ..transform import ViewOptions, build_view
from .dot import DotRenderer
from .style import GraphvizStyler


def make_dot(graph: Any, render_depth: int = 256, styler_cls: type[GraphvizStyler] | None = None, **styler_args: Any) -> graphviz.Digraph:
    """A ``graphviz.Digraph`` of a recorded graph (a ``ComputationGraph`` or an IR
    ``Graph``), opened down to ``render_depth`` (the view depth) with a dashed box around
    each opened module, styled by ``styler_cls(**styler_args)``."""
    ir = getattr(graph, "graph", graph)
    base = getattr(graph, "options", None) or ViewOptions()
    options = base.replace(depth=render_depth, expand_nested=True)
    styler = (styler_cls or GraphvizStyler)(**styler_args)
    return DotRenderer(styler).digraph(build_view(ir, options))

"""torchrecorder's API: ``record``, ``make_dot`` and ``render_network`` on tensorview's
``draw_graph`` and renderer (for code written against torchrecorder)."""

from __future__ import annotations

import os
from typing import Any

import graphviz
from torch import nn

from .api import draw_graph
from .drawing import ComputationGraph
from .errors import InvalidInputError
from .graph import Graph, ViewOptions, ir_of
from .render import DotRenderer, GraphvizStyler, RenderOptions, file_name, render_digraph
from .render.style import styler_class
from .transform import build_view


def record(
    model: nn.Module, name: str = "model", input_shapes: Any = None, input_data: Any = None, **options: Any
) -> ComputationGraph:
    """Record ``model`` without rendering (torchrecorder's ``record``); returns the graph.

    ``input_shapes`` is a shape or a list of shapes; ``input_data`` real inputs.
    Extra keyword arguments are view options (``depth``, ``show_params``...)."""
    options.setdefault("depth", 256)
    return draw_graph(model, input_data=input_data, input_size=input_shapes, graph_name=name, **options)


def make_dot(
    graph: ComputationGraph | Graph,
    render_depth: int = 256,
    styler_cls: type[GraphvizStyler] | None = None,
    **styler_args: Any,
) -> graphviz.Digraph:
    """A ``graphviz.Digraph`` of a recorded graph (a ``ComputationGraph`` or an IR
    ``Graph``), opened down to ``render_depth`` (the view depth) with a dashed box around
    each opened module, styled by ``styler_cls(**styler_args)`` (torchrecorder)."""
    ir = ir_of(graph, "make_dot")
    styler_cls = styler_class(styler_cls)
    base = graph.options if isinstance(graph, ComputationGraph) else ViewOptions()
    render_options = graph.render_options if isinstance(graph, ComputationGraph) else RenderOptions()
    options = base.replace(depth=render_depth, expand_nested=True)
    styler = (styler_cls or GraphvizStyler)(**styler_args)
    return DotRenderer(styler).digraph(build_view(ir, options), render_options)


def render_network(
    model: nn.Module,
    name: str,
    input_shapes: Any,
    directory: str,
    filename: str | None = None,
    fmt: str = "svg",
    input_data: Any = None,
    render_depth: int = 1,
    **styler_args: Any,
) -> str:
    """One call from model to image file (torchrecorder's ``render_network``); returns the path."""
    if not isinstance(fmt, str) or not fmt:
        raise InvalidInputError(f"bad fmt {fmt!r}: expected a format name such as 'svg', 'png', 'pdf'")
    graph = record(model, name, input_shapes if input_data is None else None, input_data)
    dot = make_dot(graph, render_depth=render_depth, **styler_args)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, (filename or file_name(name)) + "." + fmt)  # the name is user data
    render_digraph(dot, path, fmt)
    return path

"""Render: views as Graphviz DOT, node-link JSON, or any format written against the
small ``Renderer`` interface; ``GraphvizStyler`` decides how Graphviz output looks."""

from .base import Renderer
from .compat import make_dot
from .dot import BOUNDED_LAYOUT, DotRenderer, is_big
from .escape import attr_list, quote
from .executable import INSTALL_HINT, find_dot, render_digraph, run_dot
from .labels import fmt_value, label_lines, node_label
from .node_link import JsonRenderer
from .style import GraphvizStyler

__all__ = [
    "BOUNDED_LAYOUT",
    "INSTALL_HINT",
    "DotRenderer",
    "GraphvizStyler",
    "JsonRenderer",
    "Renderer",
    "attr_list",
    "find_dot",
    "fmt_value",
    "is_big",
    "label_lines",
    "make_dot",
    "node_label",
    "quote",
    "render_digraph",
    "run_dot",
]

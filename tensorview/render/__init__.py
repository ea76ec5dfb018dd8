"""Render: views as Graphviz DOT, node-link JSON, the interactive HTML viewer (html.py),
or any format written against the small ``Renderer`` interface; ``GraphvizStyler`` decides how Graphviz output looks,
``RenderOptions`` how a view is drawn, and formats.py lists the file formats."""

from .base import Renderer
from .dot import BOUNDED_LAYOUT, DotRenderer, is_big
from .escape import attr_list, file_name, quote
from .executable import INSTALL_HINT, find_dot, render_digraph, run_dot
from .formats import Drawing, Format, format_for, formats, register
from .labels import fmt_value, label_lines, node_label
from .node_link import JsonRenderer
from .notebook import Interactive
from .options import GRAPH_DIRS, LAYOUTS, RENDER_OPTION_NAMES, RenderOptions
from .style import GraphvizStyler
from .themes import STYLES, DarkStyler, PaperStyler, styler_for

__all__ = [
    "BOUNDED_LAYOUT",
    "GRAPH_DIRS",
    "INSTALL_HINT",
    "LAYOUTS",
    "RENDER_OPTION_NAMES",
    "STYLES",
    "DarkStyler",
    "DotRenderer",
    "Drawing",
    "Format",
    "GraphvizStyler",
    "Interactive",
    "JsonRenderer",
    "PaperStyler",
    "RenderOptions",
    "Renderer",
    "attr_list",
    "file_name",
    "find_dot",
    "fmt_value",
    "format_for",
    "formats",
    "is_big",
    "label_lines",
    "node_label",
    "quote",
    "register",
    "render_digraph",
    "run_dot",
    "styler_for",
]

"""Named looks for ``GraphvizStyler``: ``"paper"`` for figures in papers and docs, ``"dark"``
for dark notebooks, ``"default"`` the usual one.  Select one with
``draw_graph(..., style="paper")``, ``graph.view(style="dark")``, ``--style`` on the
command line, or ``GraphvizStyler.preset("paper")``.

>>> styler_for("paper").node_defaults["fontname"]
'Times-Roman'
>>> type(GraphvizStyler.preset("dark")).__name__
'DarkStyler'
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInputError, InvalidTypeError, choices_error, shown
from ..graph import Cluster, View, ViewNode
from .style import GraphvizStyler

SERIF = "Times-Roman"  # one of Graphviz's standard PostScript fonts: serif in SVG, PDF and PNG


class PaperStyler(GraphvizStyler):
    """For print: one serif font, white and grey fills told apart by lightness and shape
    (grayscale-safe, no hue carries meaning), thin black lines, tight spacing.  Tensors
    white boxes, ops white with rounded corners, module calls grey, parameters white
    notes, failed nodes dark grey with a thick border.  Meant for vector output (SVG, PDF)."""

    node_attr = {
        "shape": "box",
        "style": "filled",
        "fontname": SERIF,
        "fontsize": "10",
        "margin": "0.08,0.03",
        "height": "0.25",
        "penwidth": "0.5",
        "color": "black",
    }
    edge_attr = {"fontname": SERIF, "fontsize": "9", "arrowsize": "0.5", "penwidth": "0.5", "color": "black"}
    colors = {"tensor": "white", "function": "white", "module": "gray88", "parameter": "white", "failed": "gray55"}

    def style_graph(self, view: View) -> dict[str, Any]:
        return {"fontname": SERIF, "fontsize": "10", "nodesep": "0.2", "ranksep": "0.25", "pad": "0.05"}

    def style_node(self, node: ViewNode) -> dict[str, Any]:
        attrs = super().style_node(node)
        if attrs.get("color") == "red":  # failed: no colour, a thick border
            attrs.update(color="black", penwidth=1.5)
        elif "penwidth" in attrs:  # inputs and outputs: a little heavier than the rest
            attrs["penwidth"] = 1
        return attrs

    def style_cluster(self, cluster: Cluster) -> dict[str, Any]:
        return {**super().style_cluster(cluster), "fontname": SERIF, "penwidth": "0.5", "color": "gray40"}


#: dark theme colours: background, text, lines
DARK_BG, DARK_TEXT, DARK_LINE = "#1e1e1e", "#e0e0e0", "#9a9a9a"


class DarkStyler(GraphvizStyler):
    """For dark notebooks: a dark background, light text and lines, muted fills with the
    default look's meaning (tensors ochre, module calls green, ops blue, failed red)."""

    node_attr = {**GraphvizStyler.node_attr, "color": DARK_LINE, "fontcolor": DARK_TEXT}
    edge_attr = {**GraphvizStyler.edge_attr, "color": DARK_LINE, "fontcolor": DARK_TEXT}
    colors = {
        "tensor": "#4a4326",
        "function": "#22384f",
        "module": "#2c4a36",
        "parameter": "#3a3a3a",
        "failed": "#7a2626",
    }

    def style_graph(self, view: View) -> dict[str, Any]:
        return {"bgcolor": DARK_BG, "fontcolor": DARK_TEXT, "color": DARK_LINE}

    def style_node(self, node: ViewNode) -> dict[str, Any]:
        attrs = super().style_node(node)
        if attrs.get("color") == "red":
            attrs["color"] = "#ff6b6b"
        return attrs

    def style_cluster(self, cluster: Cluster) -> dict[str, Any]:
        return {**super().style_cluster(cluster), "color": DARK_LINE, "fontcolor": DARK_TEXT}


#: style name -> styler class
STYLES: dict[str, type[GraphvizStyler]] = {"default": GraphvizStyler, "paper": PaperStyler, "dark": DarkStyler}


def styler_for(style: Any, **node_defaults: Any) -> GraphvizStyler:
    """A new styler of the named look (``"default"``, ``"paper"``, ``"dark"``)."""
    if not isinstance(style, str) or style not in STYLES:
        raise choices_error("style", style, STYLES)
    return STYLES[style](**node_defaults)


def checked_styler(styler: Any) -> GraphvizStyler | None:
    """``styler`` as given to a drawing: a ``GraphvizStyler`` instance or None, else a clear error."""
    if styler is None or isinstance(styler, GraphvizStyler):
        return styler
    if isinstance(styler, type) and issubclass(styler, GraphvizStyler):
        raise InvalidTypeError(
            f"styler must be a GraphvizStyler instance, got the class {styler.__name__}: "
            f"pass an instance, e.g. styler={styler.__name__}()"
        )
    raise InvalidTypeError(
        f"styler must be a GraphvizStyler instance (e.g. GraphvizStyler(fontname='Helvetica')) or None, "
        f"got {type(styler).__name__}: {shown(styler)}"
    )


def styler_of_style(style: Any, styler_given: bool) -> GraphvizStyler:
    """The styler of a named look (``style=``), refused beside an explicit ``styler=``."""
    if styler_given:
        raise InvalidInputError("give style= (a named look) or styler= (a GraphvizStyler), not both")
    return styler_for(style)

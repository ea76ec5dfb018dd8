"""``GraphvizStyler``: how nodes and edges look in Graphviz.  Subclass it and override
``style_node``/``style_edge``; keyword arguments of the constructor apply to every node."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidTypeError, shown
from ..graph import Cluster, FunctionNode, ModuleNode, TensorNode, View, ViewNode, unhandled


class GraphvizStyler:
    """Default look: tensors light yellow, module calls green, functions light blue,
    parameters grey, failed nodes red, folded/rolled boxes with a double border.

    ``GraphvizStyler(fontname="Helvetica", fillcolor="white")`` sets those attributes on
    every node (they go into DOT's ``node [...]`` defaults and win over the colours
    below, except the red of failed nodes).  A returned ``label`` replaces the default
    label text.
    """

    node_attr: dict[str, str] = {
        "shape": "box",
        "style": "filled",
        "fontsize": "10",
        "margin": "0.1,0.05",
        "height": "0.3",
    }
    edge_attr: dict[str, str] = {"fontsize": "9", "arrowsize": "0.7"}
    colors: dict[str, str] = {
        "tensor": "lightyellow",
        "function": "aliceblue",
        "module": "darkseagreen1",
        "parameter": "gainsboro",
        "failed": "#ff9e9e",
    }

    def __init__(self, **node_defaults: Any) -> None:
        self.node_defaults: dict[str, Any] = {**self.node_attr, **node_defaults}
        self.user_defaults = frozenset(node_defaults)

    @staticmethod
    def preset(style: str, **node_defaults: Any) -> GraphvizStyler:
        """A styler of a named look: ``"default"``, ``"paper"`` (print: serif, grayscale-safe,
        thin lines) or ``"dark"`` (dark notebooks); see render/themes.py."""
        from .themes import styler_for

        return styler_for(style, **node_defaults)

    def style_graph(self, view: View) -> dict[str, Any]:
        """Graph attributes (``splines`` and the like); they win over ``rankdir``, which
        comes from ``RenderOptions.graph_dir``."""
        return {}

    def style_node(self, node: ViewNode) -> dict[str, Any]:
        """Graphviz attributes of one node (its label is added unless given here)."""
        attrs: dict[str, Any] = {}
        ir = node.ir
        failed = False
        match ir:
            case ModuleNode():
                attrs["fillcolor"] = self.colors["module"]
                if node.members or node.calls > 1:
                    attrs["peripheries"] = 2
                failed = ir.failed
            case FunctionNode():
                attrs["fillcolor"] = self.colors["function"]
                attrs["style"] = "filled,rounded"
                failed = ir.failed
            case TensorNode():
                kind = "parameter" if ir.is_param else "tensor"
                attrs["fillcolor"] = self.colors[kind]
                attrs["shape"] = "note" if kind == "parameter" else "box"
                if node.is_input or node.is_output:
                    attrs["penwidth"] = 1.5
            case _:
                unhandled(ir)
        for key in self.user_defaults:
            attrs.pop(key, None)
        if failed:
            attrs.update(fillcolor=self.colors["failed"], color="red", penwidth=2)
        return attrs

    def style_edge(self, src: ViewNode, dst: ViewNode) -> dict[str, Any]:
        """Graphviz attributes of the edge ``src -> dst`` (``×N`` labels are added)."""
        return {}

    def style_cluster(self, cluster: Cluster) -> dict[str, Any]:
        """Attributes of the dashed box around an opened module (a bold one around an
        opened fold: ``open_folds``)."""
        return {
            "label": cluster.label,
            "style": "bold" if cluster.members else "dashed",
            "fontsize": "10",
            "labeljust": "l",
        }


def styler_class(styler_cls: Any) -> type[GraphvizStyler] | None:
    """``styler_cls`` checked: None, or GraphvizStyler or a subclass (torchrecorder's ``make_dot``)."""
    if styler_cls is None or (isinstance(styler_cls, type) and issubclass(styler_cls, GraphvizStyler)):
        return styler_cls
    if isinstance(styler_cls, GraphvizStyler):
        raise InvalidTypeError(
            f"styler_cls must be a class (GraphvizStyler or a subclass), got an instance of "
            f"{type(styler_cls).__name__}: pass the class, e.g. styler_cls={type(styler_cls).__name__}, "
            "and its arguments as keywords of make_dot"
        )
    raise InvalidTypeError(f"styler_cls must be GraphvizStyler or a subclass of it, got {shown(styler_cls)}")

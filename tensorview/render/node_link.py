"""``JsonRenderer``: a view as node-link JSON (schema ``tensorview.view``), written
against the ``Renderer`` interface like any other format.  The full recorded graph's
JSON is ``Graph.to_dict()`` (schema ``tensorview.graph``, see docs/json-schema.md)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ..graph import Cluster, FunctionNode, ModuleNode, TensorNode, View, ViewNode, unhandled
from ..graph.serialize import envelope
from .base import Renderer
from .options import RenderOptions

SCHEMA = "tensorview.view"
SCHEMA_VERSION = 1


class JsonRenderer(Renderer):
    """``render(view)`` -> JSON text; ``to_dict(view)`` -> the same data as a dict."""

    def __init__(self, indent: int | None = 1) -> None:
        self.indent = indent
        self._data: dict[str, Any] = {}

    def to_dict(self, view: View, options: RenderOptions | None = None) -> dict[str, Any]:
        self.render(view, options)
        return self._data

    def begin_graph(self, view: View) -> None:
        options = {**dataclasses.asdict(view.options), **dataclasses.asdict(self.options)}
        self._data = envelope(
            SCHEMA,
            SCHEMA_VERSION,
            {
                "name": self.options.graph_name,
                "options": options,
                "folded": view.folded,
                "error": view.graph.error,
                "warnings": list(view.graph.warnings),
            },
            clusters=[],
            nodes=[],
            edges=[],
        )

    def render_node(self, node: ViewNode) -> None:
        ir = node.ir
        rec: dict[str, Any] = {
            "id": node.id,
            "kind": node.kind,
            "name": node.name,
            "label": self.label(node),
            "path": ir.path,
            "order": node.order,
            "index": node.index,
            "cluster": node.cluster,
            "calls": node.calls,
            "members": list(node.members),
        }
        match ir:
            case FunctionNode():
                rec["op"] = ir.op
            case ModuleNode():
                rec["class"] = ir.cls_name
                if ir.method is not None:
                    rec["method"] = ir.method
            case TensorNode():
                rec["role"] = ir.role
                rec["shape"] = list(ir.shape)
                rec["dtype"] = ir.dtype
                if ir.field is not None:
                    rec["field"] = ir.field
                if node.group:
                    rec["group"] = list(node.group)
            case _:
                unhandled(ir)
        rec["is_input"], rec["is_output"] = node.is_input, node.is_output
        self._data["nodes"].append(rec)

    def begin_module(self, cluster: Cluster) -> None:
        rec: dict[str, Any] = {
            "id": cluster.id,
            "label": cluster.label,
            "path": cluster.ir.path,
            "parent": cluster.parent,
            "order": cluster.order,
        }
        if cluster.members:  # an opened fold
            rec.update(members=list(cluster.members), period=cluster.period, shown=cluster.shown)
        self._data["clusters"].append(rec)

    def render_edge(self, src: ViewNode, dst: ViewNode, count: int) -> None:
        self._data["edges"].append({"source": src.id, "target": dst.id, "count": count})

    def end_graph(self, view: View) -> str:
        for rec, e in zip(self._data["edges"], view.edges):
            rec["order"] = e.order
        return json.dumps(self._data, indent=self.indent, ensure_ascii=False)

    def render(self, view: View, options: RenderOptions | None = None) -> str:
        return super().render(view, options).rstrip("\n") + "\n"

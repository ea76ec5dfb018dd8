"""The full recorded graph as JSON-ready data, in networkx node-link form.

Schema ``tensorview.graph`` version 3 is documented in docs/json-schema.md.  Edges are
merged per (source, target) pair with a ``count`` (``x * x`` gives one edge, count 2)
and the ``order`` of the first use.  Annotations appear per node under ``notes``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .annotations import BACKWARD_LAYER
from .nodes import FunctionNode, ModuleNode, Node, TensorNode, unhandled

if TYPE_CHECKING:
    from .graph import Graph

SCHEMA = "tensorview.graph"
SCHEMA_VERSION = 3


def merged_edges(g: Graph) -> list[tuple[int, int, int, int]]:
    """``(source, target, count, order)`` per distinct edge, in first-use order."""
    index: dict[tuple[int, int], int] = {}
    out: list[list[int]] = []
    for order, (s, d) in enumerate(g.edges):
        k = (s, d)
        i = index.get(k)
        if i is None:
            index[k] = len(out)
            out.append([s, d, 1, order])
        else:
            out[i][2] += 1
    return [(s, d, c, o) for s, d, c, o in out]


def node_record(g: Graph, node: Node) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": node.id,
        "kind": node.kind,
        "name": node.name,
        "path": node.path,
        "depth": node.depth,
        "parent": node.parent,
        "order": node.order,
    }
    match node:
        case TensorNode():
            rec["input_shapes"] = []
            rec["output_shapes"] = [list(node.shape)]
            rec["dtypes"] = [node.dtype]
            rec["device"] = node.device
            rec["role"] = node.role
            rec["copy_of"] = node.copy_of
            if node.source_name is not None:
                rec["source_name"] = node.source_name
            if node.field is not None:
                rec["field"] = node.field
        case FunctionNode() | ModuleNode():
            ins = g.input_tensors(node.id)
            outs = g.output_tensors(node.id)
            rec["input_shapes"] = [list(s) for s in g.shapes(ins)]
            rec["output_shapes"] = [list(s) for s in g.shapes(outs)]
            rec["dtypes"] = sorted({g.tensor(i).dtype for i in ins + outs})
            rec["failed"] = node.failed
            if isinstance(node, FunctionNode):
                rec["op"] = node.op
            else:
                rec["class"] = node.cls_name
                rec["class_module"] = node.cls_module
                rec["call_index"] = node.call_index
                rec["opaque"] = node.opaque
                if node.method is not None:
                    rec["method"] = node.method
        case _:
            unhandled(node)
    notes = g.annotations.of(node.id) if g.annotations else None
    if notes:
        rec["notes"] = {k: _jsonable(v) for k, v in notes.items()}
    return rec


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):  # strict JSON has no NaN or Infinity
        return "NaN" if math.isnan(v) else "Infinity" if v > 0 else "-Infinity"
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return repr(v)


def envelope(schema: str, version: int, graph: dict[str, Any], **parts: Any) -> dict[str, Any]:
    """The node-link envelope shared by the graph and view JSON."""
    return {"schema": schema, "schema_version": version, "directed": True, "multigraph": False, "graph": graph, **parts}


def to_dict(g: Graph) -> dict[str, Any]:
    return envelope(
        SCHEMA,
        SCHEMA_VERSION,
        {
            "inputs": list(g.inputs),
            "outputs": list(g.outputs),
            "root": g.root,
            "error": g.error,
            "warnings": list(g.warnings),
            # version 3: the graph holds a backward pass (draw_graph(backward=True), tv.autograd_graph)
            "backward": BACKWARD_LAYER in g.annotations,
        },
        nodes=[node_record(g, n) for n in g.nodes],
        edges=[{"source": s, "target": d, "count": c, "order": o} for s, d, c, o in merged_edges(g)],
    )

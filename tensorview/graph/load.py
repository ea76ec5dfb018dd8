"""A ``Graph`` read back from its JSON (``Graph.to_dict()``, schema ``tensorview.graph``
version 2, docs/json-schema.md), so a saved recording can be compared or drawn again
without the model (``tensorview diff old.json new.json``).

>>> from tensorview.graph import GraphBuilder
>>> b = GraphBuilder("Net")
>>> x = b.input((1, 4))
>>> b.output(b.op("relu", x, shape=(1, 4)))
>>> g = from_dict(b.finish().to_dict())
>>> [(n.kind, n.name) for n in g]
[('module', 'model'), ('tensor', 'x'), ('function', 'relu'), ('tensor', 'relu_out')]

Nodes are made again by the node factory in id order, so ids, parents, call indices and
names come back as saved; edges come back in first-use order, each ``count`` times (a
JSON edge is merged per pair, so the order of uses across pairs is approximated).
Annotations come back from ``notes`` as JSON values.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from ..errors import InvalidInputError
from .factory import NodeFactory
from .graph import Graph
from .nodes import ModuleNode, Node
from .serialize import SCHEMA, SCHEMA_VERSION


def from_dict(data: Any) -> Graph:
    """The graph saved as ``data`` (what ``Graph.to_dict()`` returned)."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise InvalidInputError(f"not a tensorview graph JSON (schema {SCHEMA!r}): {str(data)[:80]}")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise InvalidInputError(
            f"graph JSON schema_version {data.get('schema_version')!r} is not supported (only {SCHEMA_VERSION})"
        )
    try:
        return _build(data)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise InvalidInputError(f"malformed tensorview graph JSON: {type(e).__name__}: {e}") from e


def load(path: str | os.PathLike[str]) -> Graph:
    """The graph saved at ``path`` (a ``.json`` written by ``save`` or ``tensorview draw -o x.json``)."""
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise InvalidInputError(f"{os.fspath(path)!r} is not JSON: {e}") from e
    return from_dict(data)


def _build(data: dict[str, Any]) -> Graph:
    f = NodeFactory()
    records = sorted(data["nodes"], key=lambda r: r["id"])
    modules: dict[int, ModuleNode] = {}
    last: dict[int, int] = {}  # module id -> last descendant id
    for i, r in enumerate(records):
        if r["id"] != i:
            raise ValueError(f"node ids must be 0..n-1 in order, found {r['id']} at {i}")
        parent = modules.get(r["parent"]) if r["parent"] is not None else None
        if r["parent"] is not None and parent is None:
            raise ValueError(f"node {i} has parent {r['parent']}, which is not an earlier module call")
        make = _MAKERS.get(r["kind"])
        if make is None:
            raise ValueError(f"node {i} has unknown kind {r['kind']!r}")
        node = make(f, r, parent)
        if isinstance(node, ModuleNode):
            modules[i] = node
        p = r["parent"]
        while p is not None:  # every enclosing call ends after this node
            last[p] = i
            p = records[p]["parent"]
    for m in modules.values():
        m.end = last.get(m.id, m.id) + 1
        m.opaque = bool(records[m.id].get("opaque", m.end == m.id + 1))
    for e in sorted(data["edges"], key=lambda e: e["order"]):
        for _ in range(int(e.get("count", 1))):
            f.add_edge(e["source"], e["target"])
    g = f.graph
    meta = data.get("graph", {})
    g.inputs = list(meta.get("inputs", []))
    g.outputs = list(meta.get("outputs", []))
    g.error = meta.get("error")
    g.warnings = list(meta.get("warnings", []))
    _keep_names(f, records)
    layers: dict[str, dict[int, Any]] = {}
    for r in records:
        for name, value in (r.get("notes") or {}).items():
            layers.setdefault(name, {})[r["id"]] = value
    for name, values in layers.items():
        g.annotations.set(name, values)
    f.close()
    return g


def _module(f: NodeFactory, r: dict[str, Any], parent: ModuleNode | None) -> Node:
    m = f.add_module(r["path"], r["class"], r["class_module"], parent, method=r.get("method"))
    m.failed = bool(r.get("failed", False))
    return m


def _function(f: NodeFactory, r: dict[str, Any], parent: ModuleNode | None) -> Node:
    fn = f.add_function(r["op"], _parent(r, parent))
    fn.failed = bool(r.get("failed", False))
    return fn


def _tensor(f: NodeFactory, r: dict[str, Any], parent: ModuleNode | None) -> Node:
    shape, dtype = tuple(r["output_shapes"][0]), r["dtypes"][0]
    t = f.add_tensor(
        r["name"], _parent(r, parent), shape, dtype, r["device"], r["role"],
        copy_of=r.get("copy_of"), source_name=r.get("source_name"),
    )  # fmt: skip
    t.field = r.get("field")
    return t


def _parent(r: dict[str, Any], parent: ModuleNode | None) -> ModuleNode:
    if parent is None:
        raise ValueError(f"node {r['id']} ({r['kind']}) has no parent module call")
    return parent


#: the JSON's ``kind`` -> the factory call that makes the node again
_MAKERS: dict[str, Callable[[NodeFactory, dict[str, Any], ModuleNode | None], Node]] = {
    "module": _module,
    "function": _function,
    "tensor": _tensor,
}


def _keep_names(f: NodeFactory, records: list[dict[str, Any]]) -> None:
    """The saved names (unique already) are the names: each node's base is its name."""
    for node, r in zip(f.graph.nodes, records, strict=True):
        node.name = r["name"]

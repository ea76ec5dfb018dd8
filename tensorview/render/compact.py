"""The full recorded graph in a compact form for the HTML viewer (schema
``tensorview.compact``): columns of small integers and one table of distinct strings,
about a tenth of the node-link JSON (``Graph.to_dict``), carrying the same facts.

Layout (every ``*_s`` value is an index into ``strings``; node ids are positions):

* ``kind``: one letter per node, ``t``/``f``/``m``;
* ``up``: ``id - parent`` per node (0 for the root, which has none);
* ``name_s``: the node's name; ``what_s``: op (functions), class (modules), shape as
  ``"1,3,224,224"`` (tensors);
* ``modules``: per module call in id order, ``[path_s, class_module_s, end - id (0 while
  running), flags (1 failed, 2 opaque)]`` flattened; ``failed``: failed function ids;
* ``tensors``: per tensor in id order, an index into ``tensor_kinds`` (``[dtype, device,
  role]`` triples); ``copy_of``, ``source_name_s`` and ``method_s`` (a module
  call made through another method than forward): ``[id, value]`` pairs, sparse;
* ``edges``: per recorded edge (``(src, dst)`` in order, once per use) the pair
  ``[dst - previous dst, dst - src]`` flattened;
* ``notes``: per annotation layer ``{"name", "ids": id deltas, "values": indices into
  "table", "table": distinct JSON values}``;
* ``inputs``, ``outputs``, ``root``, ``error`` as in the node-link JSON.

``decode`` (used by the tests) turns the data back into plain columns.
"""

from __future__ import annotations

import json
from typing import Any

from ..graph import ROLES, FunctionNode, Graph, ModuleNode, TensorNode, unhandled
from ..graph.serialize import _jsonable

SCHEMA = "tensorview.compact"
SCHEMA_VERSION = 1
FAILED, OPAQUE = 1, 2


class _Strings:
    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.items: list[str] = []

    def __call__(self, text: str) -> int:
        i = self.index.get(text)
        if i is None:
            i = self.index[text] = len(self.items)
            self.items.append(text)
        return i


def encode(g: Graph) -> dict[str, Any]:
    """``g`` as compact JSON-ready data (see the module docstring)."""
    s = _Strings()
    kinds: list[str] = []
    up: list[int] = []
    names: list[int] = []
    what: list[int] = []
    modules: list[int] = []
    failed: list[int] = []
    tensors: list[int] = []
    tensor_kinds: dict[tuple[str, str, str], int] = {}
    copy_of: list[int] = []
    source_names: list[int] = []
    fields: list[int] = []
    methods: list[int] = []
    for node in g.nodes:
        i = node.id
        up.append(0 if node.parent is None else i - node.parent)
        names.append(s(node.name))
        match node:
            case TensorNode():
                kinds.append("t")
                what.append(s(",".join(map(str, node.shape))))
                key = (node.dtype, node.device, node.role)
                tensors.append(tensor_kinds.setdefault(key, len(tensor_kinds)))
                if node.copy_of is not None:
                    copy_of += (i, node.copy_of)
                if node.source_name is not None:
                    source_names += (i, s(node.source_name))
                if node.field is not None:
                    fields += (i, s(node.field))
            case FunctionNode():
                kinds.append("f")
                what.append(s(node.op))
                if node.failed:
                    failed.append(i)
            case ModuleNode():
                kinds.append("m")
                what.append(s(node.cls_name))
                flags = (FAILED if node.failed else 0) | (OPAQUE if node.opaque else 0)
                modules += (s(node.path), s(node.cls_module), node.end - i if node.end >= 0 else 0, flags)
                if node.method is not None:
                    methods += (i, s(node.method))
            case _:
                unhandled(node)
    edges: list[int] = []
    prev = 0
    for a, b in g.edges:
        edges += (b - prev, b - a)
        prev = b
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "roles": list(ROLES),
        "kind": "".join(kinds),
        "up": up,
        "name_s": names,
        "what_s": what,
        "modules": modules,
        "failed": failed,
        "tensors": tensors,
        "tensor_kinds": [list(k) for k in tensor_kinds],
        "copy_of": copy_of,
        "method_s": methods,
        "source_name_s": source_names,
        "field_s": fields,
        "edges": edges,
        "notes": [_layer(g, name) for name in g.annotations],
        "inputs": list(g.inputs),
        "outputs": list(g.outputs),
        "root": g.root,
        "error": g.error,
        "warnings": list(g.warnings),
        "strings": s.items,
    }


def _layer(g: Graph, name: str) -> dict[str, Any]:
    table: dict[str, int] = {}
    values: list[Any] = []
    ids: list[int] = []
    idx: list[int] = []
    prev = 0
    for i in sorted(k for k in g.annotations.layer(name) if isinstance(k, int) and 0 <= k < len(g.nodes)):
        v = _jsonable(g.annotations.layer(name)[i])
        key = json.dumps(v, sort_keys=True)
        k = table.get(key)
        if k is None:
            k = table[key] = len(values)
            values.append(v)
        ids.append(i - prev)
        idx.append(k)
        prev = i
    return {"name": name, "ids": ids, "values": idx, "table": values}


def decode(data: dict[str, Any]) -> dict[str, Any]:
    """The columns of ``encode``'s data with every index resolved (for tests and tools):
    ``kind``, ``parent``, ``name``, ``what``, ``edges`` as ``(src, dst)`` pairs, ``notes``
    as ``{layer: {id: value}}``, ``modules`` as ``{id: (path, class_module, end, flags)}``,
    ``tensors`` as ``{id: (dtype, device, role)}``, ``fields`` as ``{id: field}``."""
    strings = data["strings"]
    kind = data["kind"]
    parent = [None if d == 0 else i - d for i, d in enumerate(data["up"])]
    edges: list[tuple[int, int]] = []
    b = 0
    flat = data["edges"]
    for k in range(0, len(flat), 2):
        b += flat[k]
        edges.append((b - flat[k + 1], b))
    module_ids = [i for i, c in enumerate(kind) if c == "m"]
    m = data["modules"]
    modules = {
        i: (strings[m[4 * k]], strings[m[4 * k + 1]], i + m[4 * k + 2] if m[4 * k + 2] else -1, m[4 * k + 3])
        for k, i in enumerate(module_ids)
    }
    tensor_ids = [i for i, c in enumerate(kind) if c == "t"]
    tensors = {i: tuple(data["tensor_kinds"][k]) for i, k in zip(tensor_ids, data["tensors"])}
    notes: dict[str, dict[int, Any]] = {}
    for layer in data["notes"]:
        at, values = 0, {}
        for d, v in zip(layer["ids"], layer["values"]):
            at += d
            values[at] = layer["table"][v]
        notes[layer["name"]] = values
    return {
        "kind": kind,
        "parent": parent,
        "name": [strings[i] for i in data["name_s"]],
        "what": [strings[i] for i in data["what_s"]],
        "edges": edges,
        "modules": modules,
        "tensors": tensors,
        "notes": notes,
        "fields": {data["field_s"][k]: strings[data["field_s"][k + 1]] for k in range(0, len(data["field_s"]), 2)},
    }

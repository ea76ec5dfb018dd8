"""The IR's own contracts: the builder, typed dispatch, annotations and the format table."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.errors import InvalidInputError, InvalidTypeError
from tensorview.graph import BaseNode, Graph, GraphBuilder, ViewOptions, annotate
from tensorview.render import JsonRenderer, formats
from tensorview.render.formats import Format, format_for, register, unregister
from tensorview.taps import ForwardOutput
from tensorview.transform import build_view


def small() -> Graph:
    b = GraphBuilder("Net")
    x = b.input((1, 4))
    with b.module("fc", "Linear", x, builtin=True) as fc:
        fc.returns(b.op("linear", x, shape=(1, 2)))
    b.output(fc.outputs[0])
    return b.finish()


class Values:
    """An annotation pass with fixed values."""

    def __init__(self, name: str, values: dict[int, Any]) -> None:
        self.name, self.values = name, values

    def __call__(self, graph: Graph) -> dict[int, Any]:
        return self.values


def test_builder_assigns_ids_names_parents_depths_and_call_indices() -> None:
    b = GraphBuilder()
    root = b.add_module("", "Net", "m", None)
    x = b.add_tensor("x", root, (1, 4), "float32", "cpu", "input")
    b.add_input(x)
    first = b.add_module("blocks.0", "Block", "m", root)
    b.end_call(first)  # nothing recorded inside: opaque
    second = b.add_module("blocks.0", "Block", "m", root)
    fn = b.add_function("add", second, [x.id, x.id])
    out = b.add_tensor("add_out", second, (1, 4), "float32", "cpu", "intermediate", producer=fn.id)
    b.end_call(second)
    calls = [first, second]
    assert second.name == "blocks_0"  # a base name until the graph is named (once, at the end)
    b.resolve_names()
    g = b.graph
    assert [n.id for n in g] == list(range(len(g)))
    assert g.root == root.id and g.inputs == [x.id]
    assert [c.name for c in calls] == ["blocks_0", "blocks_0_1"] and [c.call_index for c in calls] == [0, 1]
    assert (fn.parent, fn.depth, fn.path) == (calls[1].id, 2, "blocks.0")
    assert g.predecessors(fn.id) == [x.id, x.id] and g.successors(fn.id) == [out.id]
    assert first.opaque and not second.opaque and second.contains(out.id) and not first.contains(fn.id)


def test_nodes_are_slotted_dataclasses_with_every_field_required() -> None:
    for cls in (tv.TensorNode, tv.FunctionNode, tv.ModuleNode):
        assert dataclasses.is_dataclass(cls) and "__slots__" in vars(cls)
        with pytest.raises(TypeError):
            cls(0, "a", "", None, 0)  # type: ignore[call-arg]  # the kind's own fields are missing


def test_an_unhandled_node_kind_fails_loudly() -> None:
    @dataclasses.dataclass(slots=True, kw_only=True, eq=False, repr=False)
    class OddNode(BaseNode):
        kind = "odd"

    g = small()
    g.nodes.append(OddNode(id=len(g.nodes), name="odd", path="", parent=0, depth=1))  # type: ignore[arg-type]  # outside the builder on purpose
    with pytest.raises(TypeError, match="unhandled node kind OddNode"):
        g.table()
    with pytest.raises(TypeError, match="unhandled node kind OddNode"):
        g.to_dict()


def test_annotations_reach_labels_json_and_invalidate_cached_sources() -> None:
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    graph = tv.draw_graph(model, input_size=(2, 4))
    before_source, before_svg_key = graph.source, graph.view(depth=1).source
    with ForwardOutput().modules(model, names="0") as tap:
        model(torch.randn(2, 4))
    assert tap.annotate(graph) is graph
    # the same object redraws: `.source` after annotate shows the values
    assert "stats: mean=" in graph.source and "stats:" not in before_source
    assert "stats: mean=" in graph.view(depth=1).source and "stats:" not in before_svg_key
    node = next(m for m in graph.graph.modules() if m.path == "0")
    assert graph.to_json()["nodes"][node.id]["notes"]["stats"]["samples"] == 1
    assert "stats: mean=" in JsonRenderer().to_dict(graph.get_view())["nodes"][1]["label"]
    # nodes are never mutated: annotations live in one place
    assert not hasattr(node, "notes")
    graph.graph.annotations.remove("stats")
    assert "stats:" not in graph.source


def test_annotate_validates_passes() -> None:
    g = small()
    with pytest.raises(InvalidTypeError, match="needs a str `name`"):
        annotate(g, object())  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="returned list, not a mapping"):
        annotate(g, Values("bad", [1]))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="annotation name must be a non-empty str"):
        g.annotations.set("", {})
    assert annotate(g, Values("a", {0: 1}), Values("b", {0: 2})).annotations.of(0) == {"a": 1, "b": 2}


def test_save_and_display_read_one_format_table(tmp_path: Path) -> None:
    graph = tv.ComputationGraph(small())
    assert {f.name for f in formats()} >= {"svg", "png", "pdf", "dot", "json"}
    assert format_for("GV").name == "dot" and format_for("json").mime == "application/json"
    # one registration adds a format to save() and the display
    fmt = register(Format("listing", ("txt",), "text/markdown", lambda d: d.graph.table(), display=True))
    try:
        path = graph.save(tmp_path / "g.txt")
        assert Path(path).read_text() == graph.table()
        bundle = graph._repr_mimebundle_(include=["text/markdown", "text/plain"])
        assert bundle["text/markdown"] == graph.table()
        assert fmt in formats()
    finally:
        unregister("listing")
    with pytest.raises(InvalidInputError, match="unknown save format: 'txt'"):
        graph.save(tmp_path / "g.txt")
    data = json.loads((tmp_path / "g.json").read_text()) if graph.save(tmp_path / "g.json") else None
    assert data == graph.to_json()


def test_view_types_live_beside_the_ir() -> None:
    v = build_view(small(), ViewOptions(depth=1))
    assert type(v).__module__ == "tensorview.graph.view"
    assert v.names() == ["x", "fc", "linear_out"]

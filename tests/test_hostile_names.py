"""Hostile names (issue 8, C): module, class and graph names are user data.

A model built from an untrusted config can name its modules anything (``setattr`` takes
any string, ``add_module`` anything without ``.``), and its classes too.  Text output
keeps one line per node, the DOT that tensorview writes parses and gives valid SVG, long
names are shortened in drawings (in full in tooltips and JSON), JSON is strict, and tap
files never land outside their directory.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.drawing import ComputationGraph
from tensorview.graph.listing import MAX_TEXT
from tensorview.render import GraphvizStyler, quote, run_dot
from tensorview.taps import ForwardOutput

from .fixtures import needs

HAS_DOT = shutil.which("dot") is not None or shutil.which("graphviz-pure") is not None
needs_dot = pytest.mark.skipif(not HAS_DOT, reason=needs.DOT)

#: module names a config could hold; every one is accepted by torch
NAMES = {
    "newline": "new\nline",
    "crlf_tab": "cr\r\nlf\ttab",
    "control": "ctl\x01\x1b[31m\x7f",
    "nul": "nul\x00byte",
    "surrogate": "lone\ud800surrogate",
    "html": "<script>alert(1)</script>",
    "entity": "amp&#xD800;&#1;&foo;&amp;",
    "quote_backslash": 'q"uote\\',
    "dot_keyword": "graph",
    "path": "/abs/path",
    "parent": "../up",
    "bidi_zero_width": "rtl\u202eevil\u200b\u2028",
    "long": "L" * 20_000,
}
#: class names (``type()`` refuses NUL and surrogates in them)
CLASS_NAMES = {
    "plain": "Leaf",
    "newline_html": "Evil\n<b>bold</b>",
    "control_entity": "Ctl\x01&#xD800;\x1f",
    "long": "C" * 20_000,
}


class Leaf(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.lin(x))


class Root(nn.Module):
    def __init__(self, name: str, child: nn.Module) -> None:
        super().__init__()
        self.child_name = name
        setattr(self, name, child)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._modules[self.child_name](x) + 1  # type: ignore[misc,no-any-return]


def hostile_model(name: str, cls_name: str = "Leaf") -> nn.Module:
    return Root(name, type(cls_name, (Leaf,), {})())


def drawn(name: str, cls_name: str = "Leaf", **options: Any) -> ComputationGraph:
    options.setdefault("depth", 1)  # the hostile module is a box with its path and class
    graph: ComputationGraph = tv.draw_graph(hostile_model(name, cls_name), input_size=(1, 3), **options)
    return graph


def views(graph: ComputationGraph) -> list[ComputationGraph]:
    """The box view, and one with the module opened in a dashed cluster and its parameters."""
    return [graph, graph.view(depth=2, expand_nested=True, show_params=True)]


def svg_tree(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # raises ParseError unless the SVG is well-formed XML


def svg_text(root: ET.Element) -> str:
    return "\n".join(t for el in root.iter() for t in (el.text, *el.attrib.values()) if t)


CASES = [pytest.param(n, "Leaf", id=f"name-{k}") for k, n in NAMES.items()] + [
    pytest.param("plain", c, id=f"class-{k}") for k, c in CLASS_NAMES.items() if k != "plain"
]


# -- 1. text output: one line per node ---------------------------------------------------
@pytest.mark.parametrize("name,cls_name", CASES)
def test_table_and_repr_have_one_line_per_node(name: str, cls_name: str) -> None:
    graph = drawn(name, cls_name)
    table = graph.table()
    lines = table.split("\n")
    assert len(lines) == len(graph.nodes) + 2  # header and rule, then one row per node
    assert len(table.splitlines()) == len(lines)  # no other line breaks (\r, \u2028...)
    assert all(line.isprintable() for line in lines)  # no control characters, no lone surrogates
    assert max(map(len, lines)) < 4 * MAX_TEXT  # long names are shortened
    text = repr(graph)
    modules = sum(1 for n in graph.nodes if n.kind == "module")
    assert len(text.split("\n")) == 1 + modules
    assert len(text.splitlines()) == 1 + modules
    assert all(line.isprintable() for line in text.split("\n"))
    assert max(map(len, text.split("\n"))) < 2 * MAX_TEXT
    # the full name is still in the JSON
    paths = {n["path"] for n in graph.to_json()["nodes"]}
    assert name in paths


def test_text_output_shows_escapes() -> None:
    graph = drawn("new\nline\x00", "Evil\n<b>")
    assert "new\\nline\\x00" in graph.table()
    assert "new\\nline\\x00: Evil\\n<b>" in repr(graph)
    assert "\\ud800" in drawn("sur\ud800").table()
    # an error message with line breaks stays on the error line
    g = drawn("plain").graph
    g.error = "RuntimeError: first\nsecond"
    assert "  error: RuntimeError: first\\nsecond" in repr(ComputationGraph(g))


# -- 1. DOT and SVG ------------------------------------------------------------------------
@needs_dot
@pytest.mark.parametrize("name,cls_name", CASES)
def test_svg_is_valid_xml_for_hostile_names(name: str, cls_name: str) -> None:
    graph = drawn(name, cls_name)
    for g in views(graph):
        source = g.source
        source.encode("utf-8")
        svg = g.svg()
        root = svg_tree(svg)  # also: dot accepted the DOT text
        assert "<script" not in svg and "<b>" not in svg  # markup stays text
        assert all(el.tag.rpartition("}")[2] not in ("script", "b") for el in root.iter())
        assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f]", source)  # no raw control characters


@needs_dot
def test_svg_shows_what_the_names_hold() -> None:
    text = svg_text(svg_tree(drawn("ctl\x01amp&#xD800;", "Evil<b>").svg()))
    assert "ctl\\x01amp&#xD800;: Evil<b>" in text  # visible escape, entity as literal text
    text = svg_text(svg_tree(drawn('q"uote\\&amp;').svg()))
    assert 'q"uote\\&amp;: Leaf' in text


@needs_dot
def test_long_names_are_shortened_with_the_full_text_in_a_tooltip() -> None:
    name, cls_name = "L" * 20_000, "C" * 20_000
    graph = drawn(name, cls_name, graph_name="G" * 20_000)
    for g in views(graph):
        source = g.source
        labels = re.findall(r'label="((?:[^"\\]|\\.|\\\n)*)"', source)
        assert labels
        for label in labels:
            assert all(len(line) <= MAX_TEXT for line in label.replace("\\\n", "").split("\\n"))
        assert "…" in source
        tooltips = re.findall(r'tooltip="((?:[^"\\]|\\.|\\\n)*)"', source)
        assert any(name in t.replace("\\\n", "") and cls_name in t.replace("\\\n", "") for t in tooltips)
        root = svg_tree(g.svg())  # DOT's 16384-byte limit on a quoted run is not hit
        titles = [v for el in root.iter() for k, v in el.attrib.items() if k.endswith("title")]
        assert any(f"{name}: {cls_name}" in t for t in titles)  # tooltips carry the full text
        width = float(root.attrib["width"].removesuffix("pt"))
        assert width < 5000  # not 100,000 pt wide
    assert name in {n["path"] for n in graph.to_json()["nodes"]}  # JSON keeps the full name


def test_ordinary_labels_get_no_tooltip() -> None:
    assert "tooltip" not in drawn("plain").view(depth=2, expand_nested=True, show_params=True).source


# -- 2. graph_name: the same head in .source and visual_graph --------------------------------
GRAPH_NAMES = [
    "trailing\\",
    "<b>html</b>",
    "<script>",
    'a"b',
    'a\\"b',
    "new\nline",
    "nul\x00",
    "sur\ud800",
    "&#xD800;",
    "",
    "node",
    "G" * 20_000,
    "model",
]


@pytest.mark.parametrize("graph_name", GRAPH_NAMES, ids=[ascii(n)[:24] for n in GRAPH_NAMES])
def test_graph_name_is_written_the_same_in_source_and_visual_graph(graph_name: str) -> None:
    graph = drawn("plain", graph_name=graph_name)
    assert graph.visual_graph.source == graph.source
    dot = tv.make_dot(graph)
    assert dot.source.split("\n", 1)[0] == graph.source.split("\n", 1)[0]
    if HAS_DOT:
        for source in (graph.source, graph.visual_graph.source, dot.source):
            svg_tree(run_dot(source, "svg").decode("utf-8"))


@needs_dot
@pytest.mark.parametrize("graph_name", ["trailing\\", "<b>html</b>", 'a"b\n&#1;'])
def test_render_network_with_a_hostile_name(graph_name: str, tmp_path: Path) -> None:
    path = tv.render_network(hostile_model("plain"), graph_name, (1, 3), str(tmp_path), filename="net")
    svg_tree(Path(path).read_text(encoding="utf-8"))


def test_quote_is_bare_for_plain_ids_only() -> None:
    assert quote("model") == "model" and quote("1.5") == "1.5"
    assert quote("a&b") == '"a&amp;b"'
    assert quote("x\x00\ud800") == '"x\\\\x00\\\\ud800"'
    long = quote("a" * 5000)
    assert long.count("\\\n") == 2 and long.replace("\\\n", "") == '"' + "a" * 5000 + '"'


# -- 3. strict JSON ------------------------------------------------------------------------
class Masked(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = torch.tensor([[True, False, True]])
        return x.masked_fill(mask, float("-inf"))


class Attn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.masked = Masked()
        self.weird = Masked()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.masked(x).softmax(-1) + self.weird(x * float("nan"))


def no_constants(name: str) -> Any:
    raise ValueError(f"non-strict JSON constant {name}")


def test_json_is_strict_with_non_finite_tap_statistics(tmp_path: Path) -> None:
    model = Attn()
    x = torch.randn(2, 3)
    with ForwardOutput().modules(model, names=["masked", "weird"]) as tap:
        model(x)
    graph = tv.draw_graph(model, input_data=x)
    tap.annotate(graph)
    masked_id = graph.graph.by_name("masked").id
    graph.graph.annotations.set("extra", {masked_id: [float("inf"), 1.5, {"k": float("nan")}]})
    data = json.loads(json.dumps(graph.to_json(), allow_nan=False))
    by_path = {n["path"]: n for n in data["nodes"] if n["kind"] == "module"}
    masked, weird = by_path["masked"]["notes"], by_path["weird"]["notes"]
    assert masked["stats"]["min"] == "-Infinity" and masked["stats"]["mean"] == "-Infinity"
    assert masked["stats"]["std"] == "NaN" and math.isfinite(masked["stats"]["max"])
    assert masked["extra"] == ["Infinity", 1.5, {"k": "NaN"}]
    assert weird["stats"]["mean"] == "NaN"
    path = graph.save(tmp_path / "graph.json")
    saved = json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=no_constants)
    assert saved == data


# -- 4. tap files stay inside their directory ------------------------------------------------
def test_tap_save_never_writes_outside_the_directory(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    model = nn.Module()
    names = [
        "layer",
        str(outside / "abs"),
        "../up",
        "../../x",
        "a/b",
        "a%2Fb",
        "C:x",
        "nul\x00",
        "sur\ud800",
        "\\win\\path",
        "..",
        "L" * 1000,
    ]
    for n in names:
        setattr(model, n, nn.ReLU())
    setattr(model.layer, "/nested", nn.ReLU())
    tap = ForwardOutput().modules(model)
    x = torch.randn(2)
    for _, m in list(model.named_modules())[1:]:
        m(x)
    directory = tmp_path / "taps" / "out"
    files = tap.save(directory)
    assert len(files) == len(tap.paths) == len(set(files))
    inside = directory.resolve()
    for f in files:
        assert f.resolve().parent == inside and f.is_file()
        assert len(f.name.encode()) <= 255
    assert sorted(p.resolve() for p in tmp_path.rglob("*") if p.is_file()) == sorted(f.resolve() for f in files)
    assert not outside.exists()
    # ordinary paths keep their names, and every file holds its own module's data
    assert {"model.pt", "layer.pt"} <= {f.name for f in files}
    for path, f in zip(tap.paths, files):
        assert len(torch.load(f)) == len(tap[path]) == (0 if path == "" else 1)  # the root was not called
        if path:
            assert torch.equal(torch.load(f)[0], tap[path][0])


# -- 5. styler values cannot break out of SVG attributes ---------------------------------------
EVIL = 'x" onmouseover="alert(1)" a="<b>&amp;&#xD800;'


@needs_dot
@pytest.mark.parametrize("evil", ['x" onmouseover="alert(1)', EVIL])
def test_styler_values_are_escaped(evil: str) -> None:
    styler = GraphvizStyler(fontname=evil, fontcolor=evil, URL="http://e.com/?a=1&b=" + evil, tooltip=evil)
    graph = drawn("plain").view(styler=styler)
    source = graph.source
    assert 'onmouseover="' not in source.replace('\\"', "")
    root = svg_tree(graph.svg())
    for el in root.iter():
        assert not any("onmouseover" in k for k in el.attrib)
        assert all("<" not in v for k, v in el.attrib.items() if k in ("font-family", "fill"))
    # URLs keep their query string; the quote is percent-encoded
    hrefs = [v for el in root.iter() for k, v in el.attrib.items() if k.endswith("href")]
    assert hrefs and all(h.startswith("http://e.com/?a=1&b=x%22") for h in hrefs)


@needs_dot
def test_custom_styler_attributes_and_labels_are_escaped() -> None:
    class Evil(GraphvizStyler):
        def style_node(self, node: Any) -> dict[str, Any]:
            return {**super().style_node(node), "label": "lab\x00el\n" + EVIL, "class": EVIL, "id": EVIL + str(node.id)}

        def style_cluster(self, cluster: Any) -> dict[str, Any]:
            return {**super().style_cluster(cluster), "color": EVIL, "label": EVIL}

    graph = drawn("plain").view(depth=2, expand_nested=True, styler=Evil())
    root = svg_tree(graph.svg())
    assert not any("onmouseover" in k for el in root.iter() for k in el.attrib)
    assert "lab\\x00el" in svg_text(root)

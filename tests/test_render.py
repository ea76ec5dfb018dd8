"""Rendering: DOT (golden, deterministic, escaping, styling, bounded layout), JSON,
a third renderer written only against the public interface, ComputationGraph I/O."""

from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path
from typing import Any

import graphviz
import pytest
import torch

import tensorview as tv
from tensorview import make_dot, render
from tensorview.drawing import ComputationGraph
from tensorview.errors import InvalidInputError, RenderError
from tensorview.graph import Graph, GraphBuilder
from tensorview.render import DotRenderer, GraphvizStyler, JsonRenderer, Renderer, RenderOptions, dot
from tensorview.transform import Cluster, View, ViewNode, ViewOptions, build_view

from .fixtures import needs
from .test_transform import rnn, stack, two_blocks

GOLDEN = Path(__file__).parent / "golden"
HAS_DOT = shutil.which("dot") is not None or shutil.which("graphviz-pure") is not None


def golden(name: str, text: str) -> None:
    """Compare with tests/golden/<name>; TV_UPDATE_GOLDEN=1 rewrites it."""
    path = GOLDEN / name
    if os.environ.get("TV_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_dot_golden_nested() -> None:
    cg = ComputationGraph(two_blocks(), ViewOptions(depth=3, expand_nested=True), RenderOptions(number_nodes=True))
    golden("two_blocks_nested.gv", cg.source)


def test_dot_golden_folded_and_params() -> None:
    cg = ComputationGraph(stack(3), ViewOptions(fold=True, show_params=True))
    golden("stack_folded.gv", cg.source)
    assert 'label="layers.0–2: Layer ×3\\n(1, 4), (1, 4) → (1, 4)"' in cg.source
    assert 'pos -> layers_0 [label="×3"]' in cg.source


def test_json_view_golden() -> None:
    golden("rnn_rolled_view.json", JsonRenderer().render(build_view(rnn(2), ViewOptions(depth=1, roll=True))))


def test_full_graph_json_golden() -> None:
    text = json.dumps(ComputationGraph(rnn(2)).to_json(), indent=1, sort_keys=False) + "\n"
    golden("rnn_graph.json", text)


def test_dot_is_byte_identical_for_the_same_graph() -> None:
    a = ComputationGraph(two_blocks(), ViewOptions(depth=3, expand_nested=True)).source
    b = ComputationGraph(two_blocks(), ViewOptions(depth=3, expand_nested=True)).source
    assert a == b
    cg = ComputationGraph(two_blocks())
    assert cg.source == DotRenderer().render(build_view(cg.graph, cg.options), cg.render_options)


def test_visual_graph_is_a_digraph_with_the_same_source() -> None:
    for name in ("model", "my model", "node"):
        cg = ComputationGraph(two_blocks(), render_options=RenderOptions(graph_name=name))
        assert isinstance(cg.visual_graph, graphviz.Digraph)
        assert cg.visual_graph.source == cg.source
        assert cg.visual_graph is cg.visual_graph  # cached


def test_escaping_of_odd_names_and_labels() -> None:
    b = GraphBuilder("Model")
    x = b.input(name='x"quoted\\')
    with b.module('we"ird path', "Odd\nClass", x) as c:
        c.returns(b.op("node", x))
    b.output(c.outputs[0])
    src = ComputationGraph(b.finish(), ViewOptions(depth=1)).source
    assert 'label="x\\"quoted\\\\\\n(1, 4)"' in src
    assert 'we_ird_path [label="we\\"ird path: Odd\\nClass' in src
    if HAS_DOT:
        render.run_dot(src, "svg")  # dot accepts it


def test_notes_are_shown_with_four_significant_digits() -> None:
    g = two_blocks()
    seq0 = g.by_name("seq_0").id
    g.annotations.set("stats", {seq0: {"mean": 0.123456, "std": 2.0, "min": -1.0, "max": 12345.678}})
    g.annotations.set("tag", {seq0: "hot"})
    src = ComputationGraph(g, ViewOptions(depth=2)).source
    assert "stats: mean=0.1235 std=2 min=-1 max=1.235e+04\\ntag: hot" in src


def test_failed_nodes_are_red() -> None:
    b = GraphBuilder("Model")
    x = b.input()
    with b.module("bad", "Bad", x, failed=True):
        b.op("matmul", x, failed=True)
    g = b.finish(lint=False)
    g.error = "RuntimeError: shapes cannot be multiplied"
    assert 'bad [label="bad: Bad' in ComputationGraph(g, ViewOptions(depth=1)).source
    src = ComputationGraph(g).source
    assert 'matmul [label="matmul\\n→ (1, 4)" fillcolor="#ff9e9e" style="filled,rounded" color=red penwidth=2]' in src
    assert "error: RuntimeError" in repr(ComputationGraph(g))


class Boxy(GraphvizStyler):
    def style_node(self, node: ViewNode) -> dict[str, Any]:
        attrs = super().style_node(node)
        if node.kind == "module":
            attrs["shape"] = "component"
        return attrs

    def style_edge(self, src: ViewNode, dst: ViewNode) -> dict[str, Any]:
        return {"color": "blue"} if src.kind == "tensor" else {}


def test_styler_subclass_and_keyword_defaults() -> None:
    styler = Boxy(fontname="Helvetica", fillcolor="white")
    src = ComputationGraph(two_blocks(), ViewOptions(depth=2), styler=styler).source
    assert (
        'node [shape=box style=filled fontsize=10 margin="0.1,0.05" height=0.3 fontname=Helvetica fillcolor=white]'
        in src
    )
    assert 'seq_0 [label="seq.0: Block\\n(1, 4) → (1, 4)" shape=component]' in src  # user fillcolor wins
    assert "x -> seq_0 [color=blue]" in src
    assert "seq_0 -> seq_1\n" in src


def test_make_dot_uses_render_depth_and_styler() -> None:
    g = two_blocks()
    d = make_dot(ComputationGraph(g), render_depth=2, styler_cls=Boxy, fontname="Courier")
    assert isinstance(d, graphviz.Digraph)
    assert "fontname=Courier" in d.source and "subgraph cluster_seq {" in d.source
    assert "seq_0 [" in d.source and "seq_0_fc" not in d.source
    assert "seq_0_fc [" in make_dot(g).source  # an IR Graph works too


def test_big_views_get_a_bounded_layout_unless_exact() -> None:
    big = ComputationGraph(stack(200, ext=False), ViewOptions(fold=False))
    assert "nslimit=2" in big.source and "mclimit=0.2" in big.source
    assert "nslimit" not in big.view(layout="exact").source
    assert "nslimit" not in ComputationGraph(two_blocks()).source


class Mermaid(Renderer):
    """A third format, written only against the public Renderer interface."""

    def begin_graph(self, view: View) -> str:
        return "flowchart " + {"TB": "TD", "LR": "LR", "BT": "BT", "RL": "RL"}[self.options.graph_dir]

    def render_node(self, node: ViewNode) -> str:
        text = self.label(node).replace("\n", "<br/>").replace('"', "#quot;")
        return f'  n{node.id}["{text}"]'

    def begin_module(self, cluster: Cluster) -> str:
        return f'  subgraph c{cluster.id}["{cluster.label}"]'

    def end_module(self, cluster: Cluster) -> str:
        return "  end"

    def render_edge(self, src: ViewNode, dst: ViewNode, count: int) -> str:
        return f"  n{src.id} -->|×{count}| n{dst.id}" if count > 1 else f"  n{src.id} --> n{dst.id}"


def test_a_third_renderer_through_the_public_interface() -> None:
    v = build_view(two_blocks(), ViewOptions(depth=3, expand_nested=True))
    text = Mermaid().render(v)
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    assert lines.count("  end") == len(v.clusters) == 3
    assert '  subgraph c3["seq.0: Block"]' in lines
    assert sum("-->" in line for line in lines) == len(v.edges)
    # every node appears before the edges, each cluster's nodes inside it
    assert lines.index('  subgraph c3["seq.0: Block"]') < lines.index('  n4["seq.0.fc: Linear<br/>(1, 4) → (1, 4)"]')


def test_json_view_is_node_link_and_consistent() -> None:
    v = build_view(stack(3), ViewOptions(fold=True, depth=3))
    data = json.loads(JsonRenderer().render(v))
    assert data["schema"] == "tensorview.view" and data["directed"] is True
    ids = {n["id"] for n in data["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in data["edges"])
    box = next(n for n in data["nodes"] if n["kind"] == "module")
    assert box["label"].startswith("layers.0–2: Layer ×3") and len(box["members"]) == 3
    assert [e["count"] for e in data["edges"]] == [e.count for e in v.edges]


# -- ComputationGraph ---------------------------------------------------------------------


def test_view_changes_options_and_shares_the_ir() -> None:
    cg = ComputationGraph(two_blocks())
    small = cg.view(depth=1, roll=True)
    assert small.graph is cg.graph and small.options.depth == 1 and small.options.roll
    assert cg.options.depth == 3
    with pytest.raises(InvalidInputError, match="unknown view option: 'colour'"):
        cg.view(colour="red")


def test_save_formats_and_unknown_extension(tmp_path: Path) -> None:
    cg = ComputationGraph(two_blocks())
    cg.save(tmp_path / "m.gv")
    assert (tmp_path / "m.gv").read_text(encoding="utf-8") == cg.source
    cg.save(tmp_path / "m.dot")
    cg.save(tmp_path / "m.json")
    assert json.loads((tmp_path / "m.json").read_text(encoding="utf-8")) == cg.graph.to_dict()
    with pytest.raises(InvalidInputError, match=r"unknown save format: 'bmpx' \(must be one of .*'svg'"):
        cg.save(tmp_path / "m.bmpx")
    with pytest.raises(InvalidInputError, match="unknown save format: ''"):
        cg.save(tmp_path / "noext")
    if HAS_DOT:
        cg.save(tmp_path / "m.svg")
        assert (tmp_path / "m.svg").read_text(encoding="utf-8").lstrip().startswith("<?xml")
        cg.save(tmp_path / "m.png")
        assert (tmp_path / "m.png").read_bytes()[:4] == b"\x89PNG"
        cg.save(tmp_path / "drawing", format="svg")


@pytest.mark.skipif(not HAS_DOT, reason=needs.DOT)
def test_jupyter_bundle_has_svg_png_and_text() -> None:
    cg = ComputationGraph(two_blocks())
    bundle = cg._repr_mimebundle_()
    # SVG for trusted notebooks, PNG where SVG is not shown (untrusted, sanitised HTML, GitHub)
    assert set(bundle) == {"image/svg+xml", "image/png", "text/plain"}
    assert "<svg" in bundle["image/svg+xml"] and base64.b64decode(bundle["image/png"])[:4] == b"\x89PNG"
    assert set(cg._repr_mimebundle_(include=["text/plain"])) == {"text/plain"}
    assert set(cg._repr_mimebundle_(exclude=["text/plain"])) == {"image/svg+xml", "image/png"}
    assert set(cg._repr_mimebundle_(exclude=["image/svg+xml"])) == {"image/png", "text/plain"}


def test_without_dot_rendering_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot, no graphviz-pure
    cg = ComputationGraph(two_blocks())
    with pytest.raises(RenderError, match="apt-get install graphviz.*pip install graphviz-pure"):
        cg.save(tmp_path / "m.svg")
    with pytest.raises(RenderError, match="Graphviz"):
        cg.svg()
    assert cg.source.startswith("digraph model {")
    assert cg.to_json()["schema"] == "tensorview.graph"
    cg.save(tmp_path / "m.gv")
    bundle = cg._repr_mimebundle_()
    # without dot the notebook shows the interactive viewer (the next display format)
    assert set(bundle) == {"text/html", "text/plain"} and "install" in bundle["text/plain"]
    assert "<!--tv:lib:" in bundle["text/html"] and "<!--tv:data:" in bundle["text/html"]


def test_graphviz_pure_is_used_when_dot_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "graphviz-pure"
    fake.write_text("#!/bin/sh\necho \"$@\" >&2; cat >/dev/null; echo '<svg/>'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert render.find_dot() == str(fake)
    assert ComputationGraph(two_blocks()).svg().strip() == "<svg/>"
    with pytest.raises(RenderError, match="graphviz-pure has no PDF"):
        ComputationGraph(two_blocks()).save(tmp_path / "m.pdf")


def test_repr_outline_nodes_table_inputs_outputs() -> None:
    cg = ComputationGraph(two_blocks())
    text = repr(cg)
    assert text.splitlines()[0].startswith("ComputationGraph 'model': 9 module calls")
    assert "\n      seq.0: Block  (1, 4) -> (1, 4)" in text
    assert [n.id for n in cg.nodes] == list(range(len(cg.graph.nodes)))
    assert [t.name for t in cg.inputs] == ["x"] and [t.name for t in cg.outputs] == ["mul_out"]
    assert cg.table().splitlines()[0].split() == ["name", "kind", "path", "op", "input", "shapes", "output", "shapes"]


def test_empty_and_partial_graphs_render() -> None:
    g = Graph()
    assert build_view(g).nodes == []
    b = GraphBuilder("Model")
    b.input()
    g = b.finish()
    assert ComputationGraph(g).get_view().names() == ["x"]


class Skips(torch.nn.Module):
    """A chain of ``n`` (add, sin) steps that each add the first activation back in: one
    long edge per step, as a UNet's time embedding or text states fan out."""

    def __init__(self, n: int, skip: bool = True) -> None:
        super().__init__()
        self.n, self.skip = n, skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h0 = h = x.relu()
        for _ in range(self.n):
            h = (h + (h0 if self.skip else 1.0)).sin()
        return h


def test_views_with_many_long_edges_get_straight_edges() -> None:
    # the edge h0 -> add of step k crosses 2k-2 ranks beyond its first: n(n-1) in all,
    # doubled as the first add's edge (h0 + h0) is labelled ×2 and dot then puts a rank
    # between every two; dot's polyline/spline routing grows much faster than linearly in
    # those (a small UNet2DConditionModel's default view: 10.7 s of routing, SD 1.5's a crash)
    n = 50
    g = tv.draw_graph(Skips(n), input_size=(1, 4))
    view = g.get_view()
    assert len(view.nodes) < dot.BIG_NODES  # not big: only the long edges ask for it
    assert dot.HUGE_EDGE_RANKS > dot.long_edge_ranks(view) == 2 * n * (n - 1) > dot.LONG_EDGE_RANKS
    assert "splines=line" in g.source and "nslimit" not in g.source
    assert "splines" not in g.view(layout="exact").source
    # more ranks crossed: they also make dot's x-positioning slow, so the tightest bounds
    more = tv.draw_graph(Skips(70), input_size=(1, 4))
    assert dot.long_edge_ranks(more.get_view()) == 2 * 70 * 69 > dot.HUGE_EDGE_RANKS
    assert "nslimit=1 " in more.source and "splines=line" in more.source
    chain = tv.draw_graph(Skips(n, skip=False), input_size=(1, 4))
    assert dot.long_edge_ranks(chain.get_view()) == 0 and "splines" not in chain.source
    small = tv.draw_graph(Skips(3), input_size=(1, 4))
    assert dot.long_edge_ranks(small.get_view()) == 2 * 3 * 2 and "splines" not in small.source

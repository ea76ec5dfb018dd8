"""Named looks: ``style="paper"`` (one serif font, grayscale-safe fills, thin lines) and
``style="dark"`` (notebooks); the default drawing stays byte-identical."""

from __future__ import annotations

import re
import shutil

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.drawing import ComputationGraph
from tensorview.errors import InvalidInputError
from tensorview.graph import GraphBuilder, ViewOptions
from tensorview.render import DarkStyler, GraphvizStyler, PaperStyler, RenderOptions, styler_for

from .fixtures import needs
from .test_render import golden
from .test_transform import stack, two_blocks

HAS_DOT = shutil.which("dot") is not None
GRAY = re.compile(r"(white|black|gray\d{0,3}|grey\d{0,3})\Z")


def nested(style: str | None = None) -> ComputationGraph:
    cg = ComputationGraph(two_blocks(), ViewOptions(depth=3, expand_nested=True), RenderOptions(number_nodes=True))
    return cg if style is None else cg.view(style=style)


def attrs(source: str, name: str) -> list[str]:
    """Every value of attribute ``name`` in a DOT text."""
    return [a or b for a, b in re.findall(rf'\b{name}=(?:"([^"]*)"|([^\s\]]+))', source)]


def failed_graph() -> ComputationGraph:
    b = GraphBuilder("Model")
    x = b.input()
    with b.module("bad", "Bad", x, failed=True):
        b.op("matmul", x, failed=True)
    g = b.finish(lint=False)
    return ComputationGraph(g)


def test_default_is_byte_identical() -> None:
    golden("two_blocks_nested.gv", nested().source)  # the golden from before styles existed
    assert nested("default").source == nested().source
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    plain = tv.draw_graph(model, input_size=(1, 4)).source
    assert tv.draw_graph(model, input_size=(1, 4), style="default").source == plain


def test_paper_golden_and_attributes() -> None:
    source = nested("paper").source
    golden("two_blocks_paper.gv", source)
    head = source.splitlines()[1:4]  # graph, node and edge defaults: one serif font everywhere
    assert all('fontname="Times-Roman"' in line for line in head), head
    fonts = set(attrs(source, "fontname"))
    assert fonts == {"Times-Roman"}
    colours = attrs(source, "fillcolor") + attrs(source, "color")
    assert colours and all(GRAY.match(c) for c in colours), colours  # no hue carries meaning
    assert all(float(w) <= 1 for w in attrs(source, "penwidth")), attrs(source, "penwidth")
    assert "peripheries" not in source  # nothing folded here; folded boxes keep their double border:
    folded = ComputationGraph(stack(3), ViewOptions(fold=True)).view(style="paper").source
    assert "peripheries=2" in folded


def test_paper_marks_failures_without_colour() -> None:
    source = failed_graph().view(style="paper").source
    assert "red" not in source and "#ff9e9e" not in source
    assert re.search(
        r'matmul \[label="[^"]*" fillcolor=gray55 style="filled,rounded" color=black penwidth=1.5\]', source
    )


def luminance(hex_colour: str) -> float:
    r, g, b = (int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_dark_theme() -> None:
    source = nested("dark").source
    golden("two_blocks_dark.gv", source)
    graph_line = source.splitlines()[1]
    assert 'bgcolor="#1e1e1e"' in graph_line and 'fontcolor="#e0e0e0"' in graph_line
    fills = attrs(source, "fillcolor")
    assert fills and all(luminance(c) < 0.3 for c in fills), fills  # dark boxes
    assert all(luminance(c) > 0.55 for c in attrs(source, "fontcolor"))  # light text
    assert all(luminance(c) > 0.5 for c in attrs(source, "color"))  # visible lines and box borders
    assert 'color="#ff6b6b"' in failed_graph().view(style="dark").source


def test_ways_to_choose_a_style() -> None:
    assert isinstance(GraphvizStyler.preset("paper"), PaperStyler)
    assert isinstance(styler_for("dark", fontname="Helvetica"), DarkStyler)
    assert styler_for("dark", fontname="Helvetica").node_defaults["fontname"] == "Helvetica"
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    graph = tv.draw_graph(model, input_size=(1, 4), style="paper")
    assert isinstance(graph.styler, PaperStyler)
    assert isinstance(graph.view(depth=1).styler, PaperStyler)  # views keep the look
    assert graph.view(style="dark").source == tv.draw_graph(model, input_size=(1, 4), style="dark").source
    with pytest.raises(
        InvalidInputError, match=r"unknown style: 'neon' \(must be one of \['dark', 'default', 'paper'\]\)"
    ):
        tv.draw_graph(model, input_size=(1, 4), style="neon")
    with pytest.raises(InvalidInputError, match="not both"):
        graph.view(style="dark", styler=GraphvizStyler())
    assert torch.is_grad_enabled()


@pytest.mark.skipif(not HAS_DOT, reason=needs.DOT)
def test_paper_svg_uses_one_serif_font() -> None:
    svg = nested("paper").svg()
    families = set(re.findall(r'font-family="([^"]*)"', svg))
    assert families == {"Times,serif"}, families

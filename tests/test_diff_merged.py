"""The diff's merged picture (compare/merged.py): one graph, the union of both, read from
its DOT: which node has which colour and label, which edges are found in one graph only."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.compare.merged import EDGE_ADDED, EDGE_REMOVED, Merged, merged_source
from tensorview.compare.picture import ADDED, CHANGED, REMOVED, SAME, drawing

from .fixtures import needs
from .fixtures.cli import isolated_cli, run  # noqa: F401  (isolated_cli: autouse here)
from .fixtures.diff_models import IDS, Spec, Tiny

HAS_DOT = shutil.which("dot") is not None
S = Spec()
NODE = re.compile(r'^\t+"([ab]:[^"]+)" \[label="((?:[^"\\]|\\.)*)"(.*)\]$', re.M)
EDGE = re.compile(r'^\t"([ab]:[^"]+)" -> "([ab]:[^"]+)"(.*)$', re.M)


def nodes(dot: str) -> dict[str, tuple[str, str]]:
    """DOT name -> (label, fill colour)."""
    out = {}
    for name, label, rest in NODE.findall(dot):
        fill = re.search(r'fillcolor="?([#\w]+)"?', rest)
        out[name] = (label, fill.group(1) if fill else "")
    return out


def edges(dot: str) -> dict[tuple[str, str], str]:
    """(src, dst) -> edge colour ('' for an edge found in both)."""
    out = {}
    for src, dst, rest in EDGE.findall(dot):
        colour = re.search(r'color="?([#\w]+)"?', rest)
        out[(src, dst)] = colour.group(1) if colour else ""
    return out


def test_added_removed_and_changed_calls_have_their_colours_in_one_graph() -> None:
    a = Tiny(S.but(dropout_in=frozenset({0})))
    b = Tiny(S.but(q_norm_in=frozenset({1}), other_act_in=frozenset({0})))
    dot = merged_source(tv.diff(a, b, input_data=IDS))
    ns = nodes(dot)
    assert ns["a:layers_0_drop"][1] == REMOVED and ns["b:layers_1_attn_q_norm"][1] == ADDED
    assert ns["b:layers_0_mlp_act"] == (
        "layers.0.mlp.act: SiLU\\n(1, 8, 64) → (1, 8, 64)\\nclass GELU -> SiLU",
        CHANGED,
    )
    coloured = {k for k, (_, fill) in ns.items() if fill != SAME}
    assert coloured == {"a:layers_0_drop", "b:layers_1_attn_q_norm", "b:layers_0_mlp_act"}
    # one node per call found in both: a's own nodes are only what b lacks
    assert [k for k in ns if k.startswith("a:")] == ["a:layers_0_drop"]
    es = edges(dot)
    assert es[("b:layers_0_mlp_down", "a:layers_0_drop")] == EDGE_REMOVED
    assert es[("a:layers_0_drop", "b:add_1")] == EDGE_REMOVED
    assert es[("b:layers_0_mlp_down", "b:add_1")] == EDGE_ADDED  # the edge the dropout stood in
    assert es[("b:layers_1_attn_q_norm", "b:scaled_dot_product_attention_1")] == EDGE_ADDED
    assert es[("b:transpose_4", "b:scaled_dot_product_attention_1")] == EDGE_REMOVED
    assert {k for k, v in es.items() if v} == {
        ("b:layers_0_mlp_down", "a:layers_0_drop"),
        ("a:layers_0_drop", "b:add_1"),
        ("b:layers_0_mlp_down", "b:add_1"),
        ("b:transpose_4", "b:layers_1_attn_q_norm"),
        ("b:layers_1_attn_q_norm", "b:scaled_dot_product_attention_1"),
        ("b:transpose_4", "b:scaled_dot_product_attention_1"),
    }
    for src, dst in es:  # every edge joins drawn nodes
        assert src in ns and dst in ns


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_the_merged_view_lints_at_every_depth(depth: int) -> None:
    a = Tiny(S.but(dropout_in=frozenset({0}), no_residual_in=frozenset({1}), layers=3))
    b = Tiny(S.but(q_norm_in=frozenset({1}), other_act_in=frozenset({0}), attn_name="self_attn"))
    merged = Merged(tv.diff(a, b, input_data=IDS), depth)
    merged.view.lint()  # execution order, no dangling or repeated edges, clusters nest
    a_only = [n.ir.name for n in merged.view.nodes if n.id < 0]
    assert "layers_2" in a_only or "layers_2_norm1" in a_only  # the removed layer, boxed or opened


def test_a_removed_residual_is_a_red_add_and_red_edges_inside_the_opened_layer() -> None:
    d = tv.diff(Tiny(S), Tiny(S.but(no_residual_in=frozenset({0}))), input_data=IDS)
    dot = merged_source(d)  # layers.0 differs in its own ops: it is drawn opened
    ns, es = nodes(dot), edges(dot)
    assert ns["a:add"][1] == REMOVED and ns["b:add"][1] == SAME  # b's add is a's add_1
    assert [k for k, (_, fill) in ns.items() if fill != SAME] == ["a:add"]
    removed = {k for k, v in es.items() if v == EDGE_REMOVED}
    assert removed == {
        ("b:embed", "a:add"),
        ("b:layers_0_attn", "a:add"),
        ("a:add", "b:layers_0_norm2"),
        ("a:add", "b:add"),
    }
    assert {k for k, v in es.items() if v == EDGE_ADDED} == {
        ("b:layers_0_attn", "b:layers_0_norm2"),
        ("b:layers_0_attn", "b:add"),
    }
    assert 'subgraph "cluster_b:layers_0" {' in dot


def test_a_renamed_call_shows_both_names() -> None:
    d = tv.diff(Tiny(S), Tiny(S.but(attn_name="self_attn")), input_data=IDS)
    dot = drawing(d, depth=2)
    labels = {k: label for k, (label, _) in nodes(dot).items()}
    assert labels["b:layers_0_self_attn"].startswith("layers.0.attn → layers.0.self_attn: Attention")
    assert labels["b:layers_1_self_attn"].startswith("layers.1.attn → layers.1.self_attn: Attention")
    assert all(fill == SAME for _, fill in nodes(dot).values())
    dot3 = drawing(d, depth=3)  # opened, the cluster's label holds both names
    assert 'label="layers.0.attn → layers.0.self_attn: Attention"' in dot3


def test_model_names_are_escaped_in_the_merged_picture() -> None:
    class Named(nn.Module):
        def __init__(self, name: str, act: Callable[[], nn.Module]) -> None:
            super().__init__()
            self.name = name
            self.add_module(name, act())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return getattr(self, self.name)(x)

    evil = 'x" -> y [label="pwned'
    renamed = merged_source(tv.diff(Named("act", nn.ReLU), Named(evil, nn.ReLU), input_size=(1, 4)))
    assert 'label="act → x\\" -> y [label=\\"pwned: ReLU' in renamed
    other = Named("act", lambda: nn.Linear(4, 2))  # another output: removed and added
    removed = merged_source(tv.diff(Named(evil, nn.ReLU), other, input_size=(1, 4)))
    assert '[label="x\\" -> y [label=\\"pwned: ReLU' in removed
    for dot in (renamed, removed):
        assert '[label="pwned' not in dot


def test_pictures_are_merged_by_default_and_side_by_side_on_request(tmp_path: Path) -> None:
    d = tv.diff(Tiny(S.but(dropout_in=frozenset({0}))), Tiny(S), input_data=IDS)
    merged = Path(d.save(tmp_path / "m.gv")).read_text()
    side = Path(d.save(tmp_path / "s.gv", layout="side")).read_text()
    assert merged == merged_source(d) and 'subgraph "cluster_a:"' not in merged
    assert 'subgraph "cluster_a:"' in side and 'subgraph "cluster_b:"' in side
    with pytest.raises(tv.InvalidInputError, match=r"layout must be one of \['merged', 'side', 'viewer'\], got 'both'"):
        d.save(tmp_path / "x.gv", layout="both")


def test_the_cli_writes_the_merged_picture_unless_side_is_asked(capsys: pytest.CaptureFixture[str]) -> None:
    a, b = "tests.fixtures.cli_models:Showcase", "tests.fixtures.cli_models:Showcase"
    code, _, _ = run(capsys, "diff", a, b, "--input-size", "1,3,8,8", "-o", "m.gv", "-q")
    code2, _, _ = run(capsys, "diff", a, b, "--input-size", "1,3,8,8", "-o", "s.gv", "--layout", "side", "-q")
    assert (code, code2) == (0, 0)
    assert 'subgraph "cluster_a:"' not in Path("m.gv").read_text()
    assert 'subgraph "cluster_a:"' in Path("s.gv").read_text()
    code, _, err = run(capsys, "diff", a, b, "--layout", "both")
    assert code == 2 and "invalid choice: 'both'" in err


@pytest.mark.skipif(not HAS_DOT, reason=needs.DOT)
def test_the_page_can_hold_the_merged_picture(tmp_path: Path) -> None:
    d = tv.diff(Tiny(S.but(dropout_in=frozenset({0}))), Tiny(S.but(q_norm_in=frozenset({1}))), input_data=IDS)
    text = Path(d.save(tmp_path / "d.html", layout="merged")).read_text()
    titles = set(re.findall(r"<title>([^<]*)</title>", text))
    assert {"a:layers_0_drop", "b:layers_1_attn_q_norm", "b:embed"} <= titles
    assert "b:layers_0_drop" not in titles and "a:embed" not in titles


def test_a_wrapped_call_is_drawn_once_inside_its_wrapper() -> None:
    from .test_diff import LoRA, Net, X

    tuned = Net()
    tuned.fc1 = LoRA(tuned.fc1)  # type: ignore[assignment]
    dot = merged_source(tv.diff(Net(), tuned, input_data=X))
    ns, es = nodes(dot), edges(dot)
    assert not [k for k in ns if k.startswith("a:")]  # a's fc1 is b's fc1.base_layer
    assert ns["b:fc1_base_layer"][1] == SAME
    assert {k for k, (_, fill) in ns.items() if fill == ADDED} == {"b:fc1_lora_A", "b:fc1_lora_B", "b:add"}
    assert es[("b:fc1_base_layer", "b:act")] == EDGE_REMOVED and es[("b:add", "b:act")] == EDGE_ADDED
    assert es[("b:x", "b:fc1_base_layer")] == ""
    assert 'subgraph "cluster_b:fc1" {' in dot and "wrapped in LoRA (as base_layer)" in dot
    back = merged_source(tv.diff(tuned, Net(), input_data=X))  # unwrapped: the wrapper is a's own
    assert nodes(back)["b:fc1"][1] == CHANGED and 'subgraph "cluster_a:fc1" {' in back
    assert {k for k, (_, fill) in nodes(back).items() if fill == REMOVED} == {"a:fc1_lora_A", "a:fc1_lora_B", "a:add"}

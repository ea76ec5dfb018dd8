"""``tensorview diff`` / ``tensorview fingerprint`` (exit statuses, targets, saved JSON,
outputs) and the diff's pictures (``GraphDiff.save``)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from torch import nn

import tensorview as tv
from tensorview.compare.picture import ADDED, CHANGED, REMOVED, source

from .fixtures import needs
from .fixtures.cli import isolated_cli, run  # noqa: F401  (isolated_cli: autouse here)
from .fixtures.diff_models import IDS, Evil, Spec, Tiny

HAS_DOT = shutil.which("dot") is not None
FIX = "tests.fixtures.cli_models"
LLAMA = (
    "num_hidden_layers=2,hidden_size=32,intermediate_size=64,num_attention_heads=4,num_key_value_heads=2,vocab_size=100"
)


def test_identical_targets_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "diff", f"{FIX}:Stack", f"{FIX}:Stack", "--kwargs", "blocks=3", "--input-size", "1,4", "-q"
    )
    assert code == 0 and out.strip().endswith("identical")


def test_different_targets_exit_1_and_write_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "diff", "hf:llama", "hf:mistral", "--config", LLAMA, "--seq-len", "4", "-o", "d.json", "-q"
    )
    assert code == 1, out
    data = json.loads(Path("d.json").read_text())
    assert data["identical"] is False
    assert {c["b"] for c in data["changed"]} >= {"layers.0.self_attn", "norm"}
    assert out.splitlines()[0].startswith("hf:llama vs hf:mistral (module level)")


def test_saved_graphs_are_targets_and_ignore_applies(capsys: pytest.CaptureFixture[str]) -> None:
    S = Spec()
    for name, spec in (("a", S), ("b", S.but(other_act_in=frozenset({1})))):
        Path(f"{name}.json").write_text(json.dumps(tv.draw_graph(Tiny(spec), input_data=IDS).graph.to_dict()))
    code, out, _ = run(capsys, "diff", "a.json", "b.json", "--level", "op", "-q")
    assert code == 1 and out.splitlines()[1:] == ["  layers.1.mlp.act: class GELU -> SiLU; ops gelu -> silu"]
    code, out, _ = run(capsys, "diff", "a.json", "b.json", "--ignore", "class,ops", "-q")
    assert code == 0, out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["diff", "a.json"], "the following arguments are required: B"),
        (["diff", "x.json", "y.json"], "no such graph JSON: 'x.json'"),
        (["diff", "a.json", "a.json", "--ignore", "dtypes"], "--ignore: unknown kind 'dtypes' (allowed: class,"),
        (["diff", "a.json", "a.json", "--level", "layer"], "invalid choice: 'layer'"),
        (["diff", "a.json", "a.json", "-o", "d.bmp"], "-o 'd.bmp': the diff is written as .json, .txt"),
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    Path("a.json").write_text(json.dumps(tv.draw_graph(Tiny(), input_data=IDS).graph.to_dict()))
    code, _, err = run(capsys, *argv)
    assert code == 2 and message in err, err


def test_fingerprint_is_stable_across_devices_and_runs(capsys: pytest.CaptureFixture[str]) -> None:
    outs = [
        run(capsys, "fingerprint", f"{FIX}:Stack", "--kwargs", "blocks=3", "--input-size", "1,4", "--device", dev, "-q")
        for dev in ("meta", "cpu", "meta")
    ]
    assert {code for code, _, _ in outs} == {0}
    hashes = {out.split()[0] for _, out, _ in outs}
    assert len(hashes) == 1 and re.fullmatch(r"[0-9a-f]{16}", hashes.pop())
    _, other, _ = run(capsys, "fingerprint", f"{FIX}:Showcase", "--input-size", "1,3,8,8", "-q")
    assert other.split()[0] != outs[0][1].split()[0]


# -- pictures ----------------------------------------------------------------------------
def picture_diff() -> Any:
    S = Spec()
    b = S.but(q_norm_in=frozenset({1}), other_act_in=frozenset({0}))
    return tv.diff(Tiny(S.but(dropout_in=frozenset({0}))), Tiny(b), input_data=IDS)


def fills(dot: str, prefix: str) -> dict[str, str]:
    return dict(re.findall(rf'"{prefix}:(\w+)" \[label=".*?" fillcolor="?([#\w]+)"?', dot))


def test_the_picture_colours_added_removed_and_changed_calls() -> None:
    dot = source(picture_diff())
    a, b = fills(dot, "a"), fills(dot, "b")
    assert a["layers_0_drop"] == REMOVED and a["layers_0_mlp_act"] == CHANGED
    assert b["layers_1_attn_q_norm"] == ADDED and b["layers_0_mlp_act"] == CHANGED
    marked = {k for side in (a, b) for k, v in side.items() if v in (ADDED, REMOVED, CHANGED)}
    assert marked == {"layers_0_drop", "layers_0_mlp_act", "layers_1_attn_q_norm"}
    assert 'subgraph "cluster_a:"' in dot and 'subgraph "cluster_b:"' in dot


@pytest.mark.skipif(not HAS_DOT, reason=needs.DOT)
def test_save_writes_svg_json_and_text(tmp_path: Path) -> None:
    d = picture_diff()
    svg = Path(d.save(tmp_path / "d.svg")).read_text()
    assert svg.lstrip().startswith("<?xml") and "layers.1.attn.q_norm: LayerNorm" in svg
    assert json.loads(Path(d.save(tmp_path / "d.json")).read_text()) == d.to_dict()
    assert Path(d.save(tmp_path / "d.txt")).read_text() == str(d) + "\n"
    with pytest.raises(tv.InvalidInputError, match=r"cannot save a diff as '.*d\.bmp'"):
        d.save(tmp_path / "d.bmp")


def test_model_names_are_escaped_in_the_picture() -> None:
    d = tv.diff(Tiny(), Tiny(Spec(layers=3)), input_data=IDS)
    d.trees[0].name = 'evil" -> x [label="pwned'  # type: ignore[index]
    dot = source(d)
    assert 'label="a: evil\\" -> x [label=\\"pwned"' in dot


@pytest.mark.skipif(not HAS_DOT, reason=needs.DOT)
def test_the_html_page_lists_each_difference_with_its_calls(tmp_path: Path) -> None:
    d = picture_diff()
    text = Path(d.save(tmp_path / "d.html", layout="side")).read_text()
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text and "<?xml" not in text
    items = re.findall(r'<li data-nodes="([^"]*)"><span class="k">(\w+)</span> ([^<]*)</li>', text)
    import html as html_module

    got = [(kind, body, json.loads(html_module.unescape(nodes))) for nodes, kind, body in items]
    assert ("removed", "layers.0.drop (Dropout)", ["a:layers_0_drop"]) in got
    assert ("added", "layers.1.attn.q_norm (LayerNorm)", ["b:layers_1_attn_q_norm"]) in got
    assert ("class", "layers.0.mlp.act: GELU -&gt; SiLU", ["a:layers_0_mlp_act", "b:layers_0_mlp_act"]) in got
    titles = set(re.findall(r"<title>([^<]*)</title>", text))
    assert {"a:layers_0_drop", "b:layers_1_attn_q_norm", "a:layers_0_mlp_act"} <= titles


@pytest.mark.skipif(not HAS_DOT, reason=needs.DOT)
def test_the_html_page_escapes_model_names(tmp_path: Path) -> None:
    d = tv.diff(Evil(nn.ReLU), Evil(nn.GELU), input_size=(1, 4))
    text = Path(d.save(tmp_path / "e.html", layout="side")).read_text()
    assert "</script><b>" not in text and "&lt;/script&gt;&lt;b&gt;x" in text


@pytest.mark.skipif(not HAS_DOT, reason=needs.DOT)
def test_the_html_page_outlines_the_calls_of_the_chosen_difference(tmp_path: Path) -> None:
    from .browser import Browser, why_no_browser

    if why_no_browser() is not None:
        pytest.skip(f"no browser: {why_no_browser()}")
    path = picture_diff().save(tmp_path / "d.html", layout="side")
    b = Browser()
    try:
        b.driver.get(Path(path).resolve().as_uri())
        outlined = "return [...document.querySelectorAll('g.hit title')].map(t => t.textContent).sort()"
        texts = b.js("return [...document.querySelectorAll('#list li')].map(li => li.textContent)")
        b.js("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'n'}))")
        first = b.js(outlined)
        b.js(
            "document.querySelectorAll('#list li')[arguments[0]].click()",
            texts.index("added layers.1.attn.q_norm (LayerNorm)"),
        )
        added = b.js(outlined)
        errors = [e for e in b.console() if e.get("level") == "SEVERE"]
    finally:
        b.quit()
    assert texts[0] == "class layers.0.mlp.act: GELU -> SiLU"
    assert first == ["a:layers_0_mlp_act", "b:layers_0_mlp_act"]
    assert added == ["b:layers_1_attn_q_norm"] and not errors

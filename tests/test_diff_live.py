"""The interactive diff page (``d.save("diff.html")``, compare/live.py): two viewers side
by side, the list of differences, opening, closing and selection kept in step."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from torch import nn

import tensorview as tv
from tensorview.compare.live import classes, pairs
from tensorview.compare.picture import marks
from tensorview.render import html as viewer_html

from .browser import Browser, why_no_browser
from .fixtures.cli import isolated_cli, run  # noqa: F401  (isolated_cli: autouse here)
from .fixtures.diff_models import IDS, Evil, Spec, Tiny

S = Spec()


def edited() -> Any:
    """Layer 0 loses its dropout and changes its activation; layer 1's attention gains a
    norm and is renamed (``attn`` -> ``self_attn``)."""
    b = S.but(q_norm_in=frozenset({1}), other_act_in=frozenset({0}), attn_name="self_attn")
    return tv.diff(Tiny(S.but(dropout_in=frozenset({0}))), Tiny(b), input_data=IDS)


def call(d: Any, side: int, path: str) -> int:
    (i,) = [i for i, c in d.trees[side].calls.items() if c.path == path]
    return int(i)


def items(text: str) -> list[tuple[str, str, list[int]]]:
    found = re.findall(r'<li data-ids="([^"]*)"><span class="k">(\w+)</span> ([^<]*)</li>', text)
    return [(kind, unescape(body), json.loads(unescape(ids))) for ids, kind, body in found]


def test_the_page_carries_two_viewers_one_library_and_the_list(tmp_path: Path) -> None:
    d = edited()
    text = Path(d.save(tmp_path / "d.html")).read_text()
    assert text.count("<!--tv:lib:") == 1 and text.count("<!--tv:data:") == 2 and "<svg" not in text
    assert viewer_html.CSP in text
    got = items(text)
    act = [call(d, 0, "layers.0.mlp.act"), call(d, 1, "layers.0.mlp.act")]
    assert ("class", "layers.0.mlp.act: GELU -> SiLU", act) in got
    # a call only in one graph: on the other side, the matched call around it
    assert (
        "added",
        "layers.1.self_attn.q_norm (LayerNorm)",
        [call(d, 0, "layers.1.attn"), call(d, 1, "layers.1.self_attn.q_norm")],
    ) in got
    assert ("removed", "layers.0.drop (Dropout)", [call(d, 0, "layers.0.drop"), call(d, 1, "layers.0")]) in got
    assert (
        "renamed",
        "layers.1.attn -> layers.1.self_attn",
        [call(d, 0, "layers.1.attn"), call(d, 1, "layers.1.self_attn")],
    ) in got


def test_pairs_and_colours_name_the_matched_and_edited_nodes() -> None:
    d = edited()
    ta, tb = d.trees
    got = {a: b for a, b in pairs(d)}
    assert got[call(d, 0, "layers.1.attn")] == call(d, 1, "layers.1.self_attn")  # renamed
    assert got[call(d, 0, "layers.0.mlp.act")] == call(d, 1, "layers.0.mlp.act")
    gelu = ta.calls[call(d, 0, "layers.0.mlp.act")].ops
    silu = tb.calls[call(d, 1, "layers.0.mlp.act")].ops
    assert [got[o] for o in gelu] == silu  # the changed op pairs with its counterpart
    ca, cb = (classes(t.graph, m) for t, m in zip(d.trees, marks(d)))
    drop = call(d, 0, "layers.0.drop")
    assert drop in ca["removed"] and set(ta.calls[drop].ops) <= set(ca["removed"])  # and what is inside it
    assert call(d, 1, "layers.1.self_attn.q_norm") in cb["added"] and not ca["added"] and not cb["removed"]
    assert call(d, 0, "layers.0.mlp.act") in ca["changed"] and call(d, 1, "layers.0.mlp.act") in cb["changed"]
    assert {call(d, 0, "layers.0"), call(d, 0, "layers.0.mlp")} <= set(ca["holds"])
    assert call(d, 0, "layers.1") not in ca["holds"] and call(d, 1, "layers.1") in cb["holds"]


def test_a_picture_cannot_be_the_viewer(tmp_path: Path) -> None:
    with pytest.raises(tv.InvalidInputError, match="layout 'viewer' is the .html page's"):
        edited().save(tmp_path / "d.svg", layout="viewer")


def test_the_cli_writes_the_viewer_page_unless_a_static_layout_is_asked(capsys: pytest.CaptureFixture[str]) -> None:
    for name, spec in (("a", S), ("b", S.but(other_act_in=frozenset({1})))):
        Path(f"{name}.json").write_text(json.dumps(tv.draw_graph(Tiny(spec), input_data=IDS).graph.to_dict()))
    code, _, _ = run(capsys, "diff", "a.json", "b.json", "-o", "d.html", "-q")
    live = Path("d.html").read_text()
    assert code == 1 and live.count("<!--tv:data:") == 2 and "<svg" not in live
    assert [kind for kind, _, _ in items(live)] == ["class", "ops"]
    assert re.findall(r"<h2>([^<]*)</h2>", live) == ["a: a.json", "b: b.json"]  # the targets as named
    code, _, _ = run(capsys, "diff", "a.json", "b.json", "-o", "s.gv", "--layout", "side", "-q")
    assert code == 1 and 'subgraph "cluster_a:"' in Path("s.gv").read_text()
    code, _, err = run(capsys, "diff", "a.json", "b.json", "-o", "d.svg", "--layout", "viewer", "-q")
    assert code == 2 and "--layout viewer is the .html page's" in err and not Path("d.svg").exists()


def test_names_are_escaped_on_the_page(tmp_path: Path) -> None:
    d = tv.diff(Evil(nn.ReLU), Evil(nn.GELU), input_size=(1, 4))
    text = Path(d.save(tmp_path / "e.html")).read_text()
    assert "</script><b>" not in text and "&lt;/script&gt;&lt;b&gt;x: ReLU -&gt; GELU" in text


# -- in a browser ----------------------------------------------------------------------------
needs_browser = pytest.mark.skipif(why_no_browser() is not None, reason=f"no browser: {why_no_browser()}")


def ready(b: Browser) -> None:
    b.js_async(
        "var t=setInterval(function(){if(document.querySelectorAll('.tv-viewer[data-state=ready]').length===2)"
        "{clearInterval(t);done();}},50)"
    )
    b.wait_ready()


def drawn(b: Browser, side: str) -> dict[int, str]:
    """``{id: classes}`` of the nodes and boxes drawn in viewer ``side`` ("a" or "b")."""
    got = b.js(
        "return [...document.querySelectorAll('#tv-side-'+arguments[0]+' [data-id],#tv-side-'+arguments[0]+' [data-cluster]')]"
        ".map(e => [e.getAttribute('data-id') || e.getAttribute('data-cluster'), e.getAttribute('class')])",
        side,
    )
    return {int(i): cls for i, cls in got}


def press(b: Browser, selector: str) -> None:
    """Click the element ``selector`` names (an event, wherever the canvas has scrolled it)."""
    b.js("document.querySelector(arguments[0]).dispatchEvent(new MouseEvent('click', {bubbles: true}))", selector)


def selected(b: Browser) -> list[int]:
    return list(
        b.js(
            "return ['a','b'].map(s => tensorview.viewers.find(v => document.getElementById('tv-side-'+s).contains(v.root)).selected)"
        )
    )


@needs_browser
def test_the_list_opens_and_selects_each_difference_in_both_viewers(browser: Browser, tmp_path: Path) -> None:
    d = edited()
    path = d.save(tmp_path / "d.html")
    browser.open(path)
    ready(browser)
    texts = browser.js("return [...document.querySelectorAll('#list li')].map(li => li.textContent)")
    drop, layer0_b = call(d, 0, "layers.0.drop"), call(d, 1, "layers.0")
    assert "tv-diff-removed" in drawn(browser, "a")[drop]  # drawn at the first depth, red
    assert "tv-diff-holds" in drawn(browser, "b")[layer0_b]
    # the added norm, deeper than the first depth: b opens its block and selects it, a its match
    browser.js(
        "document.querySelectorAll('#list li')[arguments[0]].click()",
        texts.index("added layers.1.self_attn.q_norm (LayerNorm)"),
    )
    ready(browser)
    q_norm, attn_a = call(d, 1, "layers.1.self_attn.q_norm"), call(d, 0, "layers.1.attn")
    b_nodes = drawn(browser, "b")
    assert "tv-diff-added" in b_nodes[q_norm] and "tv-selected" in b_nodes[q_norm]
    assert selected(browser) == [attn_a, q_norm] and "tv-selected" in drawn(browser, "a")[attn_a]
    # the renamed attention: an opened box in b (selected as a box), a closed one in a
    browser.js(
        "document.querySelectorAll('#list li')[arguments[0]].click()",
        texts.index("renamed layers.1.attn -> layers.1.self_attn"),
    )
    ready(browser)
    attn_b = call(d, 1, "layers.1.self_attn")
    assert selected(browser) == [attn_a, attn_b]
    assert {"tv-cluster", "tv-selected"} <= set(drawn(browser, "b")[attn_b].split())
    # the changed activation: amber and selected in both
    act = [call(d, 0, "layers.0.mlp.act"), call(d, 1, "layers.0.mlp.act")]
    browser.js(
        "document.querySelectorAll('#list li')[arguments[0]].click()",
        texts.index("class layers.0.mlp.act: GELU -> SiLU"),
    )
    ready(browser)
    assert selected(browser) == act
    for side, i in zip("ab", act):
        assert {"tv-diff-changed", "tv-selected"} <= set(drawn(browser, side)[i].split())
    # p steps to the difference before it (n to the next), with its ids
    at = texts.index("class layers.0.mlp.act: GELU -> SiLU") - 1
    browser.js("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'p'}))")
    ready(browser)
    ids = json.loads(unescape(browser.js("return document.querySelectorAll('#list li')[arguments[0]].dataset.ids", at)))
    assert browser.js("return document.querySelector('#list li.on').textContent") == texts[at]
    assert selected(browser) == ids and min(ids) >= 0
    errors = [e for e in browser.console() if e.get("level") == "SEVERE"]
    assert not errors
    browser.screenshot("diff-viewer.png")


@needs_browser
def test_opening_closing_and_selecting_in_one_viewer_follow_in_the_other(browser: Browser, tmp_path: Path) -> None:
    d = edited()
    browser.open(d.save(tmp_path / "d.html", depth=1))
    ready(browser)
    layer1_a, layer1_b = call(d, 0, "layers.1"), call(d, 1, "layers.1")
    attn_a, attn_b = call(d, 0, "layers.1.attn"), call(d, 1, "layers.1.self_attn")
    assert layer1_b in drawn(browser, "b") and "tv-cluster" not in drawn(browser, "b")[layer1_b]
    press(browser, f'#tv-side-a [data-id="{layer1_a}"]')  # open layers.1 in a
    ready(browser)
    assert "tv-cluster" in drawn(browser, "a")[layer1_a] and "tv-cluster" in drawn(browser, "b")[layer1_b]
    assert selected(browser) == [layer1_a, layer1_b]
    # the renamed attention: opened in b, it opens in a
    press(browser, f'#tv-side-b [data-id="{attn_b}"]')
    ready(browser)
    assert "tv-cluster" in drawn(browser, "a")[attn_a] and "tv-cluster" in drawn(browser, "b")[attn_b]
    # closing layers.1 in b (its box's header) closes it in a
    press(browser, f'#tv-side-b [data-toggle="{layer1_b}"]')
    ready(browser)
    assert "tv-cluster" not in drawn(browser, "a")[layer1_a] and attn_a not in drawn(browser, "a")
    assert "tv-cluster" not in drawn(browser, "b")[layer1_b]

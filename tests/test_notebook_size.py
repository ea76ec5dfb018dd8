"""A notebook of ten viewers of small models stays small, and each viewer output works alone
(issue 20): the outputs carry dagre, not elkjs (render/html.py ``ENGINES``), and each one,
put alone into an ``<iframe sandbox="allow-scripts">`` (as Colab and VS Code show outputs),
draws its graph."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from tensorview.render import html as viewer_html

from .browser import Browser, why_no_browser
from .fixtures.notebook import notebook_text, small_drawings

BUDGET = 3_000_000  # bytes of the saved .ipynb


@pytest.fixture(scope="module")
def graphs() -> list:
    return small_drawings()


def test_ten_viewers_make_a_notebook_under_3_mb(graphs: list) -> None:
    text = notebook_text(graphs)
    cells = json.loads(text)["cells"]
    viewers = [o["data"]["text/html"] for c in cells for o in c["outputs"] if "text/html" in o["data"]]
    assert len(cells) == 10 and len(viewers) == 10
    # small because each output carries the small engine, not because it left the library out
    assert all(v.count("<!--tv:lib:") == 1 for v in viewers)
    assert len(text.encode()) < BUDGET
    # each output carries the notebook engine (dagre), and the saved page keeps elkjs
    lib = viewer_html.library(viewer_html.NOTEBOOK_ENGINE)
    assert all(lib in v for v in viewers) and viewer_html.library("elk") not in viewers[0]
    assert len(lib) < 100_000 < 600_000 < len(viewer_html.library("elk"))


@pytest.mark.skipif(why_no_browser() is not None, reason=f"no browser: {why_no_browser()}")
def test_each_of_ten_viewer_outputs_draws_alone_in_a_sandboxed_iframe(
    graphs: list, browser: Browser, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    cells = json.loads(notebook_text(graphs))["cells"]
    outputs = [o["data"]["text/html"] for c in cells for o in c["outputs"] if "text/html" in o["data"]]
    frames = "".join(
        '<iframe sandbox="allow-scripts" style="width: 700px; height: 700px" srcdoc="'
        + html.escape(f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{out}</body></html>')
        + '"></iframe>'
        for out in outputs
    )
    path = tmp_path / "ten.html"
    path.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{frames}</body></html>')
    browser.driver.get(path.as_uri())
    drawn = []
    try:
        for frame in browser.driver.find_elements(By.TAG_NAME, "iframe"):
            browser.driver.switch_to.frame(frame)
            browser.wait_ready(120)
            drawn.append(
                browser.js(
                    "return [document.querySelectorAll('.tv-viewer .tv-node').length,"
                    " document.querySelectorAll('.tv-viewer .tv-edges path').length,"
                    " tensorview.engine, tensorview.worker.where()]"
                )
            )
            browser.driver.switch_to.default_content()
    finally:
        browser.driver.switch_to.default_content()
    want = [len(g.get_view().nodes) for g in graphs]
    assert [d[0] for d in drawn] == want and min(want) >= 3
    assert all(d[1] > 0 for d in drawn)  # edges drawn too
    assert {(d[2], d[3]) for d in drawn} == {("dagre", "worker")}
    assert not [e for e in browser.console() if e["level"] == "SEVERE"]


LAYOUT_CHECK = """
var v = tensorview.viewers[0], pos = v.pos, H = tensorview.layout.HEADER, out = [];
function inside(b, c) { return b.x >= c.x - 0.5 && b.y >= c.y + H - 4 - 0.5 && b.x + b.width <= c.x + c.width + 0.5 && b.y + b.height <= c.y + c.height + 0.5; }
function overlap(a, b) { return a.x < b.x + b.width - 0.5 && b.x < a.x + a.width - 0.5 && a.y < b.y + b.height - 0.5 && b.y < a.y + a.height - 0.5; }
var boxes = [];  // [parent cluster id, box] of every member: nodes and clusters
v.view.nodes.forEach(function (n) { boxes.push([n.cluster, pos.nodes.get(n.id), 'n' + n.id]); });
v.view.clusters.forEach(function (c) { boxes.push([c.parent, pos.clusters.get(c.id), 'c' + c.id]); });
boxes.forEach(function (m) {
  // below its box's header, inside its box
  if (m[0] !== -1 && m[0] !== undefined && m[0] !== null && pos.clusters.has(m[0]) && !inside(m[1], pos.clusters.get(m[0]))) out.push('outside ' + m[2]);
});
for (var i = 0; i < boxes.length; i++) for (var j = i + 1; j < boxes.length; j++)
  if (boxes[i][0] === boxes[j][0] && overlap(boxes[i][1], boxes[j][1])) out.push('overlap ' + boxes[i][2] + ' ' + boxes[j][2]);
return [tensorview.engine, v.view.nodes.length, v.view.clusters.length, out];
"""


@pytest.mark.skipif(why_no_browser() is not None, reason=f"no browser: {why_no_browser()}")
def test_the_notebook_engine_keeps_members_inside_their_boxes_below_the_header(
    browser: Browser, tmp_path: Path
) -> None:
    import torch

    import tensorview as tv

    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
    graph = tv.draw_graph(torch.nn.TransformerEncoder(layer, 3), input_size=(1, 5, 16), open_folds=True, depth=3)
    path = tmp_path / "boxes.html"
    path.write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{graph.interactive().html}</body></html>'
    )
    browser.open(path)
    engine, nodes, clusters, problems = browser.js(LAYOUT_CHECK)
    assert engine == "dagre" and nodes == len(graph.get_view().nodes) and clusters >= 1
    assert problems == []
    # a box opened inside the fold: a nested compound, laid out again
    attn = next(m.id for m in graph.graph.modules() if m.path == "layers.0.self_attn")
    browser.js_async(
        "var done = arguments[1]; tensorview.viewers[0].open(arguments[0]).then(function () { done(); });", attn
    )
    engine, _, more, problems = browser.js(LAYOUT_CHECK)
    assert more == clusters + 1 and problems == []


NARROW_BOX_LONG_TITLE = {
    "id": "root",
    "layoutOptions": {"elk.direction": "DOWN"},
    "children": [
        {"id": "n0", "width": 40, "height": 30},
        {"id": "n2", "width": 40, "height": 30},
        {
            "id": "c1",
            "labels": [{"text": "a title much wider than the box's one member", "width": 400, "height": 18}],
            "layoutOptions": {"elk.padding": "[top=22,left=10,bottom=10,right=10]"},
            "children": [{"id": "n1", "width": 40, "height": 30}],
        },
        {"id": "n3", "width": 40, "height": 30},
    ],
    "edges": [  # n2, then the box: grown to its title's width, it would cover n2
        {"id": "e1", "sources": ["n0"], "targets": ["n2"]},
        {"id": "e0", "sources": ["n0"], "targets": ["n1"]},
        {"id": "e2", "sources": ["n0"], "targets": ["n3"]},
    ],
}


@pytest.mark.skipif(why_no_browser() is not None, reason=f"no browser: {why_no_browser()}")
def test_a_box_too_narrow_for_its_title_is_laid_out_again_with_room_for_it(browser: Browser, tmp_path: Path) -> None:
    # the box grows to its title's width after the layout; where that would cover its
    # neighbours, dagre.js lays the view out again with a node for the header
    graph = small_drawings()[1]
    path = tmp_path / "title.html"
    path.write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{graph.interactive().html}</body></html>'
    )
    browser.open(path)
    result = browser.js(
        "var s = document.createElement('script');"
        "s.text = '(function (define, module, exports) {\\n' + tensorview.engineSource + '\\n}).call(window);';"
        "document.head.appendChild(s); return window.tvDagreLayout(arguments[0]);",
        NARROW_BOX_LONG_TITLE,
    )
    boxes = {c["id"]: c for c in result["children"]}
    box, inner = boxes["c1"], boxes["c1"]["children"][0]
    assert box["width"] >= 400 and inner["y"] >= box["y"] + 22  # room for the title, above the member
    for other in ("n0", "n2", "n3"):
        b = boxes[other]
        apart = (
            b["x"] >= box["x"] + box["width"]
            or box["x"] >= b["x"] + b["width"]
            or b["y"] >= box["y"] + box["height"]
            or box["y"] >= b["y"] + b["height"]
        )
        assert apart, (other, b, box)


@pytest.mark.skipif(why_no_browser() is not None, reason=f"no browser: {why_no_browser()}")
def test_a_deep_view_is_laid_out_in_bands_in_the_worker(browser: Browser, tmp_path: Path) -> None:
    # dagre recurses along paths; a worker's stack held about 700 nodes of a chain: deeper
    # views are cut into bands (dagre.js), laid out one by one and stacked
    import torch

    import tensorview as tv

    model = torch.nn.Sequential(*[torch.nn.Linear(2, 2) for _ in range(1000)])
    graph = tv.draw_graph(model, input_size=(1, 2), fold=False, depth=1)
    path = tmp_path / "deep.html"
    path.write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{graph.interactive().html}</body></html>'
    )
    browser.open(path, timeout=300)
    engine, nodes, _, problems = browser.js(LAYOUT_CHECK)
    assert engine == "dagre" and browser.js("return tensorview.worker.where()") == "worker"
    assert nodes == len(graph.get_view().nodes) > 1000 and problems == []
    assert browser.js("return document.querySelectorAll('.tv-viewer .tv-node').length") == nodes
    # every edge drawn, top to bottom: each starts at or below its source's top, ends at its target
    ordered = browser.js(
        "var v = tensorview.viewers[0], bad = 0;"
        "v.view.edges.forEach(function (e, k) { var p = v.pos.edges.find(function (x) { return x.index === k; });"
        " var s = v.pos.nodes.get(e.src), d = v.pos.nodes.get(e.dst);"
        " if (!p || !p.points.length || !(s.y < d.y) || Math.abs(p.points[p.points.length - 1].y - d.y) > 1) bad += 1; });"
        "return [bad, v.view.edges.length];"
    )
    assert ordered[0] == 0 and ordered[1] == nodes - 1


@pytest.mark.skipif(why_no_browser() is not None, reason=f"no browser: {why_no_browser()}")
def test_an_output_asked_to_carry_elkjs_lays_out_with_it(browser: Browser, tmp_path: Path) -> None:
    graph = small_drawings()[0]
    path = tmp_path / "elk.html"
    html = graph.interactive(engine="elk").html
    path.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{html}</body></html>')
    browser.open(path)
    engine, nodes, _, problems = browser.js(LAYOUT_CHECK)
    assert engine == "elk" and nodes == len(graph.get_view().nodes) and problems == []
    assert browser.js("return tensorview.worker.where()") == "worker"


@pytest.mark.skipif(why_no_browser() is not None, reason=f"no browser: {why_no_browser()}")
def test_outputs_of_both_engines_on_one_page_each_use_their_own(browser: Browser, tmp_path: Path) -> None:
    # JupyterLab puts every output in one page: an engine="elk" output below a default one
    # unpacks its own engine, and each viewer is laid out by the engine it asked for
    graphs = small_drawings()[:2]
    body = graphs[0].interactive().html + graphs[1].interactive(engine="elk").html
    path = tmp_path / "both.html"
    path.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{body}</body></html>')
    browser.open(path)
    used = browser.js("return tensorview.viewers.map(function (v) { return tensorview.worker.engineOf(v); })")
    assert used == ["dagre", "elk"] and sorted(browser.js("return Object.keys(tensorview.engines)")) == ["dagre", "elk"]
    counts = browser.js(
        "return tensorview.viewers.map(function (v) { return v.root.querySelectorAll('.tv-node').length; })"
    )
    assert counts == [len(g.get_view().nodes) for g in graphs]
    assert browser.js("return tensorview.worker.where()") == "worker"

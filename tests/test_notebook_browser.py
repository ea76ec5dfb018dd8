"""Notebook outputs in a real browser (headless Chromium, offline): each viewer output
works alone, in any order, in a sandboxed iframe; an executed notebook converted by
nbconvert (plain and sanitised) and read without scripts shows pictures.

Skipped (with the reason) where Chromium, chromedriver, selenium or nbconvert is missing.
Screenshots land in ``out/`` as artifacts, never compared."""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import Any

import pytest
import torch

import tensorview as tv

from .browser import ROOT, Browser, why_no_browser
from .fixtures import needs
from .fixtures.cost_models import CNN

pytestmark = pytest.mark.skipif(why_no_browser() is not None, reason=f"no browser: {why_no_browser()}")
if why_no_browser() is None:
    from selenium.webdriver.common.by import By

RequireJS = """<script>/* RequireJS as the classic notebook loads it: UMD files must not call it */
window.define = function () { throw new Error("Mismatched anonymous define()"); }; window.define.amd = {};</script>"""


def page(body: str, head: str = "") -> str:
    return f'<!DOCTYPE html><html><head><meta charset="utf-8">{head}</head><body>{body}</body></html>'


def cnn() -> tv.ComputationGraph:
    return tv.draw_graph(CNN(), input_size=(1, 3, 16, 16), graph_name="cnn")


def node_counts(b: Browser) -> list[int]:
    return [int(e.get_attribute("data-nodes")) for e in b.driver.find_elements(By.CSS_SELECTOR, ".tv-viewer")]


def errors(b: Browser) -> list[dict[str, Any]]:
    return [e for e in b.console() if e["level"] in ("SEVERE", "WARNING")]


def wait_for(b: Browser, script: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := b.js(script)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{script!r} stayed false for {timeout} s")
        time.sleep(0.05)
    return value


def test_each_output_works_alone_in_any_order(browser: Browser, tmp_path: Path) -> None:
    graph = cnn()
    outputs = [graph.interactive()._repr_html_(), graph.view(depth=1).interactive()._repr_html_()]
    want = [len(graph.get_view().nodes), len(graph.view(depth=1).get_view().nodes)]
    for order in ((0, 1), (1, 0), (1,)):
        path = tmp_path / "outputs.html"
        body = "\n".join(f'<div class="output">{outputs[i]}</div>' for i in order)
        path.write_text(page(body, RequireJS), encoding="utf-8")
        browser.open(path)
        assert node_counts(browser) == [want[i] for i in order]
        assert browser.js("return tensorview.worker.where()") == "worker"  # laid out off the page's thread
        assert len(browser.driver.find_elements(By.CSS_SELECTOR, "style[data-tensorview]")) == 1
        assert browser.js("return window.ELK === undefined")  # elkjs runs only in the worker
        assert not errors(browser) and browser.requests() == []


def test_a_viewer_in_a_sandboxed_iframe_works_alone(browser: Browser, tmp_path: Path) -> None:
    # as Colab and VS Code show outputs: each in its own iframe, scripts allowed, nothing shared
    graph = cnn()
    frames = [graph.interactive()._repr_html_(), graph.view(depth=1).interactive()._repr_html_()]
    body = "".join(
        f'<iframe sandbox="allow-scripts" style="width: 900px; height: 700px" srcdoc="{html.escape(page(f))}"></iframe>'
        for f in frames
    )
    path = tmp_path / "frames.html"
    path.write_text(page(body), encoding="utf-8")
    browser.driver.get(path.as_uri())
    want = [len(graph.get_view().nodes), len(graph.view(depth=1).get_view().nodes)]
    try:
        for k, frame in enumerate(browser.driver.find_elements(By.TAG_NAME, "iframe")):
            browser.driver.switch_to.frame(frame)
            browser.wait_ready()
            assert node_counts(browser) == [want[k]]
            assert browser.js("return document.querySelectorAll('.tv-node').length") == want[k]
            assert browser.js("return tensorview.worker.where()") == "worker"  # a blob: worker, in the sandbox too
            browser.driver.switch_to.default_content()
        browser.screenshot("notebook-iframes.png")
    finally:
        browser.driver.switch_to.default_content()
    assert not errors(browser)


def test_where_no_worker_may_start_the_layout_runs_in_the_page(browser: Browser, tmp_path: Path) -> None:
    graph = cnn()
    csp = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"  # no worker-src
    head = f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
    path = tmp_path / "no-workers.html"
    path.write_text(page(graph.interactive()._repr_html_(), head + RequireJS), encoding="utf-8")
    browser.open(path)
    assert node_counts(browser) == [len(graph.get_view().nodes)]
    assert browser.js("return tensorview.worker.where()") == "page"
    others = [e for e in errors(browser) if e["source"] != "security"]  # the browser's report of the refusal
    assert not others


def test_an_output_removed_before_it_started_leaves_nothing_behind(browser: Browser, tmp_path: Path) -> None:
    output = cnn().interactive()._repr_html_()
    # the output is taken out of the page at once, while its library is still being unpacked
    body = f'<div id="out">{output}</div><script>document.getElementById("out").remove();</script>'
    path = tmp_path / "removed.html"
    path.write_text(page(body), encoding="utf-8")
    browser.driver.get(path.as_uri())
    wait_for(browser, "return window.tensorview && window.tensorview.mount && 1")  # the library did load
    time.sleep(0.5)
    assert browser.js("return document.querySelectorAll('.tv-viewer, .tv-host').length") == 0
    assert browser.js("return (window.tensorview.viewers || []).length") == 0
    assert not errors(browser)


# -- an executed notebook, as nbconvert, GitHub and untrusted notebooks show it -----------------
NOTEBOOK_CELLS = [
    "import torch\nimport tensorview as tv\nfrom tests.fixtures.cost_models import CNN",
    "graph = tv.draw_graph(CNN(), input_size=(1, 3, 16, 16), graph_name='cnn')\ngraph",
    "graph.interactive()",
    "graph.view(depth=1).interactive()",
    # a wide drawing (about 6,000 px): its picture is scaled to the output's width
    "wide = tv.draw_graph(torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(40)]), input_size=(1, 4),"
    " graph_dir='LR', depth=1, fold=False)\nwide",
]


def executed() -> Any:
    """The notebook of ``NOTEBOOK_CELLS``, run by a kernel (nbclient), outputs as stored."""
    nbformat = pytest.importorskip("nbformat", reason=needs.NBCONVERT)
    nbclient = pytest.importorskip("nbclient", reason=needs.NBCONVERT)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in NOTEBOOK_CELLS])
    nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    return nb


@pytest.fixture(scope="module")
def notebook() -> Any:
    return executed()


def outputs_of(nb: Any) -> list[list[dict[str, Any]]]:
    return [list(c.outputs) for c in nb.cells]


def test_an_executed_notebook_keeps_a_picture_beside_each_viewer(notebook: Any) -> None:
    cells = outputs_of(notebook)
    assert not [o for c in cells for o in c if o["output_type"] == "error"]
    picture = {"image/svg+xml", "image/png", "text/plain"}
    assert [set(o["data"]) for o in cells[1]] == [picture]  # draw_graph's display: the picture
    assert [set(o["data"]) for o in cells[4]] == [picture]
    for cell in cells[2:4]:  # interactive(): the picture, then the viewer
        assert [set(o["data"]) for o in cell] == [picture, {"text/html", "text/plain"}]
        assert "<!--tv:lib:" in cell[1]["data"]["text/html"]  # every viewer carries its library
    size = sum(len(str(o["data"])) for c in cells for o in c)
    assert size < 400_000  # two viewers (the library packed, ~0.07 MB each with dagre) and five pictures


def convert(nb: Any, tmp_path: Path, name: str, **options: Any) -> Path:
    nbconvert = pytest.importorskip("nbconvert", reason=needs.NBCONVERT)
    body, _ = nbconvert.HTMLExporter(**options).from_notebook_node(nb)
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


def pictures(b: Browser) -> list[dict[str, Any]]:
    """The pictures shown: SVGs (inline or as images) with their node count, PNGs with their width."""
    return list(
        b.js(
            """
var out = [];
document.querySelectorAll('svg').forEach(function (s) {
  var n = s.querySelectorAll('g.node').length;
  if (n && !s.closest('.tv-viewer') && s.getBoundingClientRect().width > 0) out.push({kind: 'svg', nodes: n});
});
document.querySelectorAll('img').forEach(function (i) {
  if (!(i.naturalWidth > 0 && i.getBoundingClientRect().width > 0)) return;
  if (i.src.indexOf('data:image/png') === 0) out.push({kind: 'png', width: i.naturalWidth});
  var svg = 'data:image/svg+xml;base64,';
  if (i.src.indexOf(svg) === 0) out.push({kind: 'svg', nodes: atob(i.src.slice(svg.length)).split('class="node"').length - 1});
});
return out;"""
        )
    )


def test_nbconvert_html_runs_the_viewers(notebook: Any, browser: Browser, tmp_path: Path) -> None:
    path = convert(notebook, tmp_path, "plain.html")
    browser.driver.get(path.as_uri())
    browser.wait_ready()
    graph = cnn()
    assert node_counts(browser) == [len(graph.get_view().nodes), len(graph.view(depth=1).get_view().nodes)]
    # draw_graph's picture stays; the pictures of interactive() are hidden by their viewers
    shown = pictures(browser)
    assert [p["kind"] for p in shown] == ["svg", "svg"] and shown[0]["nodes"] > 5 and shown[1]["nodes"] > 40
    # the wide picture (about 6,000 px) is drawn at the output's width, its proportions kept
    area, width, height = browser.js(
        "var img = document.querySelectorAll('.jp-OutputArea-child')[5].querySelector('img');"
        "var area = img.closest('.jp-OutputArea-output').getBoundingClientRect().width;"
        "var r = img.getBoundingClientRect(); return [area, r.width, r.height];"
    )
    assert area - 2 <= width <= area + 1 and 2 < height < width / 20
    hidden = "return Array.from(document.querySelectorAll('.jp-OutputArea-child')).filter(function (e) { return e.style.display === 'none'; }).length"
    assert browser.js(hidden) == 2
    browser.screenshot("nbconvert-plain.png")


def test_sanitised_nbconvert_html_shows_pictures_and_no_script_text(
    notebook: Any, browser: Browser, tmp_path: Path
) -> None:
    path = convert(notebook, tmp_path, "sanitised.html", sanitize_html=True)
    text = path.read_text(encoding="utf-8")
    assert "tv:lib:" not in text and "tv:data:" not in text  # the comments are gone
    browser.driver.get(path.as_uri())
    time.sleep(0.5)
    shown = pictures(browser)
    assert len(shown) == 4 and all(p.get("nodes", 0) > 5 or p.get("width", 0) > 50 for p in shown)
    assert not browser.driver.find_elements(By.CSS_SELECTOR, ".tv-viewer")
    # what the sanitiser leaves of a viewer output is its one starter line, shown as text
    body = browser.js("return document.body.innerText")
    assert body.count("tv:boot:") == 2 and len(body) < 5_000
    browser.screenshot("nbconvert-sanitised.png")


def test_an_untrusted_notebook_shows_pictures(notebook: Any, browser: Browser, tmp_path: Path) -> None:
    # an untrusted notebook, GitHub: no script runs, no SVG output is shown, HTML is sanitised
    untrusted = notebook.copy()
    untrusted.cells = [c.copy() for c in notebook.cells]
    for cell in untrusted.cells:
        cell.outputs = [o.copy() for o in cell.outputs]
        for o in cell.outputs:
            o["data"] = {k: v for k, v in o["data"].items() if k != "image/svg+xml"}
    path = convert(untrusted, tmp_path, "untrusted.html")
    browser.driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        browser.driver.get(path.as_uri())
        time.sleep(0.5)
        shown = pictures(browser)
        assert [p["kind"] for p in shown] == ["png"] * 4
        # the viewer outputs show nothing at all: no note, no empty box
        outputs = browser.js(
            "return Array.from(document.querySelectorAll('.jp-OutputArea-output')).map(function (e) {"
            " return [e.innerText.trim(), e.getBoundingClientRect().height]; })"
        )
        assert len(outputs) == 6 and [text for text, _ in outputs] == [""] * 6
        assert all(height < 5 for _, height in outputs[2::2])  # the two viewer outputs
        assert not browser.driver.find_elements(By.CSS_SELECTOR, ".tv-host")
        browser.screenshot("notebook-untrusted.png")
    finally:
        browser.driver.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})


def test_a_viewer_works_when_the_outputs_before_it_are_gone(notebook: Any, browser: Browser, tmp_path: Path) -> None:
    # the re-run trap: only the last viewer's output is left (its cell re-run, the others cleared)
    last = notebook.copy()
    last.cells = [c.copy() for c in notebook.cells]
    for k, cell in enumerate(last.cells):
        if k != 3:
            cell.outputs = []
    path = convert(last, tmp_path, "last.html")
    browser.driver.get(path.as_uri())
    browser.wait_ready()
    assert node_counts(browser) == [len(cnn().view(depth=1).get_view().nodes)]


# -- fits the front-end: theme, wheel, keyboard, names --------------------------------------------
def open_output(b: Browser, tmp_path: Path, body_attrs: str = "", name: str = "output.html") -> tv.ComputationGraph:
    graph = cnn()
    b.console()  # what earlier pages logged (nbconvert's pages fetch their CDN scripts) is theirs
    path = tmp_path / name
    path.write_text(
        page(f'<div class="output">{graph.interactive()._repr_html_()}</div>').replace(
            "<body>", f"<body {body_attrs}>"
        ),
        encoding="utf-8",
    )
    b.open(path)
    return graph


def canvas_colour(b: Browser) -> str:
    return str(b.js("return getComputedStyle(document.querySelector('.tv-canvas')).backgroundColor"))


def test_the_viewer_follows_the_pages_theme(browser: Browser, tmp_path: Path) -> None:
    dark, light = "rgb(30, 30, 30)", "rgb(255, 255, 255)"
    open_output(browser, tmp_path, 'data-jp-theme-light="false"')  # JupyterLab, a dark theme
    assert canvas_colour(browser) == dark
    browser.js("document.body.setAttribute('data-jp-theme-light', 'true')")  # the user switches theme
    wait_for(browser, "return !document.querySelector('.tv-viewer').classList.contains('tv-dark')", 5)
    assert canvas_colour(browser) == light
    open_output(browser, tmp_path, 'class="vscode-dark"', "vscode.html")  # VS Code's dark themes
    assert canvas_colour(browser) == dark
    toolbar = browser.js("return getComputedStyle(document.querySelector('.tv-toolbar')).backgroundColor")
    assert toolbar == "rgb(37, 37, 38)"
    open_output(browser, tmp_path, name="plain.html")
    assert canvas_colour(browser) == light
    browser.driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
    )
    try:
        wait_for(browser, "return document.querySelector('.tv-viewer').classList.contains('tv-dark')", 5)
        assert canvas_colour(browser) == dark
        browser.screenshot("viewer-os-dark.png")
    finally:
        browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    assert not errors(browser)


WHEEL = """
var c = document.querySelector('.tv-canvas'), r = c.getBoundingClientRect(), v = tensorview.viewers[0];
var before = v.canvas.scale;
var ev = new WheelEvent('wheel', {deltaY: -200, clientX: r.left + r.width / 2, clientY: r.top + r.height / 2,
                                  bubbles: true, cancelable: true, ctrlKey: arguments[0]});
c.dispatchEvent(ev);
return [ev.defaultPrevented, v.canvas.scale > before];"""


def test_in_a_notebook_the_wheel_scrolls_the_page_until_the_viewer_is_clicked(browser: Browser, tmp_path: Path) -> None:
    open_output(browser, tmp_path)
    assert browser.js(WHEEL, False) == [False, False]  # the notebook scrolls
    assert browser.js(WHEEL, True) == [True, True]  # Ctrl + wheel zooms
    browser.driver.find_element(By.CSS_SELECTOR, ".tv-canvas").click()
    assert browser.js(WHEEL, False) == [True, True]  # after a click the wheel zooms
    browser.driver.find_element(By.TAG_NAME, "body").click()


def test_keyboard_and_screen_reader_basics(browser: Browser, tmp_path: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    graph = open_output(browser, tmp_path)
    # every button has a name; every node has one (its label) and takes the focus
    unnamed = browser.js(
        "return Array.from(document.querySelectorAll('.tv-viewer button')).filter(function (b) {"
        " return !(b.getAttribute('aria-label') || b.textContent.trim()); }).length"
    )
    assert unnamed == 0
    labels = browser.js(
        "return Array.from(document.querySelectorAll('.tv-node')).map(function (n) {"
        " return [n.getAttribute('aria-label'), n.getAttribute('tabindex'), n.getAttribute('role')]; })"
    )
    assert len(labels) == len(graph.get_view().nodes)
    assert all(label and tab == "0" and role == "button" for label, tab, role in labels)
    # Tab from the page's start reaches the search box first, and its focus is visible
    browser.js("document.activeElement.blur(); window.scrollTo(0, 0)")
    ActionChains(browser.driver).send_keys(Keys.TAB).perform()
    assert browser.js("return document.activeElement.classList.contains('tv-search')")
    assert browser.js("return getComputedStyle(document.activeElement).outlineStyle") == "solid"
    # a module node, focused with the keyboard: outlined, and Enter opens it
    module = next(n for n in graph.get_view().nodes if isinstance(graph.graph.nodes[n.id], tv.ModuleNode))
    path = graph.graph.nodes[module.id].path
    browser.js(f"document.querySelector('.tv-node[data-id=\"{module.id}\"]').focus()")
    rect = f".tv-node[data-id='{module.id}'] .tv-node-rect"
    ActionChains(browser.driver).send_keys(Keys.ENTER).perform()
    browser.wait_ready()
    assert browser.driver.find_elements(By.CSS_SELECTOR, f'.tv-cluster[data-cluster="{module.id}"]'), path
    head = browser.driver.find_element(By.CSS_SELECTOR, f'.tv-cluster[data-cluster="{module.id}"] .tv-cluster-head')
    assert head.get_attribute("aria-label").startswith("Close ") and head.get_attribute("tabindex") == "0"
    assert not browser.driver.find_elements(By.CSS_SELECTOR, rect)  # drawn as an opened box now
    assert not errors(browser)


# -- a wide picture: scaled to the output, a click shows it at full size ---------------------------
WIDE_IMG = """
var img = document.querySelectorAll('.jp-OutputArea-child')[5].querySelector('img');
var out = img.parentNode;
return [img.getBoundingClientRect().width, out.getBoundingClientRect().width, out.scrollWidth];"""


def test_a_click_shows_a_wide_picture_at_full_size_where_scripts_run(
    notebook: Any, browser: Browser, tmp_path: Path
) -> None:
    # nbconvert's HTML (JupyterLab draws the same <img>): the viewers' script watches the page's clicks
    browser.driver.get(convert(notebook, tmp_path, "wide.html").as_uri())
    browser.wait_ready()
    scaled, area, _ = browser.js(WIDE_IMG)
    assert abs(scaled - area) <= 2
    img = browser.driver.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-child")[5].find_element(By.TAG_NAME, "img")
    img.click()
    full, area_after, scroll = browser.js(WIDE_IMG)
    assert full > 5 * area and area_after == area and scroll > 5 * area  # full size; the output scrolls
    assert img.get_attribute("data-tv-full") == "1" and "zoom-out" in img.get_attribute("style")
    browser.js("arguments[0].click()", img)  # a second click: back to the output's width
    assert abs(browser.js(WIDE_IMG)[0] - area) <= 2
    assert not [e for e in errors(browser) if e["source"] != "network"]  # nbconvert's CDN scripts: offline


def test_a_wide_picture_drawn_inline_toggles_itself_without_a_viewer(browser: Browser, tmp_path: Path) -> None:
    # the classic notebook draws SVG inline: the picture's own attributes do it, no viewer on the page
    wide = tv.draw_graph(
        torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(40)]),
        input_size=(1, 4),
        graph_dir="LR",
        depth=1,
        fold=False,
    )
    svg = wide._repr_mimebundle_()["image/svg+xml"]
    path = tmp_path / "inline.html"
    path.write_text(page(f'<div style="width: 800px" id="out">{svg}</div>'), encoding="utf-8")
    browser.driver.get(path.as_uri())
    width = "return document.querySelector('svg[data-tensorview]').getBoundingClientRect().width"
    assert 790 <= browser.js(width) <= 800
    browser.driver.find_element(By.CSS_SELECTOR, "svg[data-tensorview]").click()
    assert browser.js(width) > 5_000 and browser.js("return document.getElementById('out').scrollWidth") > 5_000
    browser.js("document.querySelector('svg[data-tensorview]').dispatchEvent(new MouseEvent('click'))")
    assert 790 <= browser.js(width) <= 800
    assert not errors(browser)


def test_where_no_script_runs_a_wide_picture_stays_scaled(notebook: Any, browser: Browser, tmp_path: Path) -> None:
    # sanitised nbconvert HTML: no viewer, no event attributes; the click changes nothing
    browser.driver.get(convert(notebook, tmp_path, "wide-sanitised.html", sanitize_html=True).as_uri())
    time.sleep(0.5)
    scaled, area, scroll = browser.js(WIDE_IMG)
    assert abs(scaled - area) <= 2 and scroll <= area + 1
    browser.driver.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-child")[5].find_element(By.TAG_NAME, "img").click()
    assert browser.js(WIDE_IMG) == [scaled, area, scroll]

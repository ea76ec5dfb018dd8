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

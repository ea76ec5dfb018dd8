"""``report.save("mem.html")`` (tensorview/cost/memhtml.py): the memory timeline as one
interactive, offline page, checked in headless Chromium (tests/browser.py)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.cost.memreport import CATEGORIES

from .browser import Browser, why_no_browser

HOSTILE = '<img src=x onerror="document[\'title\']=1">&amp;"'
CONTROL = "line\nbreak\x00"


def hostile_model() -> nn.Module:
    model = nn.Sequential()
    model.add_module(HOSTILE, nn.Linear(16, 32))
    model.add_module(CONTROL, nn.GELU())
    model.add_module("</script>", nn.Linear(32, 4))
    return model


def page_data(text: str) -> dict[str, Any]:
    m = re.search(r'<script id="tv-mem-data" type="application/json">(.*?)</script>', text, re.S)
    assert m is not None
    return json.loads(m.group(1))


def test_the_page_is_self_contained_and_its_data_is_the_report(tmp_path: Path) -> None:
    report = tv.memory(hostile_model(), input_size=(4, 16))
    path = tmp_path / "mem.html"
    report.save(path)
    text = path.read_text(encoding="utf-8")
    assert text.count("</script>") == 2  # the data's and the script's: no name ends one early
    assert "<img" not in text  # the name is in the data, its < as \u003c
    markup = re.sub(r'(<script id="tv-mem-data"[^>]*>).*?</script>', r"\1</script>", text, flags=re.S)
    assert " src=" not in markup and " href=" not in markup and "url(" not in markup
    assert "default-src 'none'" in text  # nothing can be loaded
    data = page_data(text)
    assert data["peak"] == report.peak_bytes and data["live"] == [e.live for e in report.timeline]
    assert [data["categories"][c] for c in data["category"]] == [e.category for e in report.timeline]
    assert [data["phases"][p] for p in data["phase"]] == [e.phase for e in report.timeline]
    names = {data["modules"][m] for m in data["module"]}
    assert {HOSTILE, "line\\nbreak\\x00", "</script>"} <= names  # one line, control characters visible


@pytest.mark.skipif(why_no_browser() is not None, reason=f"no browser: {why_no_browser()}")
def test_hover_shows_the_event_and_a_brush_zooms(browser: Browser, tmp_path: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    report = tv.memory(hostile_model(), input_size=(4, 16))
    path = tmp_path / "mem.html"
    report.save(path)
    b = browser
    b.driver.get(path.resolve().as_uri())
    deadline = time.monotonic() + 30
    while b.js("var s = document.getElementById('tv-mem-plot'); return s && s.getAttribute('data-ready')") != "1":
        assert time.monotonic() < deadline, b.js("return document.body.innerText")
        time.sleep(0.05)
    assert b.driver.title.startswith("Memory of Sequential")  # the name did not run as markup
    assert b.js("return document.querySelectorAll('img').length") == 0
    n = len(report.timeline)
    plot = b.find("#tv-mem-plot")
    areas = {e.get_attribute("data-category") for e in plot.find_elements(By.CSS_SELECTOR, ".tv-mem-area")}
    assert {"parameter", "gradient", "optimizer state", "activation"} <= areas <= set(CATEGORIES)
    phases = [e.get_attribute("data-phase") for e in plot.find_elements(By.CSS_SELECTOR, ".tv-mem-phase")]
    assert phases == ["setup", "forward", "backward", "optimizer"]
    modules = [e.get_attribute("textContent") for e in plot.find_elements(By.CSS_SELECTOR, ".tv-mem-module")]
    assert HOSTILE in modules and "line\\nbreak\\x00" in modules
    assert plot.find_elements(By.CSS_SELECTOR, ".tv-mem-peak")
    summary = b.find("#tv-mem-summary").text
    assert f"({report.peak_bytes:,} B)" in summary

    # hover: the tooltip names the event under the pointer
    left, width = 80, 1000 - 80 - 170  # memtimeline.js's plot area
    rect = b.js("var r = arguments[0].getBoundingClientRect(); return [r.left, r.top];", plot)

    def move_to(px: float) -> None:  # px: the x within the SVG
        ActionChains(b.driver).move_to_element_with_offset(plot, int(px - 500), 0).perform()

    move_to(left + width * report.peak_index / (n - 1))
    tip = b.find("#tv-mem-tip")
    j = int(tip.get_attribute("data-index"))
    e = report.timeline[j]
    text = tip.get_attribute("textContent")
    assert f"event {j}: {e.kind}" in text
    assert f"live after: {tv.cost.fmt_bytes(e.live)} ({e.live:,} B)" in text
    assert f"phase: {e.phase}, step 0" in text and f"category: {e.category}" in text
    assert f"module: {e.module or '(model)'}" in text or (e.module is None and "(outside the model)" in text)
    assert abs(j - report.peak_index) <= max(1, n // width + 1)

    # a brush from 1/4 to 1/2 of the plot zooms to those events; double-click shows all again
    ActionChains(b.driver).move_to_element_with_offset(
        plot, int(left + width / 4 - 500), 0
    ).click_and_hold().move_by_offset(int(width / 4), 0).release().perform()
    start, end = int(plot.get_attribute("data-start")), int(plot.get_attribute("data-end"))
    assert abs(start - n / 4) <= n / 20 + 1 and abs(end - n / 2) <= n / 20 + 1
    assert "zoomed" in b.find("#tv-mem-range").text
    phases_zoomed = {e.get_attribute("data-phase") for e in plot.find_elements(By.CSS_SELECTOR, ".tv-mem-phase")}
    assert phases_zoomed == {report.timeline[i].phase for i in range(start, end + 1)}
    ActionChains(b.driver).double_click(plot).perform()
    assert (plot.get_attribute("data-start"), plot.get_attribute("data-end")) == ("0", str(n - 1))
    errors = [x for x in b.console() if x["level"] in ("SEVERE", "WARNING")]
    assert not errors, errors
    assert b.requests() == []
    del rect


def test_save_names_the_formats(tmp_path: Path) -> None:
    report = tv.memory(nn.Linear(4, 4), input_size=(2, 4))
    with pytest.raises(tv.InvalidInputError, match=r"'.*mem\.png'.*SVG and HTML \(a name ending \.svg or \.html\)"):
        report.save(tmp_path / "mem.png")
    report.save(tmp_path / "MEM.HTML")
    assert page_data((tmp_path / "MEM.HTML").read_text(encoding="utf-8"))["peak"] == report.peak_bytes
    assert torch.is_grad_enabled()

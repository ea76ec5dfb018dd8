"""Headless Chromium for the viewer's browser tests (and the README screenshot).

``Browser`` starts Debian's ``chromium`` through ``chromedriver`` (selenium) with the
network switched off, opens saved pages from ``file://`` and waits for the viewer to
finish drawing.  ``why_no_browser()`` says why the tests must be skipped, or None.

    python -m tests.browser docs/images/viewer.png   # the README screenshot
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: screenshots of the browser tests (git-ignored; kept as artifacts, never compared)
ARTIFACTS = ROOT / "out"
CHROMIUM = os.environ.get("TENSORVIEW_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("TENSORVIEW_CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--allow-file-access-from-files",
)


def why_no_browser() -> str | None:
    """Why the browser tests cannot run here (None when they can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (make setup installs it with the dev dependencies)"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (shutil.which(path) or os.access(path, os.X_OK)):
            return f"{path} not found: install the Debian package {package} (make setup does as root)"
    return None


class Browser:
    """One headless Chromium, offline, with its console log kept."""

    def __init__(self, width: int = 1400, height: int = 900, *, offline: bool = True) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service

        self.profile = tempfile.mkdtemp(prefix="tv-chromium-")
        options = Options()
        options.binary_location = CHROMIUM
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--window-size={width},{height}")
        options.add_argument(f"--user-data-dir={self.profile}")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        self.driver.set_script_timeout(60)
        if offline:  # else only what the machine allows: a Jupyter server on 127.0.0.1
            self.driver.execute_cdp_cmd("Network.enable", {})
            self.driver.execute_cdp_cmd(
                "Network.emulateNetworkConditions",
                {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
            )

    def open(self, path: str | os.PathLike[str], timeout: float = 60) -> None:
        """Load a saved page and wait until its first viewer has drawn."""
        self.driver.get(Path(path).resolve().as_uri())
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 60) -> None:
        """Wait until no viewer is laying out (``data-state="ready"``)."""
        deadline = time.monotonic() + timeout
        script = (
            "var v = document.querySelectorAll('.tv-viewer');"
            "return v.length > 0 && Array.prototype.every.call(v, function (e) {"
            " return e.getAttribute('data-state') === 'ready'; });"
        )
        time.sleep(0.05)  # let a click's redraw start
        while not self.js(script):
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the viewer did not finish drawing in {timeout} s: {self.js('return document.body.innerText.slice(0, 300)')}"
                )
            time.sleep(0.05)

    def find(self, selector: str, timeout: float = 10) -> Any:
        """The first element matching the CSS ``selector``, waiting for it to appear."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.driver, timeout).until(lambda d: d.find_element(By.CSS_SELECTOR, selector))

    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def js_async(self, script: str, *args: Any) -> Any:
        """Run ``script``; it calls ``done(value)`` (the last argument) when finished."""
        return self.driver.execute_async_script("var done = arguments[arguments.length - 1];\n" + script, *args)

    def console(self) -> list[dict[str, Any]]:
        """Browser console entries since the last call."""
        return list(self.driver.get_log("browser"))

    def requests(self) -> list[str]:
        """Everything the page fetched (resource timing): nothing, for a viewer page."""
        return list(self.js("return performance.getEntriesByType('resource').map(function (e) { return e.name; })"))

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / name
        self.driver.save_screenshot(str(path))
        return path

    def quit(self) -> None:
        self.driver.quit()
        shutil.rmtree(self.profile, ignore_errors=True)


def readme_screenshot(target: Path) -> None:
    """A small Llama's viewer with its folded layers opened on the second repeat and one
    attention block selected, as the README shows it."""
    import torch
    import transformers

    import tensorview as tv

    from .fixtures.cost_models import tiny_llama_config

    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(tiny_llama_config(num_hidden_layers=6))
    graph = tv.draw_graph(
        model, input_data={"input_ids": torch.zeros(1, 16, dtype=torch.long)}, device="meta", graph_name="tiny-llama"
    )
    paths = {m.path: m.id for m in graph.graph.modules()}
    with tempfile.TemporaryDirectory() as tmp:
        page = graph.view(fold=True).save(Path(tmp) / "llama.html")
        browser = Browser(1280, 800)
        try:
            browser.open(page)
            browser.js("tensorview.viewers[0].openFold(arguments[0], 1)", paths["model.layers.0"])
            browser.wait_ready()
            browser.js(
                "var v = tensorview.viewers[0]; tensorview.panel.select(v, arguments[0], false);"
                "v.canvas.scale = 0.8; v.canvas.centerOn(v.pos.clusters.get(arguments[1])); v.canvas.ty += 50; v.canvas.apply();",
                paths["model.layers.1.self_attn"],
                paths["model.layers.1"],  # the opened fold: its box is the repeat drawn
            )
            browser.driver.save_screenshot(str(target))
        finally:
            browser.quit()


if __name__ == "__main__":
    reason = why_no_browser()
    if reason:
        sys.exit(reason)
    readme_screenshot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images/viewer.png"))

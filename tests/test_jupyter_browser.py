"""A real JupyterLab and Notebook 7 on 127.0.0.1, driven by headless Chromium.

Each test starts its own server (a token, its own config, data and runtime folders, so its
notebook-trust database starts empty), opens an executed notebook that this server never
saw (untrusted: it must show pictures), runs it (the viewers start and hide their
pictures), re-runs one viewer's cell, saves, and reopens the page (the viewers start again
from the saved outputs).  Skipped where Chromium, JupyterLab or Notebook is missing
(``make setup`` installs them with the dev dependencies).  Screenshots land in ``out/``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .browser import ROOT, Browser, why_no_browser
from .fixtures import needs
from .test_notebook_browser import executed

pytestmark = pytest.mark.skipif(why_no_browser() is not None, reason=f"no browser: {why_no_browser()}")

TOKEN = "tensorview-test"
APPS = {"lab": ("jupyterlab", "LabApp", "lab/tree"), "notebook": ("notebook", "JupyterNotebookApp", "notebooks")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``jupyter lab`` or ``jupyter notebook`` serving ``root`` on 127.0.0.1."""

    def __init__(self, app: str, root: Path) -> None:
        module, app_class, self.tree = APPS[app]
        pytest.importorskip(module, reason=needs.JUPYTER)
        self.port, self.root = free_port(), root
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        for name in ("config", "data", "runtime"):
            env[f"JUPYTER_{name.upper()}_DIR"] = str(root / f".jupyter-{name}")
        self.log = root / "server.log"
        command = [
            sys.executable,
            "-m",
            module,
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.allow_root=True",
            f"--IdentityProvider.token={TOKEN}",
            f"--{app_class}.expose_app_in_browser=True",  # window.jupyterapp: its commands
        ]
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root)
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/status?token={TOKEN}", timeout=2)
                return
            except OSError as err:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the Jupyter server did not start: {self.log.read_text()[-2000:]}") from err
                time.sleep(0.3)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{self.tree}/{name}?token={TOKEN}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    b = Browser(offline=False)  # the server is on 127.0.0.1; nothing else is reachable
    try:
        yield b
    finally:
        b.quit()


def read_when_written(path: Path, timeout: float = 30) -> Any:
    """The notebook at ``path`` once the server has written all of it: the page marks it
    saved when the server answers, and the file can still be empty for a moment then
    (seen once under load: ``NotJSONError ... ''``)."""
    import nbformat

    end = time.monotonic() + timeout
    while True:
        try:
            return nbformat.read(path, as_version=4)
        except nbformat.reader.NotJSONError:
            if time.monotonic() > end:
                raise
            time.sleep(0.2)


def until(b: Browser, script: str, what: str, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := b.js(script)):
        if time.monotonic() > deadline:
            text = b.js("var n = document.querySelector('.jp-Notebook'); return n ? n.innerText.slice(-1500) : ''")
            raise TimeoutError(f"{what}: not after {timeout} s; the notebook shows: {text}")
        time.sleep(0.2)
    return value


READY = "return document.querySelectorAll('.tv-viewer[data-state=ready]').length"
#: every cell ran (no ``[*]`` prompt) and shows its outputs
DONE = (
    "return !Array.from(document.querySelectorAll('.jp-InputPrompt')).some(function (p) {"
    " return p.textContent.indexOf('*') >= 0; })"
    " && document.querySelectorAll('.jp-Notebook .jp-OutputArea-child').length === 6"
)
OUTPUTS = """return Array.from(document.querySelectorAll('.jp-Notebook .jp-OutputArea-child')).map(function (e) {
  var img = e.querySelector('.jp-RenderedImage img, .jp-RenderedSVG img');
  return {hidden: e.style.display === 'none', height: Math.round(e.getBoundingClientRect().height),
          image: img ? img.src.slice(0, 14) + ':' + (img.naturalWidth > 0) : '', viewer: !!e.querySelector('.tv-viewer'),
          fits: !!img && img.naturalWidth > 0 && img.getBoundingClientRect().width <= e.getBoundingClientRect().width,
          text: e.innerText.trim().slice(0, 80)};
});"""


def ours(b: Browser) -> list[dict[str, Any]]:
    """Console errors and warnings of scripts that are not the front-end's own (its bundles
    are under /static/; requests and browser interventions are not scripts)."""
    return [
        e
        for e in b.console()
        if e["level"] in ("SEVERE", "WARNING")
        and e["source"] in ("javascript", "console-api")
        and "/static/" not in e["message"]
    ]


@pytest.mark.parametrize("app", sorted(APPS))
def test_a_notebook_in_jupyter_untrusted_run_rerun_and_reopened(app: str, browser: Browser, tmp_path: Path) -> None:
    import nbformat

    nb = executed()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "model.ipynb")
    server = Server(app, tmp_path)
    try:
        browser.driver.get(server.url("model.ipynb"))
        until(browser, "return document.querySelectorAll('.jp-Notebook .jp-OutputArea-child').length === 6", "outputs")
        time.sleep(1)
        # untrusted (this server never saw it): the pictures as PNG, the viewer outputs empty
        outputs = browser.js(OUTPUTS)
        png = "data:image/png:true"
        assert [o["image"] for o in outputs] == [png, png, "", png, "", png] and outputs[5]["fits"]
        assert not browser.js(READY) and all(o["height"] < 5 and not o["text"] for o in outputs[2::2])
        browser.screenshot(f"jupyter-{app}-untrusted.png")

        until(
            browser,
            "return window.jupyterapp && window.jupyterapp.commands.hasCommand('notebook:run-all-cells')",
            "app",
        )
        browser.js("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        until(browser, READY + " === 2", "two viewers")
        until(browser, DONE, "every cell run")
        outputs = browser.js(OUTPUTS)
        # run: the viewers, their pictures hidden; draw_graph's own display stays a picture (SVG)
        assert [o["hidden"] for o in outputs] == [False, True, False, True, False, False]
        assert outputs[5]["fits"]  # the wide picture is scaled to the output's width
        assert outputs[0]["image"].startswith("data:image/svg") and [o["viewer"] for o in outputs[2::2]] == [True] * 2
        browser.screenshot(f"jupyter-{app}-run.png")

        # the re-run trap: run the first viewer's cell again, save, reopen
        browser.js("window.jupyterapp.shell.currentWidget.content.activeCellIndex = 2")
        browser.js("window.tensorview.viewers[0].root.setAttribute('data-old', '1')")
        browser.js("window.jupyterapp.commands.execute('notebook:run-cell')")
        until(browser, "return !document.querySelector('[data-old]') && " + READY[7:] + " === 2", "the re-run viewer")
        until(browser, DONE, "the cell re-run")
        browser.js("window.jupyterapp.commands.execute('docmanager:save')")
        path = tmp_path / "model.ipynb"
        until(browser, "return !document.querySelector('.jp-mod-dirty')", "saved", 30)
        saved = read_when_written(path)
        assert [len(c.outputs) for c in saved.cells] == [0, 1, 2, 2, 1]
        browser.driver.refresh()
        until(browser, READY + " === 2", "the viewers of the reopened notebook")
        until(browser, DONE, "the reopened notebook's outputs")
        outputs = browser.js(OUTPUTS)
        assert [o["hidden"] for o in outputs] == [False, True, False, True, False, False]
        browser.screenshot(f"jupyter-{app}-reopened.png")
        assert not ours(browser)
    finally:
        server.stop()

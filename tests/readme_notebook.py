"""The README's two notebook pictures: one cell, ``graph.interactive()``, in a real JupyterLab
on 127.0.0.1 (tests/test_jupyter_browser.py's server) and headless Chromium.

- ``notebook-untrusted.png``: the notebook as saved, opened where it was not run (a
  colleague's notebook; GitHub and nbviewer show the same): the static picture;
- ``notebook-jupyterlab.png``: the same cell run: the interactive viewer.

    python -m tests.readme_notebook docs/images    # needs make setup (JupyterLab, Chromium)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from .browser import Browser, why_no_browser
from .test_jupyter_browser import READY, Server, until

CELL = """import torch
import tensorview as tv

layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
model = torch.nn.TransformerEncoder(layer, num_layers=6)
graph = tv.draw_graph(model, input_size=(1, 16, 64), graph_name="encoder", open_folds=True)
graph.interactive(height=600)"""

#: JupyterLab without its side bars and news toast, the cell's output in view
TIDY = """
window.jupyterapp.shell.collapseLeft(); window.jupyterapp.shell.collapseRight();
var s = document.createElement('style'); s.textContent = '.Toastify { display: none !important; }';
document.head.appendChild(s);
var out = document.querySelector(arguments[0]); if (out) out.scrollIntoView({block: 'start'});
"""


RUN_ALL = "return !!(window.jupyterapp && window.jupyterapp.commands.hasCommand('notebook:run-all-cells'))"


def executed_notebook() -> object:
    import nbclient
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    return nb


def pictures(target: Path) -> list[Path]:
    import nbformat

    nb = executed_notebook()
    target.mkdir(parents=True, exist_ok=True)
    made = []
    with tempfile.TemporaryDirectory() as tmp:
        nbformat.write(nb, Path(tmp) / "model.ipynb")
        server = Server("lab", Path(tmp))
        browser = Browser(1280, 960, offline=False)
        try:
            browser.driver.get(server.url("model.ipynb"))
            until(
                browser, "return document.querySelectorAll('.jp-Notebook .jp-OutputArea-child').length === 2", "outputs"
            )
            until(browser, "return !!(window.jupyterapp && window.jupyterapp.shell)", "app")
            browser.js(TIDY, ".jp-Notebook .jp-Cell")
            until(browser, "return document.querySelector('.jp-RenderedImage img').naturalWidth > 0", "picture")
            browser.driver.save_screenshot(str(target / "notebook-untrusted.png"))
            made.append(target / "notebook-untrusted.png")
            until(browser, RUN_ALL, "the run-all command")
            browser.js("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            until(browser, READY + " === 1", "the viewer")
            browser.js(TIDY, ".jp-Notebook .jp-Cell")
            browser.js("window.tensorview.viewers[0].canvas.fit()")
            browser.driver.save_screenshot(str(target / "notebook-jupyterlab.png"))
            made.append(target / "notebook-jupyterlab.png")
        finally:
            browser.quit()
            server.stop()
    return made


if __name__ == "__main__":
    reason = why_no_browser()
    if reason:
        sys.exit(reason)
    for path in pictures(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images")):
        print(path)

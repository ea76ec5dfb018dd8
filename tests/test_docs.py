"""docs/ and notebooks/ stay runnable: every ```python block of every page runs, and
every notebook executes top to bottom."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def test_there_are_docs_and_notebooks() -> None:
    assert len(DOCS) >= 5 and NOTEBOOKS


@pytest.mark.parametrize("page", DOCS, ids=[p.name for p in DOCS])
def test_doc_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = BLOCK.findall(page.read_text())
    monkeypatch.chdir(tmp_path)  # examples that save files write here
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{page.name}[block {i}]", "exec"), namespace)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebooks_run(notebook: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    svgs = [o for o in outputs if "image/svg+xml" in o.get("data", {})]
    assert len(svgs) >= 2  # the graphs displayed themselves as SVG
    htmls = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("<!--tv:data:" in h for h in htmls)  # and graph.interactive() as the viewer


def test_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's example, with its placeholders bound: ``model`` a small CNN taking a
    ``mask`` keyword, ``x`` an image batch, ``m`` a mask."""
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(4, 2)

        def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
            y = self.conv(x).relu()
            if mask is not None:
                y = y * mask
            return self.fc(self.pool(y).flatten(1))

    (block,) = BLOCK.findall((ROOT / "README.md").read_text())
    monkeypatch.chdir(tmp_path)
    x = torch.randn(1, 3, 224, 224)
    namespace: dict[str, object] = {"model": Net().eval(), "x": x, "m": torch.ones(1, 1, 224, 224)}
    exec(compile(block, "README.md", "exec"), namespace)
    assert {p.name for p in tmp_path.iterdir()} >= {"model.svg", "deeper.svg", "model.html"}
    assert torch.equal(namespace["out"], namespace["model"](x, mask=namespace["m"]))  # type: ignore[operator]

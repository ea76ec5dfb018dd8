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

"""The Python examples in docs/rendering.md and docs/styling.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).parent.parent / "docs"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.parametrize("name", ["rendering.md", "styling.md"])
def test_doc_examples_run(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = (DOCS / name).read_text(encoding="utf-8")
    blocks = BLOCK.findall(text)
    assert blocks
    scope: dict[str, object] = {"__name__": f"docs_{name}"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{name}[{i}]", "exec"), scope)

"""docs/cost-model.md shows a table made by its first code block: the block is run again
and its ``str(s)`` must be the text block after the ``summary-table`` marker.

After a deliberate change of the table, ``TV_UPDATE_DOCS=1 pytest tests/test_cost_docs.py``
rewrites the text block (then read the diff)."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parent.parent / "docs" / "cost-model.md"
MARKER = "<!-- summary-table"
TABLE = re.compile(r"(<!-- summary-table[^\n]*-->\n```text\n)(.*?)(```)", re.S)


def test_the_example_table_is_what_the_code_prints() -> None:
    text = PAGE.read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S)
    table = TABLE.search(text)
    assert code is not None and table is not None and code.start() < text.index(MARKER)
    namespace: dict[str, object] = {"__name__": "docs_cost_model"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code.group(1), f"{PAGE.name}[block 0]", "exec"), namespace)
    printed = str(namespace["s"]) + "\n"
    if os.environ.get("TV_UPDATE_DOCS"):
        PAGE.write_text(text[: table.start(2)] + printed + text[table.end(2) :], encoding="utf-8")
    assert printed == table.group(2)

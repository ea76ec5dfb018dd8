"""Every skip in the suite tells whoever runs it what is missing and how to get it (issue
18): a reason mentions an install step (``install``, ``make setup``), or is one of the
conditions below that no install changes.  Checked on the source, so a new skip without
a way forward fails here, whether or not it is taken on this machine."""

from __future__ import annotations

import ast
from pathlib import Path

from .fixtures import needs

TESTS = Path(__file__).resolve().parent

#: skips for a condition of the machine rather than something missing
CONDITIONS = ("checks the error for a machine without a GPU", "this torch has no grouped_mm")


def reason_text(node: ast.expr) -> str:
    """The reason as written: a literal, an f-string's literal parts with names of ``needs``
    filled in, or ``needs.NAME``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "needs":
        return str(getattr(needs, node.attr))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return reason_text(node.func.value)  # needs.NAME.format(what)
    if isinstance(node, ast.JoinedStr):
        return "".join(
            reason_text(v.value) if isinstance(v, ast.FormattedValue) else reason_text(v) for v in node.values
        )
    return "{" + ast.unparse(node) + "}"  # computed: checked by its own test below


def skips() -> list[tuple[str, int, str]]:
    """``(file, line, reason)`` of every skipif/skip/importorskip in tests/."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            name = node.func.attr
            if name not in ("skip", "skipif", "importorskip"):
                continue
            kw = {k.arg: k.value for k in node.keywords}
            reason = kw.get("reason", node.args[0] if name == "skip" and node.args else None)
            text = reason_text(reason) if reason is not None else ""  # importorskip's own says no how
            found.append((path.relative_to(TESTS).as_posix(), node.lineno, text))
    return found


def test_every_skip_says_how_to_get_what_is_missing() -> None:
    found = skips()
    assert len(found) >= 15  # the scan sees the suite's skips
    vague = [
        (f, line, text)
        for f, line, text in found
        if f != "test_skip_reasons.py"
        and not text.startswith(CONDITIONS)
        and not any(w in text for w in ("install", "make setup"))
        and "{why_no_browser()}" not in text
    ]
    assert not vague, f"skips that do not say how to get what is missing: {vague}"
    assert not any("here" in text.split() for _, _, text in found), "a skip speaks of 'here' (whose machine?)"


def test_the_browser_skip_names_the_packages() -> None:
    from .browser import why_no_browser

    reason = why_no_browser()
    assert reason is None or "install" in reason

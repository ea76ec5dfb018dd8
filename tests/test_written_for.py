"""Every test module that builds Hugging Face transformers models says which release it was
written for (issue 18): a ``written_for`` mark, and that release is the locked one."""

from __future__ import annotations

import ast
from pathlib import Path

from tools.lock import read

from .fixtures.hf import WRITTEN_FOR

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def builds_transformers_models(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "transformers" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("transformers"):
            return True
        is_skip = isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip"
        if is_skip and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "transformers":
            return True
    return False


def marks_written_for(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            return "written_for" in ast.unparse(node.value)
    return False


def test_every_module_building_transformers_models_says_for_which_release() -> None:
    modules = [p for p in sorted(TESTS.glob("test_*.py")) if builds_transformers_models(ast.parse(p.read_text()))]
    assert len(modules) >= 10  # the scan finds them
    unmarked = [p.name for p in modules if not marks_written_for(ast.parse(p.read_text()))]
    assert not unmarked, f"test modules without `pytestmark = [written_for]` (tests/fixtures/hf.py): {unmarked}"


def test_written_for_is_the_locked_release() -> None:
    name, _, version = WRITTEN_FOR.partition("==")
    assert read(ROOT / "requirements" / "lock.txt")[name] == version, (
        "the lock moved: re-read the tests, then WRITTEN_FOR"
    )

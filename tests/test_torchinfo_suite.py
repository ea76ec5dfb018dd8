"""tools/torchinfo_suite.py on a made-up torchinfo checkout: it runs the test calls and
README examples through tv.summary, checks them with the tests' own asserts and
compares parameter totals with the installed torchinfo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODELS = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)
"""

TESTS = """
import torch
from tests.fixtures.models import Net
from torchinfo import summary


def test_totals() -> None:
    results = summary(Net(), (2, 4), col_names=["input_size", "mult_adds"])
    assert results.total_params == 15
    assert results.summary_list[1].class_name == "Linear"


def test_wrong_expectation() -> None:
    assert summary(Net(), input_size=(2, 4)).total_params == 16


def test_needs_a_fixture(capsys) -> None:
    summary(Net())
"""

README = """
```python
from torchinfo import summary

model = Net()
summary(model, input_size=(5, 4), verbose=0)
```
"""


def test_the_suite_runs_tests_and_readme_through_tv_summary(tmp_path: Path) -> None:
    (tmp_path / "tests" / "fixtures").mkdir(parents=True)
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "fixtures" / "__init__.py").write_text("")
    (tmp_path / "tests" / "fixtures" / "models.py").write_text(MODELS)
    (tmp_path / "tests" / "torchinfo_test.py").write_text(TESTS)
    (tmp_path / "README.md").write_text(README)
    out = tmp_path / "results.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "torchinfo_suite.py"), str(tmp_path), "--json", str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert out.exists(), proc.stdout + proc.stderr
    results = {r["test"]: r for r in json.loads(out.read_text())}
    assert results["torchinfo_test::test_totals"]["status"] == "pass"
    assert results["torchinfo_test::test_totals"]["calls"] == 1
    wrong = results["torchinfo_test::test_wrong_expectation"]
    assert wrong["status"] == "differs" and wrong["reason"].startswith("assert")
    assert results["torchinfo_test::test_needs_a_fixture"]["status"] == "not run"
    assert results["README[0]"]["status"] == "pass"
    # the two modules torchinfo's repository has and this one lacks are reported, not fatal
    assert results["tests.exceptions_test"]["status"] == "not run"
    assert proc.returncode == 0, proc.stdout + proc.stderr  # no error, no parameter total differs
    assert "parameter totals agree in 3 of 3 run" in proc.stdout

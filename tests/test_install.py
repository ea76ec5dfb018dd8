"""Install and versions (issue 8, part D): pyproject metadata that setuptools accepts
without warnings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_license_is_an_spdx_string() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == "MIT"  # a table is deprecated by setuptools
    for name in pyproject["project"]["license-files"]:
        assert "MIT License" in (ROOT / name).read_text()
    (setuptools,) = [r for r in pyproject["build-system"]["requires"] if r.startswith("setuptools")]
    minimum = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", setuptools.replace(" ", ""))
    assert minimum and int(minimum.group(1)) >= 77  # the first setuptools that takes SPDX strings

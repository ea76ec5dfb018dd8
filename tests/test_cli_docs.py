"""The commands shown in README.md, docs/cli.md and docs/figures.md (```sh blocks) are
valid and do what the docs say: each one is parsed, and each one that is quick here is
run (in this process) in a folder holding the files the docs name."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest

import tensorview
from tensorview.cli import main
from tensorview.cli.parser import build_parser

from .fixtures import needs

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "docs" / "cli.md", ROOT / "docs" / "figures.md"]
SHELL = re.compile(r"```sh\n(.*?)```", re.S)
HAS_DOT = shutil.which("dot") is not None
#: recorded fine, but slow to build and lay out at full size: parsed only
SLOW = ("num_hidden_layers=80",)
MODELS = """
from torch import nn

def build_model(width=8):
    return nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(width, 10))
"""
CONFIG = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 32, "intermediate_size": 64,
          "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100}  # fmt: skip


def documented() -> list[tuple[str, list[str]]]:
    found = []
    for page in PAGES:
        for block in SHELL.findall(page.read_text()):
            for line in block.splitlines():
                if line.startswith("tensorview "):
                    argv = shlex.split(line.split("#")[0])[1:]
                    if ">" in argv:
                        argv = argv[: argv.index(">")]
                    found.append((page.name, argv))
    return found


COMMANDS = documented()


def test_the_docs_show_commands() -> None:
    assert {page for page, _ in COMMANDS} >= {"README.md", "cli.md"}
    assert {argv[1].partition(":")[0] for _, argv in COMMANDS if len(argv) > 1} >= {"hf", "torchvision", "timm"}


def expected_status(argv: list[str]) -> int:
    kind = argv[1].partition(":")[0]
    if kind in ("timm", "torchvision") and importlib.util.find_spec(kind) is None:
        return 2  # not installed: an error that says what to install
    if argv[0] == "summary" and not callable(getattr(tensorview, "summary", None)):
        return 2  # no cost model in this version
    return 0


@pytest.mark.parametrize("page, argv", COMMANDS, ids=[f"{p}: {' '.join(a)[:60]}" for p, a in COMMANDS])
def test_documented_command(
    page: str, argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if argv == ["--help"]:
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 0 and "draw" in capsys.readouterr().out
        return
    ns = build_parser().parse_args(argv)  # every flag and value is valid
    if any(s in " ".join(argv) for s in SLOW):
        return
    out = getattr(ns, "output", None)
    if out and out.endswith((".svg", ".png", ".pdf")) and not HAS_DOT:
        pytest.skip(needs.DOT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "my_project").mkdir()
    (tmp_path / "my_project" / "models.py").write_text(MODELS)
    (tmp_path / "path" / "to").mkdir(parents=True)
    (tmp_path / "path" / "to" / "config.json").write_text(json.dumps(CONFIG))
    code = main([*argv, "-q"])
    err = capsys.readouterr().err
    assert code == expected_status(argv), err
    if code == 0 and out and out != "-":
        assert (tmp_path / out).stat().st_size > 0

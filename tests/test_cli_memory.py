"""``tensorview memory``: the table of tv.memory, the largest batch for a budget, the
timeline as SVG, run in this process through ``tensorview.cli.main``."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch

import tensorview as tv
from tensorview.cli import main

from .fixtures import cost_models as cm
from .fixtures.cli import isolated_cli  # noqa: F401  (autouse here)
from .fixtures.hf import written_for

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)

TINY_LLAMA = (
    "num_hidden_layers=2,hidden_size=32,intermediate_size=64,num_attention_heads=4,"
    "num_key_value_heads=2,vocab_size=100,max_position_embeddings=64"
)


def test_memory_prints_the_table_and_the_largest_batch(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["memory", "hf:llama", "--config", TINY_LLAMA, "--task", "causal-lm", "--batch", "2", "--seq-len", "16"]
    code = main([*argv, "--budget", "3MiB", "-o", "mem.svg", "-q"])
    out, err = capsys.readouterr()
    assert code == 0, err
    with torch.device("meta"):
        import transformers

        model = transformers.AutoModelForCausalLM.from_config(cm.tiny_llama_config(max_position_embeddings=64))
    ids = torch.zeros(2, 16, dtype=torch.long)
    report = tv.memory(model, input_data={"input_ids": ids})
    assert f"Peak: {tv.cost.fmt_bytes(report.peak_bytes)} ({report.peak_bytes:,} B)" in out
    best = int(re.search(r"Largest batch that fits in 3MiB \(3,145,728 B\): (\d+)", out).group(1))  # type: ignore[union-attr]
    assert best == report.max_batch_size(3 * 2**20) and best > 2
    svg = ET.parse("mem.svg").getroot()
    assert svg.tag.endswith("svg") and "optimizer state" in ET.tostring(svg, encoding="unicode")
    assert main([*argv, "-o", "mem.html", "-q"]) == 0
    page = Path("mem.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and f'"peak":{report.peak_bytes},' in page


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--budget", "80 parsecs"], "--budget: bad memory budget '80 parsecs'"),
        (["-o", "mem.png"], "written as SVG or as an interactive HTML page"),
        (["--autocast", "int8"], "--autocast 'int8': a floating dtype"),
        (["--optimizer", "adamm"], "optimizer: 'adamm'"),
        (["--checkpointing", "model.layerz"], "no module 'model.layerz'; did you mean 'layers'"),
    ],
)
def test_memory_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code = main(["memory", "hf:llama", "--config", TINY_LLAMA, "--seq-len", "8", "-q", *argv])
    _, err = capsys.readouterr()
    assert code == 2 and re.search(message, err), err


def test_memory_options_reach_tv_memory(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["memory", "hf:llama", "--config", TINY_LLAMA, "--seq-len", "8", "-q"]
    code = main(
        [
            *argv,
            "--optimizer",
            "sgd",
            "--autocast",
            "bf16",
            "--checkpointing",
            "layers",
            "--steps",
            "2",
            "--depth",
            "3",
            "--accumulate",
            "2",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines()[0].endswith(
        "(train, optimizer sgd, 2 steps, 2 micro-batches a step, autocast bfloat16, checkpointing layers)"
    )
    assert "recompute" in main_table(out)
    code = main([*argv, "--mode", "eval"])
    out, err = capsys.readouterr()
    assert code == 0 and "(eval)" in out.splitlines()[0] and "backward" not in out


def main_table(out: str) -> str:
    return out.split("Module", 1)[1]

"""The ``tensorview`` command run as a real process, once per target kind available here:
``file.py:NAME``, ``package.module:NAME``, ``hf:<model_type>``, ``hf:<config.json>``, and
``timm:``/``torchvision:`` (an error naming what to install when missing, a real drawing
when installed).  The processes start together and run side by side; each test reads
one's exit status, stderr and output file (parsed: SVG, JSON, DOT)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import tensorview as tv
from tests.fixtures import needs
from tests.fixtures.cli_models import TinyCNN

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "tensorview"
TINY_LLAMA = (
    "num_hidden_layers=2,hidden_size=32,intermediate_size=64,num_attention_heads=4,"
    "num_key_value_heads=2,vocab_size=100,max_position_embeddings=64"
)
SVG = "{http://www.w3.org/2000/svg}"
HAS_TIMM = importlib.util.find_spec("timm") is not None
HAS_TORCHVISION = importlib.util.find_spec("torchvision") is not None

#: a project with a model file that imports its neighbour (as `python models.py` would)
LAYERS = """
from torch import nn

def block(width):
    return nn.Sequential(nn.Conv2d(width, width, 3, padding=1), nn.ReLU())
"""
MODELS = """
from torch import nn
from layers import block

class Net(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.body = nn.Sequential(*[block(width) for _ in range(depth)])

    def forward(self, x):
        return self.body(self.stem(x))

def build_model(width=4, depth=2):
    return Net(width, depth)
"""
CONFIG = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "num_hidden_layers": 2,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
    "max_position_embeddings": 64,
}


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    folder: Path


def commands(out: Path) -> dict[str, tuple[list[str], Path]]:
    """name -> (command line, working folder)."""
    tv_ = [sys.executable, "-m", "tensorview"]
    return {
        "help": ([str(SCRIPT), "--help"], out),
        "file": (
            [
                *tv_,
                "draw",
                "proj/models.py:build_model",
                "--kwargs",
                "width=8,depth=3",
                "--input-size",
                "1,3,16,16",
                "-o",
                "file.svg",
                "--expand-nested",
            ],
            out,
        ),  # fmt: skip
        "module": (
            [
                *tv_,
                "draw",
                "tests.fixtures.cli_models:TinyCNN",
                "--kwargs",
                "depth=3",
                "--input-size",
                "1x3x8x8",
                "--depth",
                "2",
                "-o",
                str(out / "module.json"),
            ],
            ROOT,
        ),  # fmt: skip
        "llama": ([*tv_, "draw", "hf:llama", "--config", TINY_LLAMA, "--seq-len", "16", "-o", "llama.json", "-v"], out),
        "config": ([*tv_, "draw", "hf:tiny/config.json", "--seq-len", "8", "--depth", "1", "-o", "config.gv"], out),
        "timm": ([*tv_, "draw", "timm:resnet18", "-o", "timm.svg", "--depth", "1"], out),
        "torchvision": ([*tv_, "draw", "torchvision:resnet18", "-o", "torchvision.svg", "--depth", "1"], out),
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    out = tmp_path_factory.mktemp("cli")
    (out / "proj").mkdir()
    (out / "proj" / "layers.py").write_text(LAYERS)
    (out / "proj" / "models.py").write_text(MODELS)
    (out / "tiny").mkdir()
    (out / "tiny" / "config.json").write_text(json.dumps(CONFIG))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    procs = {
        name: subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, (cmd, cwd) in commands(out).items()
        if name != "help" or SCRIPT.exists()
    }
    done = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=600)
        done[name] = Run(proc.returncode, stdout, stderr, out)
    return done


def svg_nodes(path: Path) -> list[str]:
    """Titles (DOT node names) of the drawn nodes of an SVG made by Graphviz."""
    root = ET.parse(path).getroot()
    return [g.find(f"{SVG}title").text or "" for g in root.iter(f"{SVG}g") if g.get("class") == "node"]


def test_help_lists_the_commands(runs: dict[str, Run]) -> None:
    if "help" not in runs:
        pytest.skip(f"no console script at {SCRIPT}: {needs.CONSOLE_SCRIPT}")
    run = runs["help"]
    assert run.returncode == 0, run.stderr
    assert re.search(r"^\s+draw\s", run.stdout, re.M) and re.search(r"^\s+summary\s", run.stdout, re.M)
    assert "exit status: 0 ok, 1" in run.stdout


def test_file_target(runs: dict[str, Run]) -> None:
    run = runs["file"]
    assert run.returncode == 0, run.stderr
    assert "wrote file.svg" in run.stderr
    sys.path.insert(0, str(run.folder / "proj"))
    try:
        spec = importlib.util.spec_from_file_location("cli_test_models", run.folder / "proj" / "models.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        expected = tv.draw_graph(
            module.build_model(width=8, depth=3), input_size=(1, 3, 16, 16), device="meta", expand_nested=True
        )
    finally:
        sys.path.remove(str(run.folder / "proj"))
    drawn = svg_nodes(run.folder / "file.svg")
    assert sorted(drawn) == sorted(n.name for n in expected.get_view().nodes)
    # depth=3 from --kwargs reached the factory: the three blocks fold into one x3 box
    assert {"stem", "body_0"} <= set(drawn) and "×3" in (run.folder / "file.svg").read_text()
    assert 'id="clust' in (run.folder / "file.svg").read_text()  # --expand-nested drew module boxes


def test_package_module_target(runs: dict[str, Run]) -> None:
    run = runs["module"]
    assert run.returncode == 0, run.stderr
    data = json.loads((run.folder / "module.json").read_text())
    modules = {n["path"]: n for n in data["nodes"] if n["kind"] == "module"}
    assert modules[""]["class"] == "TinyCNN"
    assert {"stem", "blocks.0", "blocks.1", "blocks.2", "blocks.2.0", "head"} <= set(modules)
    assert "blocks.3" not in modules  # depth=3 from --kwargs
    (inp,) = [data["nodes"][i] for i in data["graph"]["inputs"]]
    assert inp["output_shapes"] == [[1, 3, 8, 8]] and inp["device"] == "meta"
    expected = tv.draw_graph(TinyCNN(depth=3), input_size=(1, 3, 8, 8), device="meta")
    assert len(data["nodes"]) == len(expected.graph.nodes)


def test_hf_model_type(runs: dict[str, Run]) -> None:
    run = runs["llama"]
    assert run.returncode == 0, run.stderr
    data = json.loads((run.folder / "llama.json").read_text())
    modules = {n["path"]: n for n in data["nodes"] if n["kind"] == "module"}
    assert modules[""]["class"] == "LlamaModel"  # AutoModel: the base model
    assert {"embed_tokens", "layers.0", "layers.1", "norm"} <= set(modules) and "layers.2" not in modules
    (ids,) = [data["nodes"][i] for i in data["graph"]["inputs"]]
    assert ids["output_shapes"] == [[1, 16]] and ids["dtypes"] == ["int64"]  # token ids, --seq-len
    assert {n["device"] for n in data["nodes"] if n["kind"] == "tensor"} == {"meta"}
    # --verbose: every step, with the numbers
    assert "built LlamaModel (" in run.stderr
    assert "recording LlamaModel on meta with input_ids=1x16:int64" in run.stderr
    assert re.search(r"recorded \d+ nodes in \d+\.\d\d s", run.stderr)


def test_hf_config_file(runs: dict[str, Run]) -> None:
    run = runs["config"]
    assert run.returncode == 0, run.stderr
    dot = (run.folder / "config.gv").read_text()
    assert dot.startswith("digraph tiny {")  # named after the config's folder
    labels = re.findall(r'\[label="([^"]*)"', dot)
    # the class the config lists (LlamaForCausalLM): its base model and its head, at depth 1
    assert "input_ids\\n(1, 8) int64" in labels
    assert any(label.startswith("model: LlamaModel\\n") for label in labels), labels
    assert any(label.startswith("lm_head: Linear\\n") for label in labels), labels
    assert not any(label.startswith("model.layers") for label in labels)  # --depth 1


@pytest.mark.parametrize("kind", ["timm", "torchvision"])
def test_zoo_target(runs: dict[str, Run], kind: str) -> None:
    run = runs[kind]
    installed = HAS_TIMM if kind == "timm" else HAS_TORCHVISION
    if not installed:
        assert run.returncode == 2, run.stderr
        assert f"{kind}: targets need the {kind} package" in run.stderr and f"pip install {kind}" in run.stderr
        assert "Traceback" not in run.stderr
        return
    assert run.returncode == 0, run.stderr  # pragma: no cover - only where the package is installed
    drawn = svg_nodes(run.folder / f"{kind}.svg")
    assert {"conv1", "layer1", "layer4", "fc"} <= set(drawn)


@pytest.mark.skipif(not HAS_TORCHVISION, reason=needs.TORCHVISION)
def test_torchvision_real_run_keeps_no_weights() -> None:  # pragma: no cover - needs torchvision
    from tensorview.cli.targets import Request, build

    target = build(Request("torchvision:resnet18"))
    assert target.inputs[0].shape == (1, 3, 224, 224)
    assert {p.device.type for p in target.model.parameters()} == {"meta"}  # built on meta: no memory, no weights
    assert isinstance(target.model, torch.nn.Module)

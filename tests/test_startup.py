"""Start-up (issue 22): ``tensorview --help`` and usage errors answer without importing
torch; ``import tensorview`` loads its names on first use (PEP 562), and never the cost
model, the CLI, transformers or Sphinx until they are used.  Each check runs in a fresh
interpreter, so that what this test session imported does not count; times are measured
in bench/startup.py, not here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tensorview as tv

ROOT = Path(__file__).resolve().parent.parent


def fresh(code: str) -> Any:
    """What ``code`` (run in a new interpreter with this tree's tensorview) prints as JSON."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


CLI = """
import contextlib, io, json, sys
from tensorview.cli import main

def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = e.code
    return [code, out.getvalue(), err.getvalue(), sorted(m for m in sys.modules if m.split(".")[0] == "torch")]

print(json.dumps({
    "help": run("--help"),
    "draw help": run("draw", "--help"),
    "version": run("--version"),
    "typo": run("draw", "--dpeth", "2", "x"),
    "typo with a dtype": run("draw", "x", "--input-size", "1x3:long", "--dpeth", "2"),
    "memory help": run("memory", "--help"),
    "typo with autocast": run("memory", "x", "--autocast", "bf16", "--bugdet", "1GB"),
    "bad shape": run("draw", "x", "--input-size", "1xb"),
    "no command": run(),
}))
"""


def test_help_and_usage_errors_import_no_torch() -> None:
    runs = fresh(CLI)
    for name, (_, _, _, torch_modules) in runs.items():
        assert torch_modules == [], name
    code, out, err, _ = runs["help"]
    assert code == 0 and out.startswith("usage: tensorview") and "draw" in out and err == ""
    code, out, _, _ = runs["draw help"]  # the view flags, from ViewOptions, without torch
    assert code == 0 and "--depth" in out and "--show-inner-tensors" in out and "--open-folds" in out
    code, out, _, _ = runs["version"]
    assert code == 0 and out == f"tensorview {tv.__version__}\n"
    for name in ("typo", "typo with a dtype"):
        code, out, err, _ = runs[name]
        assert code == 2 and out == "", name
        assert "unrecognized arguments: --dpeth" in err and "did you mean --depth?" in err, err
    code, out, _, _ = runs["memory help"]
    assert code == 0 and "--autocast DTYPE" in out and "--budget SIZE" in out
    code, _, err, _ = runs["typo with autocast"]
    assert code == 2 and "unrecognized arguments: --bugdet 1GB (did you mean --budget?)" in err, err
    code, _, err, _ = runs["bad shape"]
    assert code == 2 and "argument --input-size: bad shape in --input-size '1xb'" in err, err
    code, _, err, _ = runs["no command"]
    assert code == 2 and "the following arguments are required: COMMAND" in err, err


def test_input_dtypes_are_read_after_parsing() -> None:
    """A dtype needs torch: it is read once the rest of the command line is known to be
    right, and a bad one is still a usage error naming it (before anything is built)."""
    from tensorview.cli.parser import build_parser
    from tensorview.cli.values import InputSpec, UsageError

    ns = build_parser().parse_args(["draw", "x", "--input-size", "1x8:long", "--input-size", "mask=1,8:bool"])
    import torch

    assert ns.input_size == [InputSpec((1, 8), torch.int64), InputSpec((1, 8), torch.bool, "mask")]
    ns = build_parser().parse_args(["memory", "x", "--autocast", "bf16"])
    assert ns.autocast is torch.bfloat16
    with pytest.raises(UsageError) as e:
        build_parser().parse_args(["summary", "x", "--input-size", "1x3:flaot"])
    assert str(e.value).startswith("argument --input-size: unknown dtype 'flaot' in --input-size '1x3:flaot'")
    assert str(e.value).endswith("(see tensorview summary --help)")
    with pytest.raises(UsageError, match=r"^argument --autocast: --autocast 'int8': a floating dtype is needed"):
        build_parser().parse_args(["memory", "x", "--autocast", "int8"])


IMPORT = """
import json, sys
before = set(sys.modules)
import tensorview as tv
bare = sorted(set(sys.modules) - before)
names = dir(tv)
tv.draw_graph
drawing = sorted(sys.modules)
print(json.dumps({"bare": bare, "dir": names, "drawing": drawing}))
"""
#: never loaded by ``import tensorview``, nor by reading ``tv.draw_graph``
LATER = (
    "tensorview.cost",
    "tensorview.cli",
    "tensorview.sphinx",
    "transformers",
    "sphinx",
    "sympy",
    "torch.fx.experimental.symbolic_shapes",
    "torch._dynamo",
)


def test_import_tensorview_loads_names_on_first_use() -> None:
    got = fresh(IMPORT)
    assert "torch" not in got["bare"]
    assert [m for m in got["bare"] if m.startswith("tensorview")] == ["tensorview", "tensorview._version"]
    assert set(tv.__all__) <= set(got["dir"])  # dir() lists the names before they load
    assert {"cost", "recording", "render", "graph", "api"} <= set(got["dir"])
    torch_alone = set(fresh("import sys, json, torch; print(json.dumps(sorted(sys.modules)))"))
    loaded = [m for m in LATER if m in got["drawing"] and m not in torch_alone]
    assert loaded == []
    assert {"torch", "tensorview.api", "tensorview.drawing", "tensorview.recording"} <= set(got["drawing"])


ALL = """
import importlib, json
import tensorview as tv
out = {}
for name in tv.__all__:
    value = getattr(tv, name)
    out[name] = [getattr(value, "__module__", None) or value.__name__, getattr(value, "__name__", None)]
try:
    tv.no_such_name
except AttributeError as e:
    out["missing"] = str(e)
out["cost"] = tv.cost.fmt_flops(2e12)  # subpackages too, on first use
print(json.dumps(out))
"""


def test_every_public_name_resolves_in_a_fresh_interpreter() -> None:
    got = fresh(ALL)
    assert got.pop("missing") == "module 'tensorview' has no attribute 'no_such_name'"
    assert got.pop("cost") == tv.cost.fmt_flops(2e12)
    assert sorted(got) == sorted(tv.__all__)
    for name in tv.__all__:  # the same objects as in this process, from the modules that define them
        value = getattr(tv, name)
        assert got[name] == [getattr(value, "__module__", None) or value.__name__, getattr(value, "__name__", None)]
    assert got["draw_graph"] == ["tensorview.api", "draw_graph"]
    assert got["memory"] == ["tensorview.cost.step", "memory"]
    assert got["taps"] == ["tensorview.taps", "tensorview.taps"]


DRAW = """
import json, sys
import torch
import tensorview as tv
graph = tv.draw_graph(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()), input_size=(2, 4))
plain = [m for m in ("tensorview.cost", "sympy") if m in sys.modules]
costed = tv.draw_graph(torch.nn.Linear(4, 3), input_size=(2, 4), stats=("params", "flops"))
print(json.dumps({"plain": plain, "modules": [m.name for m in graph.graph.modules()],
                  "flops": costed.summary().total_flops}))
"""


def test_the_cost_model_loads_only_for_costs() -> None:
    got = fresh(DRAW)
    assert got["plain"] == []  # draw_graph without stats= never imports the cost model
    assert got["modules"] == ["model", "_0", "_1"]
    assert got["flops"] == 2 * 2 * 4 * 3  # with stats= it loads and counts

"""Start-up: how long ``tensorview --help`` takes, and what importing tensorview costs on
top of importing torch.  Each sample is a fresh interpreter; the kinds are run in turn,
several times, and each is judged by its least time (the run the machine disturbed
least, as ``timeit`` advises), so all see the same machine.

- ``tensorview --help``: the whole process (``python -m tensorview --help``), wall time;
  it parses before importing torch (cli/main.py), so it never loads torch;
- ``import torch``, ``import tensorview`` (names are loaded on first use: PEP 562, so this
  alone imports no torch), ``import tensorview`` and ``tv.draw_graph`` read (what a script
  drawing a model pays), and ``import tensorview`` with every public name resolved
  (``from tensorview import *``: all that ``import tensorview`` loaded before it was
  lazy), each the import's own time inside the process, by CPU time (wall time is
  printed too).

    python bench/startup.py          # also run by bench/run.py

Targets (issue 22): ``--help`` < 0.3 s wall; ``import tensorview`` and ``tv.draw_graph``
<= 1.15x ``import torch`` and without the cost model; every name (``tv.memory`` is the
cost model's) is information.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HELP_SECONDS = 0.3
IMPORT_RATIO = 1.15
REPEATS = 7

#: what is imported, timed inside a fresh interpreter: name -> statement
IMPORTS = {
    "import torch": "import torch",
    "import tensorview": "import tensorview",
    "import tensorview, draw_graph": "import tensorview; tensorview.draw_graph",
    "import tensorview, all names": "from tensorview import *",
}
#: modules ``import tensorview`` and ``tv.draw_graph`` leave unloaded (unless torch loads them)
UNLOADED = (
    "tensorview.cost",
    "tensorview.cli",
    "transformers",
    "sphinx",
    "sympy",
    "torch.fx.experimental.symbolic_shapes",
    "torch._dynamo",
    "torch.export",
)
PROBE = """
import json, sys, time
w, c = time.perf_counter(), time.process_time()
{statement}
c, w = time.process_time() - c, time.perf_counter() - w
print(json.dumps({{"cpu": c, "wall": w, "modules": sorted(sys.modules)}}))
"""


def _env() -> dict[str, str]:
    """This tree's tensorview first on the path, one intra-op thread, and bytecode cached
    (as pip installs it: torch's is; ``PYTHONDONTWRITEBYTECODE`` would compile tensorview's
    modules from source in every sample, and only tensorview's)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _import(statement: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(statement=statement)],
        capture_output=True,
        text=True,
        check=True,
        env=_env(),
        cwd=ROOT,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _help() -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tensorview", "--help"], capture_output=True, check=True, env=_env(), cwd=ROOT
    )
    return time.perf_counter() - t0


def measure(repeats: int = REPEATS) -> dict[str, Any]:
    """Least times over ``repeats`` rounds; the modules each import left loaded."""
    best: dict[str, dict[str, float]] = {k: {"cpu": float("inf"), "wall": float("inf")} for k in IMPORTS}
    modules: dict[str, list[str]] = {}
    help_wall = float("inf")
    for statement in IMPORTS.values():  # warm-up: writes the bytecode caches
        _import(statement)
    for _ in range(repeats):
        for name, statement in IMPORTS.items():
            r = _import(statement)
            best[name] = {k: min(best[name][k], r[k]) for k in ("cpu", "wall")}
            modules[name] = r["modules"]
        help_wall = min(help_wall, _help())
    return {"imports": best, "modules": modules, "help": help_wall}


def targets(m: dict[str, Any]) -> list[tuple[str, bool | None, str]]:
    torch_t, bare, draw, full = (m["imports"][k] for k in IMPORTS)
    ratio = draw["cpu"] / torch_t["cpu"]
    torch_mods = set(m["modules"]["import torch"])
    loaded = [x for x in UNLOADED if x in m["modules"]["import tensorview, draw_graph"] and x not in torch_mods]
    return [
        (
            f"tensorview --help < {HELP_SECONDS} s (wall, whole process)",
            m["help"] < HELP_SECONDS,
            f"{m['help']:.3f} s",
        ),
        (
            f"import tensorview and tv.draw_graph <= {IMPORT_RATIO}x import torch (CPU time, same run)",
            ratio <= IMPORT_RATIO,
            f"{ratio:.2f}x: torch {torch_t['cpu']:.2f} s, tensorview and draw_graph {draw['cpu']:.2f} s "
            f"(wall {torch_t['wall']:.2f} / {draw['wall']:.2f} s); import tensorview alone "
            f"{bare['cpu'] * 1e3:.1f} ms, torch "
            f"{'loaded' if 'torch' in m['modules']['import tensorview'] else 'not loaded'}",
        ),
        (
            "import tensorview with every public name, the cost model's tv.memory included (information)",
            None,
            f"{full['cpu'] / torch_t['cpu']:.2f}x import torch: {full['cpu']:.2f} s",
        ),
        (
            "import tensorview and tv.draw_graph load no cost model, CLI, transformers, Sphinx, sympy, Dynamo",
            not loaded,
            f"loaded: {', '.join(loaded)}" if loaded else f"none of {', '.join(UNLOADED)} (beyond what torch loads)",
        ),
    ]


def main() -> int:
    results = targets(measure())
    for name, ok, detail in results:
        print(f"[{'INFO' if ok is None else 'PASS' if ok else 'FAIL'}] {name}: {detail}")
    return 1 if any(ok is False for _, ok, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())

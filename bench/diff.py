"""``tv.diff`` of two Llama-3-70B-shaped recordings (80 layers, on meta), the targets of
issue 24: module level < 0.5 s, op level < 2 s.  Recording is not timed (the diff of two
recordings is); times are medians of 3 runs after a warm-up.

    python bench/diff.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from models import LLAMA3_70B, _transformer  # noqa: E402

import tensorview as tv  # noqa: E402

TARGETS = {"module": 0.5, "op": 2.0}


def recordings() -> tuple[tv.ComputationGraph, tv.ComputationGraph]:
    """Llama-3-70B, and the same with a wider MLP in every layer (a real difference in
    every one of the 80 layers, so the report is not empty)."""
    out = []
    for changes in ({}, {"intermediate_size": 30720}):
        model, x = _transformer("llama", **{**LLAMA3_70B, **changes})()
        out.append(tv.draw_graph(model, input_data=x, device="meta", source=False))
    return out[0], out[1]


def measure(a: tv.ComputationGraph, b: tv.ComputationGraph, level: str, runs: int = 3) -> tuple[float, int]:
    d = tv.diff(a, b, level=level)  # warm-up
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        d = tv.diff(a, b, level=level)
        times.append(time.perf_counter() - t)
    return statistics.median(times), len(d.lines())


def main() -> int:
    a, b = recordings()
    nodes = len(a.graph.nodes)
    ok = True
    for level, target in TARGETS.items():
        seconds, lines = measure(a, b, level)
        verdict = "ok" if seconds < target else "MISSED"
        ok &= seconds < target
        print(
            f"diff of two Llama-3-70B recordings ({nodes} nodes each), {level} level: {seconds:.3f} s "
            f"(target < {target} s: {verdict}; report of {lines} lines)"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

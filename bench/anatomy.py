"""Where the recording overhead goes, measured against the design floor (floor.py), piece by
piece, with models built to isolate each piece (CPU tensors, least CPU time of interleaved
runs, one thread):

* **op**: one more op (``x.relu()``) inside one module's forward (a model of N such ops);
* **module call**: one more call of a one-op submodule, less its op and the module's
  share of the walks below (a ``Sequential`` of N one-op modules, less N ops in one
  forward holding N modules it never calls);
* **module held**: one more submodule that the forward never calls (the module-tree
  walks of a recording: names at its start, tensors left on modules at its end);
* **per recording**: a one-op model's whole overhead (set-up and tear-down).

    python bench/anatomy.py [--n 2000] [--repeats 9]

Printed as a table of microseconds: tensorview, the floor, and the difference.  This says
which part of the design a speed-up has to come from; cProfile cannot (it inflates small
calls about tenfold), a sampling profile spreads it over dozens of lines.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from floor import as_recorded, minimal_recording  # noqa: E402
from timing import least_cpu_interleaved  # noqa: E402

from tensorview.recording import Recorder  # noqa: E402


class OneOp(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.relu()


class Ops(nn.Module):
    """``n`` ops in one forward; ``held`` submodules it never calls."""

    def __init__(self, n: int, held: int = 0) -> None:
        super().__init__()
        self.n = n
        self.unused = nn.ModuleList(OneOp() for _ in range(held))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.n):
            x = x.relu()
        return x


def overheads(model: nn.Module, x: torch.Tensor, repeats: int) -> tuple[float, float]:
    """(tensorview's, the floor's) overhead over the plain forward, in seconds."""

    def plain() -> None:
        with torch.no_grad():
            model(x)

    def record() -> None:
        with torch.no_grad(), Recorder(model):
            model(x)

    ours = as_recorded({"x": x})["x"]

    def floor() -> None:
        with torch.no_grad(), minimal_recording([]):
            model(ours)

    p, r, f = least_cpu_interleaved([plain, record, floor], repeats)
    return r - p, f - p


def anatomy(n: int = 2000, repeats: int = 9) -> list[tuple[str, float, float]]:
    """``(piece, tensorview us, floor us)`` rows."""
    x = torch.zeros(1, 4)
    measure: Callable[[nn.Module], tuple[float, float]] = lambda m: overheads(m, x, repeats)  # noqa: E731
    one = measure(Ops(1))
    ops = measure(Ops(n))
    calls = measure(nn.Sequential(*(OneOp() for _ in range(n))))
    held = measure(Ops(n, held=n))
    rows: list[tuple[str, Any, Any]] = [
        ("op", *((o - w) / (n - 1) for o, w in zip(ops, one))),
        ("module call", *((c - h) / n for c, h in zip(calls, held))),
        ("module held, not called", *((h - o) / n for h, o in zip(held, ops))),
        ("per recording (a one-op model)", *one),
    ]
    return [(name, ours * 1e6, floor * 1e6) for name, ours, floor in rows]


def table(rows: list[tuple[str, float, float]]) -> str:
    lines = [f"{'piece':32s} {'tensorview us':>14s} {'floor us':>9s} {'difference':>11s}"]
    lines += [f"{name:32s} {ours:14.2f} {floor:9.2f} {ours - floor:11.2f}" for name, ours, floor in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()
    print(table(anatomy(args.n, args.repeats)))


if __name__ == "__main__":
    main()

"""Interrupts at any moment, 1,000 times: how many left something behind, by kind.

    python bench/interrupts.py [--iterations 1000] [--seed 0]

Each iteration interrupts one ``draw_graph`` (or ``with Recorder``) call at a random
bytecode, with each kind of asynchronous exception in turn (Ctrl-C, a raising SIGALRM or
SIGTERM handler, ``PyThreadState_SetAsyncExc``) (see tests/fixtures/interrupts.py for how, and what is checked).  Exit status 1
when anything was left behind.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tests.fixtures.interrupts import KINDS, SIGNALS, Harness, handlers, one_thread  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    with one_thread(), handlers():
        harness = Harness(args.seed)
        report = harness.run(args.iterations)
    took = time.perf_counter() - start
    print(
        f"{report.iterations} interrupted calls ({report.interrupted} ended in the exception sent, "
        f"{report.missed} ran fewer bytecodes than calibrated), {took:.1f} s"
    )
    print(
        "bytecodes per call (tensorview's own): "
        + ", ".join(f"{k}: {v} ({harness.ours[k]})" for k, v in harness.calls.items())
    )
    for name, kinds in harness.baseline.items():
        if kinds:
            print(f"  (left behind by {name} with no interrupt at all: {', '.join(kinds)})")
    for kind in KINDS:
        n = report.leftovers[kind]
        example = f"   e.g. {report.examples[kind]}" if n else ""
        print(f"  {kind:28} {n:5} ({100 * n / max(report.iterations, 1):.1f}%){example}")
    print(f"  {'total':28} {report.total():5}")
    print(
        "by interrupt: "
        + ", ".join(f"{k}: {report.leftovers_per_signal[k]} of {report.per_signal[k]}" for k in SIGNALS)
    )
    return 1 if report.total() else 0


if __name__ == "__main__":
    sys.exit(main())

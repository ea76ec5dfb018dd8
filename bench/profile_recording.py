"""Where recording time goes on real CPU tensors: the overhead per recorded op of the
deep-MLP benchmark (minimum CPU time over repeats, Recorder minus the plain forward),
then cProfile's top entries by own time (CPU-time clock).

    python bench/profile_recording.py [--ops 2000] [--top 15]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import deep_mlp  # noqa: E402

from tensorview.recording import Recorder  # noqa: E402


def best_cpu(fn: object, repeats: int = 15) -> float:
    fn()  # type: ignore[operator]
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time()
        fn()  # type: ignore[operator]
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    model, inputs = deep_mlp(args.ops)()

    def plain() -> None:
        with torch.no_grad():
            model(**inputs)

    def record() -> None:
        with torch.no_grad(), Recorder(model):
            model(**inputs)

    p, r = best_cpu(plain), best_cpu(record)
    print(
        f"deep MLP, {args.ops} ops on CPU: plain {p * 1e3:.1f} ms, Recorder {r * 1e3:.1f} ms, "
        f"overhead {(r - p) / args.ops * 1e6:.1f} us/op ({r / p:.1f}x)"
    )
    prof = cProfile.Profile(time.process_time)
    for _ in range(3):
        prof.enable()
        record()
        prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(args.top)
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:6000])


if __name__ == "__main__":
    main()

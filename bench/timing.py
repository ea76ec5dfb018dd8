"""CPU-time measurement shared by the bench scripts (run.py, summary_speed.py)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch


def least_cpu_interleaved(fns: Sequence[Callable[[], Any]], repeats: int) -> list[float]:
    """The least CPU time (``process_time``) of each of ``fns`` over ``repeats`` runs each,
    taken in turn (after one warm-up each), so all see the same machine: the least is
    the run the machine disturbed least (as ``timeit`` advises).  With one intra-op
    thread: other threads' CPU time (torch's pool spins after each parallel op) would count
    in proportion to the wall time, and the recording's own work is one thread's anyway."""
    best = [float("inf")] * len(fns)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for fn in fns:
            fn()
        for _ in range(repeats):
            for i, fn in enumerate(fns):
                gc.collect()
                t0 = time.process_time()
                fn()
                best[i] = min(best[i], time.process_time() - t0)
    finally:
        torch.set_num_threads(threads)
    return best

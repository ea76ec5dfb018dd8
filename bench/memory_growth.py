"""Memory over many recordings: RSS and tracemalloc growth over N calls of each entry point.

    python bench/memory_growth.py [--calls 1000]

Each entry point is called 20 times to warm up, then ``--calls`` times; printed: the
RecorderTensors still alive, the tracemalloc growth and the RSS growth.  Exit status 1
when a RecorderTensor outlived its call.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import tracemalloc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import tensorview as tv  # noqa: E402


def _rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _recorder(model: nn.Module) -> None:
    with tv.Recorder(model):
        model(torch.randn(2, 8))


ENTRY_POINTS = {
    "summary (meta)": lambda m: tv.summary(m, input_size=(2, 8)),
    "summary (cpu)": lambda m: tv.summary(m, input_size=(2, 8), device="cpu"),
    "draw_graph": lambda m: tv.draw_graph(m, input_size=(2, 8)),
    "draw_graph(stats)": lambda m: tv.draw_graph(m, input_size=(2, 8), stats=["flops", "activation_bytes"]),
    "Recorder": _recorder,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    leaked = 0
    for name, call in ENTRY_POINTS.items():
        model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
        for _ in range(20):
            call(model)
        gc.collect()
        rss = _rss()
        tracemalloc.start()
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(args.calls):
            call(model)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
        tracemalloc.stop()
        alive = sum(1 for o in gc.get_objects() if type(o) is tv.RecorderTensor)
        leaked += alive
        print(
            f"{name:20} {args.calls} calls: RecorderTensors alive {alive}, "
            f"tracemalloc +{grown / 1024:.1f} KiB, RSS +{(_rss() - rss) / 2**20:.1f} MiB"
        )
    return 1 if leaked else 0


if __name__ == "__main__":
    sys.exit(main())

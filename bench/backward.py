"""How long does the joint forward+backward graph of Llama-3-70B (80 layers, on meta) take
to record and draw its default view (issue 25's target: under 2 s), against the forward
alone (grad off) and the forward recorded with grad on (what the joint graph records)?
CPU time, the least of a few interleaved runs (the machine is shared); ``bench/run.py``
reports it as a target.

    PYTHONPATH=. python bench/backward.py
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from models import LLAMA3_70B, _transformer  # noqa: E402

from tensorview import draw_graph  # noqa: E402

TARGET_S = 2.0
REPEATS = 3


def measure(repeats: int = REPEATS) -> dict[str, Any]:
    """Least CPU seconds (and the wall seconds of that run) of: the forward drawn (grad
    off), the forward recorded with grad on, the joint graph recorded and its default
    view drawn (DOT); and the node counts."""
    import torch

    from tensorview.recording import Recorder

    model, inputs = _transformer("llama", **LLAMA3_70B)()
    meta = model.to("meta")
    ids = {k: v.to("meta") for k, v in inputs.items()}
    nodes: dict[str, int] = {}

    def forward() -> None:
        g = draw_graph(model, input_data=inputs, device="meta", mode="train")
        nodes["forward"] = len(g.graph)
        assert g.source

    def grad_forward() -> None:
        with torch.enable_grad(), Recorder(meta) as rec:
            meta(**ids)
        nodes["grad forward"] = len(rec.graph)

    def joint() -> None:
        g = draw_graph(model, input_data=inputs, device="meta", mode="train", backward=True)
        nodes["joint"] = len(g.graph)
        assert g.source

    fns: dict[str, Callable[[], None]] = {"forward": forward, "grad forward": grad_forward, "joint": joint}
    best = {k: (float("inf"), 0.0) for k in fns}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for fn in fns.values():
            fn()
        for _ in range(repeats):
            for k, fn in fns.items():
                gc.collect()
                c0, w0 = time.process_time(), time.perf_counter()
                fn()
                cpu, wall = time.process_time() - c0, time.perf_counter() - w0
                best[k] = min(best[k], (cpu, wall))
    finally:
        torch.set_num_threads(threads)
    return {"best": best, "nodes": nodes}


def targets(m: dict[str, Any]) -> list[tuple[str, bool | None, str]]:
    best, nodes = m["best"], m["nodes"]
    joint, forward, grad = best["joint"], best["forward"], best["grad forward"]
    return [
        (
            f"Llama-3-70B on meta: joint forward+backward graph recorded and its default view drawn < {TARGET_S:.0f} s",
            joint[0] < TARGET_S,
            f"{joint[0]:.2f} s CPU (wall {joint[1]:.2f} s), {nodes['joint']} nodes; in the same run the forward "
            f"alone drawn {forward[0]:.2f} s ({nodes['forward']} nodes, {joint[0] / forward[0]:.1f}x), the "
            f"forward recorded with grad on {grad[0]:.2f} s",
        )
    ]


def main() -> None:
    for name, ok, detail in targets(measure()):
        print(f"[{'PASS' if ok else 'FAIL'}] {name}: {detail}")


if __name__ == "__main__":
    main()

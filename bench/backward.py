"""How long does the joint forward+backward graph of Llama-3-70B (80 layers, on meta) take
to record and draw its default view (issue 25's target: under 2 s), against the forward
alone?

    PYTHONPATH=. python bench/backward.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from models import LLAMA3_70B, _transformer  # noqa: E402

from tensorview import draw_graph  # noqa: E402

TARGET_S = 2.0


def main() -> None:
    model, inputs = _transformer("llama", **LLAMA3_70B)()
    for backward in (False, True, False, True):
        t0 = time.perf_counter()
        graph = draw_graph(model, input_data=inputs, device="meta", mode="train", backward=backward)
        recorded = time.perf_counter() - t0
        source = graph.source
        total = time.perf_counter() - t0
        print(
            f"backward={backward!s:5}  nodes={len(graph.graph):6}  record={recorded:.2f}s  "
            f"record+default view DOT={total:.2f}s  dot lines={source.count(chr(10))}"
        )
    print(f"target: joint graph recorded and drawn (DOT) in < {TARGET_S:.0f} s")


if __name__ == "__main__":
    main()

"""Are the pictures of a huge model readable?  Llama-3-70B (80 layers, built on meta from
its config) drawn at the default depth, at ``depth=1``, and with one decoder layer opened
inside the ``×80`` fold: for each, the view's size, the time ``dot -Tsvg`` takes to lay
it out, and the size of the image at 96 dpi (from the SVG's width and height in points).

    python bench/pictures.py          # also run by bench/run.py

Targets (issue 11): each lays out in under 5 s into an image with no side over 8,000 pixels.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import LLAMA3_70B, _transformer  # noqa: E402

from tensorview.api import draw_graph  # noqa: E402

#: the pictures measured: name -> view options
PICTURES: dict[str, dict[str, Any]] = {
    "default (depth 3)": {},
    "depth=1": {"depth": 1},
    "open_folds=True": {"open_folds": True},
    "depth=1, open_folds=True": {"depth": 1, "open_folds": True},
}
MAX_SECONDS = 5.0
MAX_PIXELS = 8000
DOT_TIMEOUT_S = 120.0


def svg_pixels(svg: str) -> tuple[float, float]:
    """Width and height of an SVG written by dot, in pixels at 96 dpi (dot writes points)."""
    m = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg)
    if m is None:
        raise ValueError("no width/height in points in the SVG")
    return float(m.group(1)) * 96 / 72, float(m.group(2)) * 96 / 72


def measure() -> list[dict[str, Any]]:
    model, inputs = _transformer("llama", **LLAMA3_70B)()
    t0 = time.perf_counter()
    graph = draw_graph(model, input_data=inputs, device="meta")
    record_s = time.perf_counter() - t0
    rows = []
    for name, opts in PICTURES.items():
        t0 = time.perf_counter()
        cg = graph.view(**opts)
        view = cg.get_view()
        source = cg.source
        view_s = time.perf_counter() - t0
        row: dict[str, Any] = {
            "picture": name,
            "nodes": len(view.nodes),
            "edges": len(view.edges),
            "folded": view.folded,
            "record": record_s,
            "view": view_s,
        }
        t0 = time.perf_counter()
        try:
            svg = subprocess.run(
                ["dot", "-Tsvg"], input=source, capture_output=True, text=True, check=True, timeout=DOT_TIMEOUT_S
            ).stdout
        except subprocess.TimeoutExpired:
            row.update(dot=f">{DOT_TIMEOUT_S:.0f}", width=None, height=None)
        else:
            row["dot"] = time.perf_counter() - t0
            row["width"], row["height"] = svg_pixels(svg)
        rows.append(row)
    return rows


def targets(rows: list[dict[str, Any]]) -> list[tuple[str, bool, str]]:
    out = []
    for r in rows:
        fast = isinstance(r["dot"], float) and r["dot"] < MAX_SECONDS
        small = r["width"] is not None and max(r["width"], r["height"]) <= MAX_PIXELS
        size = f"{r['width']:.0f} x {r['height']:.0f} px" if r["width"] is not None else "no image"
        dot = f"{r['dot']:.2f} s" if isinstance(r["dot"], float) else f"{r['dot']} s"
        out.append(
            (
                f"Llama-3-70B {r['picture']}: dot < {MAX_SECONDS:.0f} s, no side over {MAX_PIXELS} px",
                fast and small,
                f"{r['nodes']} nodes, {r['edges']} edges, dot {dot}, {size}",
            )
        )
    return out


def main() -> None:
    torch.set_grad_enabled(False)
    rows = measure()
    print(f"recorded in {rows[0]['record']:.2f} s")
    print(f"{'picture':<26} {'nodes':>5} {'edges':>5} {'view s':>6} {'dot s':>6} {'width px':>8} {'height px':>9}")
    for r in rows:
        dot = f"{r['dot']:.2f}" if isinstance(r["dot"], float) else r["dot"]
        w = f"{r['width']:.0f}" if r["width"] is not None else "-"
        h = f"{r['height']:.0f}" if r["height"] is not None else "-"
        print(f"{r['picture']:<26} {r['nodes']:>5} {r['edges']:>5} {r['view']:>6.2f} {dot:>6} {w:>8} {h:>9}")
    for name, ok, detail in targets(rows):
        print(f"[{'PASS' if ok else 'FAIL'}] {name}: {detail}")


if __name__ == "__main__":
    main()

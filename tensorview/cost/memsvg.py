"""``report.save("mem.svg")``: the timeline of a ``MemoryReport`` as a plain SVG picture.

Bytes live over time (one step of the x axis per allocation or free), stacked by
category in the order of ``CATEGORIES``, the phases as bands with their names, the
peak as a dashed line, and the module running written along the time axis
where it changes (as many as fit).  Every text is one line and escaped (module names are user data).
At most ``MAX_POINTS`` columns are drawn: each keeps the event of its largest total, so
the peak is never smoothed away.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..graph.listing import one_line
from .fmt import fmt_bytes
from .memreport import CATEGORIES

if TYPE_CHECKING:
    from .memreport import MemoryReport

MAX_POINTS = 800
WIDTH, HEIGHT = 960, 420
LEFT, RIGHT, TOP, BOTTOM = 80, 170, 40, 110
COLORS = {
    "parameter": "#4e79a7",
    "buffer": "#9c755f",
    "gradient": "#f28e2b",
    "optimizer state": "#e15759",
    "input": "#bab0ac",
    "activation": "#59a14f",
    "temporary": "#edc948",
}
PHASE_FILL = {"setup": "#ffffff", "forward": "#f4f8fb", "backward": "#fbf6f0", "optimizer": "#f7f3f8"}


def timeline_svg(report: MemoryReport) -> str:
    events = report.timeline
    n = len(events)
    live = dict.fromkeys(CATEGORIES, 0)
    stacks: list[tuple[int, list[int]]] = []  # (event index, cumulative tops per category)
    per = max(1, -(-n // MAX_POINTS))
    best: tuple[int, list[int]] | None = None
    for e in events:
        live[e.category] += e.bytes
        tops, acc = [], 0
        for c in CATEGORIES:
            acc += live[c]
            tops.append(acc)
        if best is None or tops[-1] > best[1][-1]:
            best = (e.index, tops)
        if (e.index + 1) % per == 0 or e.index == n - 1:
            stacks.append(best)
            best = None
    peak = max(report.peak_bytes, 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: float) -> float:
        return LEFT + plot_w * (i / max(n - 1, 1))

    def y(b: float) -> float:
        return TOP + plot_h * (1 - b / peak)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
        f"<title>{_esc(f'Memory of {report.model} on {report.device}')}</title>",
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
    ]
    out += _phases(report, x, TOP, plot_h)
    for k, c in enumerate(CATEGORIES):
        if not any(t[k] != (t[k - 1] if k else 0) for _, t in stacks):
            continue
        upper = [f"{x(i):.1f},{y(t[k]):.1f}" for i, t in stacks]
        lower = [f"{x(i):.1f},{y(t[k - 1] if k else 0):.1f}" for i, t in reversed(stacks)]
        out.append(
            f'<polygon points="{" ".join(upper + lower)}" fill="{COLORS[c]}" stroke="none"><title>{_esc(c)}</title></polygon>'
        )
    py = y(report.peak_bytes)
    where = f" in {report.peak_phase}" + (f", {report.peak_module}" if report.peak_module else "")
    out.append(
        f'<line x1="{LEFT}" y1="{py:.1f}" x2="{LEFT + plot_w}" y2="{py:.1f}" stroke="#333" stroke-dasharray="4 3">'
    )
    out.append(f"<title>{_esc(f'peak {report.peak_bytes:,} B{where}')}</title></line>")
    out.append(f'<text x="{LEFT + plot_w + 6}" y="{py + 4:.1f}">{_esc("peak " + fmt_bytes(report.peak_bytes))}</text>')
    out += _axes(x, y, peak, n)
    out += _modules(report, x, TOP + plot_h)
    for k, c in enumerate(CATEGORIES):  # the legend
        ly = TOP + 30 + 16 * k
        out.append(f'<rect x="{WIDTH - RIGHT + 16}" y="{ly}" width="12" height="12" fill="{COLORS[c]}"/>')
        out.append(f'<text x="{WIDTH - RIGHT + 34}" y="{ly + 10}">{_esc(c)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _phases(report: MemoryReport, x: Callable[[float], float], top: float, h: float) -> list[str]:
    out, start = [], 0
    events = report.timeline
    for i, e in enumerate(events):
        if i == len(events) - 1 or events[i + 1].phase != e.phase:
            x0, x1 = x(start), x(i)
            out.append(
                f'<rect x="{x0:.1f}" y="{top}" width="{max(x1 - x0, 0.5):.1f}" height="{h}" fill="{PHASE_FILL.get(e.phase, "#fff")}">'
                f"<title>{_esc(e.phase)}</title></rect>"
            )
            if x1 - x0 >= 40:  # a name that fits
                out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{top - 8}" text-anchor="middle">{_esc(e.phase)}</text>')
            start = i + 1
    return out


def _axes(x: Callable[[float], float], y: Callable[[float], float], peak: int, n: int) -> list[str]:
    out = [
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#333"/>',
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" stroke="#333"/>',
    ]
    for k in range(5):
        b = peak * k / 4
        yy = y(b)
        out.append(f'<text x="{LEFT - 6}" y="{yy + 4:.1f}" text-anchor="end">{_esc(fmt_bytes(b))}</text>')
    out.append(f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end">{n} allocations and frees</text>')
    return out


def _modules(report: MemoryReport, x: Callable[[float], float], base: float) -> list[str]:
    """The module running, cut to its first three path components (``model.layers.3``),
    where it changes."""
    out, last, last_x = [], None, -1e9
    for e in report.timeline:
        name = ".".join(e.module.split(".")[:3]) if e.module else None
        if name is None or name == last:
            last = name
            continue
        last = name
        xx = x(e.index)
        if xx - last_x < 12:
            continue
        last_x = xx
        out.append(
            f'<text x="{xx:.1f}" y="{base + 12}" transform="rotate(45 {xx:.1f} {base + 12})" fill="#555">{_esc(name)}</text>'
        )
    return out


def _esc(text: str) -> str:
    """One line (control characters as escapes: XML has no way to hold them), escaped."""
    return html.escape(one_line(text), quote=True)


__all__ = ["timeline_svg"]

"""``report.save("mem.html")``: the timeline of a ``MemoryReport`` as one interactive page.

The same picture as ``mem.svg`` (memsvg.py: bytes live over time stacked by category,
the phases, the peak, the module running along the time axis), drawn by a small script
(memtimeline.js) from the report's events:

* **hover**: the event under the pointer, with the bytes it made or freed, the bytes
  live after it (by category), its phase, module, category and step;
* **zoom**: drag across the plot (a brush) to show that stretch of time, the bytes axis
  and the module names re-fitted; double-click or *Reset zoom* to see all of it again.

One self-contained file: no network, a Content-Security-Policy that forbids loading
anything.  Module and model names are user data: the page's text is written with
``textContent`` only, and the data is JSON that cannot end its ``<script>`` element
(``<``, ``>``, ``&`` and the line separators as ``\\u`` escapes), every name one line
with its control characters as visible escapes (as in mem.svg and the table).
"""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import TYPE_CHECKING, Any

from ..graph.listing import one_line
from .memreport import CATEGORIES, PHASES
from .memsvg import COLORS, PHASE_FILL

if TYPE_CHECKING:
    from .memreport import MemoryReport

CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"
KINDS = ("alloc", "free", "resize")
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})
_STYLE = """
body { font: 13px sans-serif; margin: 16px; color: #222; }
h1 { font-size: 16px; margin: 0 0 4px; }
#tv-mem-summary { margin: 0 0 8px; color: #444; }
#tv-mem-plot { display: block; user-select: none; cursor: crosshair; }
#tv-mem-tip { position: fixed; pointer-events: none; background: #fff; border: 1px solid #999;
  padding: 4px 6px; font: 12px monospace; white-space: pre; display: none; }
button { font: 12px sans-serif; }
"""


def timeline_data(report: MemoryReport) -> dict[str, Any]:
    """The report as the page's script reads it: columns of small integers per event and
    the tables they index (module names once each)."""
    modules: dict[str | None, int] = {}
    phases = ["setup", *PHASES, "recompute"]
    columns: dict[str, list[int]] = {k: [] for k in ("bytes", "live", "category", "phase", "module", "kind", "step")}
    for e in report.timeline:
        columns["bytes"].append(e.bytes)
        columns["live"].append(e.live)
        columns["category"].append(CATEGORIES.index(e.category))
        if e.phase not in phases:
            phases.append(e.phase)
        columns["phase"].append(phases.index(e.phase))
        columns["module"].append(modules.setdefault(e.module, len(modules)))
        columns["kind"].append(KINDS.index(e.kind) if e.kind in KINDS else len(KINDS))
        columns["step"].append(e.step)
    names = [None if m is None else one_line(m or "(model)") for m in modules]
    return {
        "title": one_line(f"Memory of {report.model} on {report.device} ({report.settings})"),
        "peak": report.peak_bytes,
        "peakIndex": report.peak_index,
        "categories": list(CATEGORIES),
        "colors": [COLORS[c] for c in CATEGORIES],
        "phases": phases,
        "phaseFill": [PHASE_FILL.get(p, "#ffffff") for p in phases],
        "kinds": [*KINDS, "other"],
        "modules": names,
        **columns,
    }


def timeline_html(report: MemoryReport) -> str:
    data = json.dumps(timeline_data(report), separators=(",", ":"), allow_nan=False).translate(_SCRIPT_SAFE)
    script = resources.files(__package__).joinpath("memtimeline.js").read_text(encoding="utf-8")
    title = html.escape(one_line(f"Memory of {report.model}"), quote=True)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>{title} — tensorview</title>
<style>{_STYLE}</style>
</head>
<body>
<h1 id="tv-mem-title"></h1>
<p id="tv-mem-summary"></p>
<div><button id="tv-mem-reset" type="button">Reset zoom</button>
<span id="tv-mem-range"></span></div>
<svg id="tv-mem-plot" xmlns="http://www.w3.org/2000/svg" width="1000" height="440"></svg>
<div id="tv-mem-tip"></div>
<script id="tv-mem-data" type="application/json">{data}</script>
<script>{script}</script>
</body>
</html>
"""


__all__ = ["timeline_data", "timeline_html"]

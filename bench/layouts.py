"""The viewer's layout engines compared: size, layout time and layout quality (called by
bench/run.py; ``python bench/layouts.py`` runs it alone).

Engines: elkjs (what the saved page carries), dagre (what notebook outputs carry, with its
ELK adapter render/viewer/dagre.js) and @viz-js/viz (Graphviz ``dot`` as WebAssembly; not
vendored: fetched with ``npm pack`` into build/ when npm is there, else left out).

- size: the file as shipped (all three are minified builds), gzip -9, and the library of one
  notebook output (engine + viewer, gzip + base64, as html.py packs it);
- layout: the views of Llama-3-70B on meta (the default view, the x80 block opened in the
  viewer, which is the view of ``open_folds=True``), each laid out from the
  ELK graph the viewer makes (layout.js), in the page's thread of headless Chromium
  (and MLPs of 1,000 and 2,000 layers unfolded: dagre.js cuts deep views into bands),
  measured by bench/layouts.js: ms (least of 3 runs; 1 run for views over 1,000 nodes),
  width x height, edge crossings, edge segments through other nodes' boxes, overlapping
  boxes (nodes; module boxes of one parent), members outside their box, the share of
  axis-parallel edge segments (1.00: orthogonal routing);
- the notebook of ten viewers of small models (picture + viewer output each): its size.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from models import CASES, deep_mlp  # noqa: E402

from tensorview.api import draw_graph  # noqa: E402
from tensorview.render import html as viewer_html  # noqa: E402

VIZ_VERSION = "3.31.0"
NOTEBOOK_BUDGET = 3_000_000
#: views with more drawn nodes wait for a click before they are laid out (viewer.js)
LAYOUT_LIMIT = 1_500
ENGINES = ("elk", "dagre", "viz")


def viz_source() -> str | None:
    """@viz-js/viz's browser build (``npm pack`` into build/viz once), or None without npm."""
    target = ROOT / "build" / "viz" / "package" / "dist" / "viz-global.js"
    if not target.exists():
        target.parent.parent.parent.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(
                f"npm pack --silent @viz-js/viz@{VIZ_VERSION} >/dev/null && tar xzf viz-js-viz-{VIZ_VERSION}.tgz",
                shell=True,
                check=True,
                cwd=target.parent.parent.parent,
                timeout=120,
            )
        except (subprocess.SubprocessError, OSError):
            return None
    return target.read_text(encoding="utf-8") if target.exists() else None


def sizes(viz: str | None) -> dict[str, dict[str, int]]:
    texts = {
        "elk": viewer_html.asset(viewer_html.ENGINES["elk"][0]),
        "dagre": "\n".join(viewer_html.asset(f) for f in viewer_html.ENGINES["dagre"]),
    }
    if viz is not None:
        texts["viz"] = viz
    out = {}
    for name, text in texts.items():
        raw = text.encode()
        out[name] = {"raw": len(raw), "gzip": len(gzip.compress(raw, 9))}
        if name in viewer_html.ENGINES:
            out[name]["output"] = len(viewer_html.library(name).encode())
    return out


def bench_page(d: Any, viz: str | None) -> str:
    """A page (no CSP: WebAssembly may compile) with the viewer of ``d`` and the engines."""
    scripts = [(ROOT / "bench" / "layouts.js").read_text(encoding="utf-8")]
    if viz is not None:
        scripts.append(viz)
    body = viewer_html.viewer_markup(d, height=800, inline=False, engine="elk")
    tags = "".join(f"<script>{s}</script>" for s in scripts)
    return f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{body}{tags}</body></html>'


ENGINE_SETUP = """
var TV = window.tensorview;
if (!window.ELK) {
  var s = document.createElement('script');
  s.text = '(function (define, module, exports) {\\n' + TV.engineSource + '\\n}).call(window);';
  document.head.appendChild(s);
}
if (!window.tvDagreLayout) {
  var d = document.createElement('script');
  d.text = '(function (define, module, exports) {\\n' + arguments[0] + '\\n}).call(window);';
  document.head.appendChild(d);
}
return [!!window.ELK, !!window.tvDagreLayout, !!window.Viz];
"""

MEASURE = """
var v = tensorview.viewers[0], done = arguments[arguments.length - 1];
var g = tensorview.layout.elkGraph(v.view, v.lines.bind(v), v.header.bind(v), v.dir);
tvBench.run(g, arguments[0], arguments[1]).then(function (r) {
  done({nodes: v.view.nodes.length, clusters: v.view.clusters.length, edges: v.view.edges.length, engines: r});
}).catch(function (err) { done({error: String(err)}); });
"""


def _module(g: Any, path: str) -> int:
    return next(m.id for m in g.modules() if m.path == path or m.path.endswith("." + path))


def layout_cases(viz: str | None, only: str = "") -> list[dict[str, Any]]:
    from tests.browser import Browser

    llama = next(c for c in CASES if c.name.startswith("llama3-70b"))
    model, inputs = llama.build()
    graph = draw_graph(model, input_data=inputs, device="meta")
    views: list[tuple[str, Any, str | None]] = [
        ("70B default", graph, None),
        # the x80 block opened in the viewer: the view of open_folds=True (one fold in this model)
        ("70B x80 opened", graph, "layers.0"),
    ]
    for layers in (1_000, 2_000):
        mlp, mlp_inputs = deep_mlp(layers)()
        views.append((f"MLP {layers // 1000}k unfolded", draw_graph(mlp, input_data=mlp_inputs, fold=False), None))
    dagre = "\n".join(viewer_html.asset(f) for f in viewer_html.ENGINES["dagre"])
    engines = [e for e in ENGINES if e != "viz" or viz is not None]
    rows = []
    browser = Browser()
    browser.driver.set_script_timeout(600)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, d, open_path in views:
                if only not in name:
                    continue
                path = Path(tmp) / "layouts.html"
                path.write_text(bench_page(d, viz), encoding="utf-8")
                browser.open(path, timeout=300)
                browser.js(ENGINE_SETUP, dagre)
                if open_path is not None:
                    browser.js_async(
                        "var done = arguments[1]; tensorview.viewers[0].open(arguments[0]).then(function () { done(); });",
                        _module(d.graph, open_path),
                    )
                nodes = browser.js("return tensorview.viewers[0].view.nodes.length")
                repeats = 1 if nodes > 1000 else 3
                row = browser.js_async(MEASURE, engines, repeats)
                rows.append({"view": name, **row})
                print(f"  layouts: {name}: {json.dumps(row)}", file=sys.stderr, flush=True)
    finally:
        browser.quit()
    return rows


def notebook_size() -> dict[str, Any]:
    """Ten viewers of small models in one notebook (nbformat 4 JSON, as Jupyter saves it)."""
    from tests.fixtures.notebook import notebook_text, small_drawings

    graphs = small_drawings()
    return {"viewers": len(graphs), "bytes": len(notebook_text(graphs).encode())}


def run(only: str = "") -> dict[str, Any]:
    """Everything, or the views whose name contains ``only``."""
    viz = viz_source()
    return {"sizes": sizes(viz), "views": layout_cases(viz, only), "notebook": notebook_size(), "viz": viz is not None}


def _cell(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"failed ({r['error'][:110]})"
    return (
        f"{r['ms']:.0f} ms, {r['width']}x{r['height']}, {r['crossings']} crossings, "
        f"{r['through_nodes']} through nodes, overlaps {r['node_overlaps']}/{r['cluster_overlaps']}, "
        f"outside {r['outside_parent']}, orthogonal {r['orthogonal']:.2f}"
    )


def lines(res: dict[str, Any]) -> list[str]:
    out = []
    for name, s in res["sizes"].items():
        lib = f", library of one output or page (gzip + base64) {s['output'] / 1e6:.3f} MB" if "output" in s else ""
        out.append(f"layout engine {name}: {s['raw'] / 1e6:.3f} MB as shipped, {s['gzip'] / 1e6:.3f} MB gzip{lib}")
    if not res["viz"]:
        out.append("viz not measured: npm pack @viz-js/viz failed (no npm or no registry)")
    for v in res["views"]:
        head = f"{v['view']} ({v['nodes']} nodes, {v['clusters']} boxes, {v['edges']} edges)"
        out.append(head + ": " + "; ".join(f"{e} {_cell(r)}" for e, r in v["engines"].items()))
    nb = res["notebook"]
    out.append(f"a notebook of {nb['viewers']} viewers of small models: {nb['bytes'] / 1e6:.2f} MB")
    return out


def targets(res: dict[str, Any]) -> list[tuple[str, bool | None, str]]:
    nb = res["notebook"]
    within = [v for v in res["views"] if v["nodes"] <= LAYOUT_LIMIT]
    dagre = [v["engines"].get("dagre", {}) for v in within]
    return [
        (
            f"a notebook of ten viewers of small models is < {NOTEBOOK_BUDGET / 1e6:.0f} MB",
            nb["bytes"] < NOTEBOOK_BUDGET and nb["viewers"] == 10,
            f"{nb['bytes'] / 1e6:.2f} MB",
        ),
        (
            f"dagre (notebook outputs) lays out every measured view of <= {LAYOUT_LIMIT} nodes, no boxes overlapping",
            bool(within)
            and all("error" not in r and r and not r["node_overlaps"] and not r["cluster_overlaps"] for r in dagre),
            ", ".join(f"{v['view']}: {_cell(r)[:40]}" for v, r in zip(within, dagre, strict=True)),
        ),
    ]


if __name__ == "__main__":
    result = run(sys.argv[1] if len(sys.argv) > 1 else "")
    print("\n".join(lines(result)))
    for name, ok, detail in targets(result):
        print(f"[{'PASS' if ok else 'FAIL'}] {name}: {detail}")

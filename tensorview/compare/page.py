"""``diff.html``: one self-contained page with the side-by-side picture (picture.py, laid
out by Graphviz; or the merged one, merged.py) and the list of differences beside it; clicking one (or stepping with
``n``/``p``) outlines its calls in both graphs and scrolls to them.  Every text on the
page is escaped here (``html.escape``) or by Graphviz (labels in the SVG); the list's
node names go through ``json.dumps`` into a data attribute."""

from __future__ import annotations

import html
import json
import re
from typing import TYPE_CHECKING

from ..render.executable import run_dot
from .picture import drawing

if TYPE_CHECKING:
    from .report import GraphDiff

STYLE = """
body{font:13px system-ui,sans-serif;margin:0;display:flex;height:100vh}
#list{width:28em;overflow:auto;border-right:1px solid #ccc;padding:.5em}
#list h1{font-size:14px} #list li{cursor:pointer;padding:2px 4px;list-style:none;border-radius:3px}
#list li.on{background:#ffe2a8} #list li .k{color:#777}
#pic{flex:1;overflow:auto} g.hit polygon,g.hit path{stroke:#d20;stroke-width:4}
"""
SCRIPT = """
const items=[...document.querySelectorAll('#list li')];let at=-1;
function show(i){at=i;items.forEach((li,k)=>li.classList.toggle('on',k===i));
 const names=new Set(JSON.parse(items[i].dataset.nodes));let first=null;
 document.querySelectorAll('#pic g.node,#pic g.cluster').forEach(g=>{
  const t=g.querySelector('title');const hit=t&&names.has(t.textContent.replace(/^cluster_/,''));
  g.classList.toggle('hit',!!hit);if(hit&&!first)first=g;});
 if(first)first.scrollIntoView({block:'center',inline:'center'});}
items.forEach((li,k)=>li.addEventListener('click',()=>show(k)));
document.addEventListener('keydown',e=>{if(!items.length)return;
 if(e.key==='n')show((at+1)%items.length);if(e.key==='p')show((at-1+items.length)%items.length);});
"""


def page(d: GraphDiff, depth: int | None = None, layout: str = "side") -> str:
    """The HTML text of the diff page (needs Graphviz's ``dot`` for the picture), both
    graphs side by side (``layout="side"``) or merged in one (``"merged"``)."""
    svg = run_dot(drawing(d, depth, layout), "svg").decode("utf-8")
    svg = svg[svg.index("<svg") :]  # without the XML prolog and doctype
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    items = []
    for kind, text, names in entries(d):
        data = html.escape(json.dumps(names), quote=True)
        items.append(f'<li data-nodes="{data}"><span class="k">{html.escape(kind)}</span> {html.escape(text)}</li>')
    title = html.escape(str(d).splitlines()[0])
    return (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{title}</title><style>{STYLE}</style></head>"
        f"<body><div id='list'><h1>{title}</h1><p>click a difference, or step with n / p</p>"
        f"<ul>{''.join(items)}</ul></div><div id='pic'>{svg}</div><script>{SCRIPT}</script></body></html>\n"
    )


def entries(d: GraphDiff) -> list[tuple[str, str, list[str]]]:
    """``(kind, text, DOT names of its calls)`` per difference, unfolded, in report order."""
    if d.trees is None:
        return []
    ta, tb = d.trees
    na, nb = ta.graph.nodes, tb.graph.nodes
    out: list[tuple[float, str, str, list[str]]] = []
    for e in d.removed_calls:
        out.append((e.order, "removed", f"{e.path} ({e.cls})", [f"a:{na[e.node].name}"]))
    for e in d.added_calls:
        out.append((e.order, "added", f"{e.path} ({e.cls})", [f"b:{nb[e.node].name}"]))
    for c in d.changed:
        names = [f"a:{na[c.nodes[0]].name}", f"b:{nb[c.nodes[1]].name}"]
        for x in c.differences:
            out.append((c.order, x.kind, f"{c.a or '(root)'}: {x.detail}", names))
    renamed = {(ta.calls[i].path, tb.calls[j].path): (i, j) for i, j in d.matched.items() if i in ta.calls}
    for a, b in d.renamed:
        i, j = renamed.get((a, b), (-1, -1))
        names = [f"a:{na[i].name}", f"b:{nb[j].name}"] if i >= 0 else []
        out.append((i, "renamed", f"{a} -> {b}", names))
    out.sort(key=lambda x: x[0])
    return [(k, t, n) for _, k, t, n in out]

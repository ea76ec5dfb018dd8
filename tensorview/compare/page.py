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
    from .index import Tree
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
    out = []
    for kind, text, i, j in entry_ids(d):
        names = ([f"a:{ta.graph.nodes[i].name}"] if i >= 0 else []) + (
            [f"b:{tb.graph.nodes[j].name}"] if j >= 0 else []
        )
        out.append((kind, text, names))
    return out


def entry_ids(d: GraphDiff, nearest: bool = False) -> list[tuple[str, str, int, int]]:
    """``(kind, text, id in a, id in b)`` per difference, unfolded, in report order; -1
    where a side has no such call (``nearest``: there, the nearest call around it that
    has a match on that side, e.g. the block a call was added to)."""
    if d.trees is None:
        return []
    ta, tb = d.trees
    back = {j: i for i, j in d.matched.items()}
    out: list[tuple[float, str, str, int, int]] = []
    for e in d.removed_calls:
        out.append(
            (e.order, "removed", f"{e.path} ({e.cls})", e.node, _around(ta, e.node, d.matched) if nearest else -1)
        )
    for e in d.added_calls:
        out.append((e.order, "added", f"{e.path} ({e.cls})", _around(tb, e.node, back) if nearest else -1, e.node))
    for c in d.changed:
        for x in c.differences:
            out.append((c.order, x.kind, f"{c.a or '(root)'}: {x.detail}", c.nodes[0], c.nodes[1]))
    renamed = {(ta.calls[i].path, tb.calls[j].path): (i, j) for i, j in d.matched.items() if i in ta.calls}
    for a, b in d.renamed:
        i, j = renamed.get((a, b), (-1, -1))
        out.append((i, "renamed", f"{a} -> {b}", i, j))
    out.sort(key=lambda x: x[0])
    return [(k, t, i, j) for _, k, t, i, j in out]


def _around(t: Tree, node: int, matched: dict[int, int]) -> int:
    """The id, on the other side, of the nearest call around ``node`` that is matched (-1: none)."""
    p = t.graph.nodes[node].parent
    while p is not None and p not in matched:
        p = t.graph.nodes[p].parent
    return -1 if p is None else matched[p]

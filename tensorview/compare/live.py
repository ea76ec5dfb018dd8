"""``diff.html`` (the default, ``layout="viewer"``): the interactive viewer of each graph
(render/html.py: boxes that open and close, search) side by side, a's left and b's
right, with the list of differences beside them.  Clicking a difference (or stepping
with ``n``/``p``) opens, selects and scrolls to its calls in both viewers; opening or
closing a box in one does the same to its matched box in the other (renamed ones too),
and selecting a node selects its match.  Calls only in b are green, only in a red,
changed amber; a box holding a difference deeper down is outlined.

The page carries the viewer library once (the second viewer reuses it), each graph
packed as ``save("x.html")`` packs it, and the pairing and colours as JSON in a script
element (``script_json``: no ``<`` or ``&`` literally).  The viewers emit
``tensorview:open``/``close``/``select``/``drawn`` events (viewer.js ``emit``); the
script below answers them.  Model text reaches the page only escaped (``html.escape``)
or inside that JSON or the packed data.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from ..graph import Graph, ViewOptions
from ..render.html import CSP, script_json, viewer_markup
from ..render.options import RenderOptions
from .page import entry_ids
from .picture import ADDED, CHANGED, REMOVED, chosen_depth, holders, marks

if TYPE_CHECKING:
    from .report import GraphDiff

#: the depth each viewer opens at when none is given (deeper differences: the list opens them)
START_DEPTH = 2
KIND = {ADDED: "added", REMOVED: "removed", CHANGED: "changed"}

STYLE = """
html,body{height:100%;margin:0}
body{font:13px system-ui,sans-serif;display:flex}
#list{width:24em;flex:none;overflow:auto;border-right:1px solid #ccc;padding:.5em}
#list h1{font-size:14px} #list li{cursor:pointer;padding:2px 4px;list-style:none;border-radius:3px}
#list li.on{background:#ffe2a8} #list li .k{color:#777} #list ul{padding:0}
.tv-side{flex:1;min-width:0;display:flex;flex-direction:column;border-right:1px solid #ccc}
.tv-side h2{font-size:13px;margin:0;padding:4px 8px;background:#f3f3f3}
.tv-pane{flex:1;min-height:0}
.tv-side .tv-svg .tv-node .tv-node-rect{fill:var(--tv-background)}
.tv-side .tv-svg .tv-diff-added text,.tv-side .tv-svg .tv-diff-removed text,.tv-side .tv-svg .tv-diff-changed text{fill:#222}
.tv-side .tv-svg .tv-node.tv-diff-added .tv-node-rect,.tv-side .tv-svg .tv-cluster.tv-diff-added>.tv-cluster-rect{fill:#7bd87b}
.tv-side .tv-svg .tv-node.tv-diff-removed .tv-node-rect,.tv-side .tv-svg .tv-cluster.tv-diff-removed>.tv-cluster-rect{fill:#ff8a8a}
.tv-side .tv-svg .tv-node.tv-diff-changed .tv-node-rect,.tv-side .tv-svg .tv-cluster.tv-diff-changed>.tv-cluster-rect{fill:#ffc94d}
.tv-side .tv-svg .tv-cluster[class*=tv-diff-]>.tv-cluster-rect{fill-opacity:.3}
.tv-svg .tv-diff-holds .tv-node-rect,.tv-svg .tv-diff-holds>.tv-cluster-rect{stroke:darkorange;stroke-width:2.5}
"""

SCRIPT = """
(function(){"use strict";
var D=JSON.parse(document.getElementById("tv-diff-data").textContent);
var panes=[document.getElementById("tv-side-a"),document.getElementById("tv-side-b")];
var pair=[new Map(),new Map()];
D.pairs.forEach(function(p){pair[0].set(p[0],p[1]);pair[1].set(p[1],p[0]);});
var marks=[new Map(),new Map()];
[0,1].forEach(function(s){Object.keys(D.marks[s]).forEach(function(k){
 D.marks[s][k].forEach(function(id){marks[s].set(id,(marks[s].get(id)||"")+" tv-diff-"+k);});});});
function viewer(s){var T=window.tensorview;if(!T||!T.viewers)return null;
 return T.viewers.find(function(v){return panes[s].contains(v.root);})||null;}
function side(v){return panes[0].contains(v.root)?0:1;}
var quiet=false;
function mirror(ev,act){if(quiet)return;var v=ev.detail.viewer,s=side(v),o=viewer(1-s);
 if(!o)return;var t=ev.detail.id<0?-1:pair[s].get(ev.detail.id);if(t===undefined)return;
 quiet=true;try{act(o,t);}finally{quiet=false;}}
document.addEventListener("tensorview:open",function(ev){mirror(ev,function(o,t){
 if(o.state.open.get(t)!==true)o.openPath(t);});});
document.addEventListener("tensorview:close",function(ev){mirror(ev,function(o,t){
 if(o.state.open.get(t)!==false)o.close(t);});});
function shown(v,t){return t<0?-1:v.canvas.boxes&&v.canvas.boxes.get(t)?t:v.drawnFor(t);}
document.addEventListener("tensorview:select",function(ev){mirror(ev,function(o,t){
 var k=shown(o,t);if(o.selected!==k)o.select(k,k>=0);});});
document.addEventListener("tensorview:drawn",function(ev){var v=ev.detail.viewer,m=marks[side(v)];
 v.root.querySelectorAll("[data-id],[data-cluster]").forEach(function(e){
  var c=m.get(Number(e.getAttribute("data-id")||e.getAttribute("data-cluster")));
  if(c)c.trim().split(" ").forEach(function(x){e.classList.add(x);});});});
var items=[].slice.call(document.querySelectorAll("#list li")),at=-1;
function show(i){at=i;items.forEach(function(li,k){li.classList.toggle("on",k===i);});
 var ids=JSON.parse(items[i].dataset.ids);
 [0,1].forEach(function(s){var v=viewer(s);if(!v||ids[s]<0)return;
  var id=ids[s];quiet=true;try{v.reveal(id).then(function(){var k=shown(v,id);
   if(v.selected!==k&&k>=0)v.select(k,true);});}finally{quiet=false;}});}
items.forEach(function(li,k){li.addEventListener("click",function(){show(k);});});
document.addEventListener("keydown",function(e){if(!items.length||/^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName))return;
 if(e.key==="n")show((at+1)%items.length);if(e.key==="p")show((at-1+items.length)%items.length);});
})();
"""


def live_page(d: GraphDiff, depth: int | None = None) -> str:
    """The HTML text of the interactive diff page (no Graphviz needed)."""
    from ..drawing import ComputationGraph

    chosen = chosen_depth(d, depth) if depth is not None else min(chosen_depth(d, None), START_DEPTH)
    assert d.trees is not None
    trees = d.trees
    sides = []
    for k, (letter, t, given) in enumerate(zip("ab", trees, d.names)):
        name = f"{letter}: {given or t.name}"  # the CLI's target names where it set them
        drawing = ComputationGraph(t.graph, ViewOptions(depth=chosen, fold=False), RenderOptions(graph_name=name))
        markup = viewer_markup(drawing, height=None, inline=False, library_=k == 0)
        sides.append(
            f"<div class='tv-side' id='tv-side-{letter}'><h2>{html.escape(name)}</h2>"
            f"<div class='tv-pane'>\n{markup}\n</div></div>"
        )
    items = []
    for kind, text, ia, ib in entry_ids(d, nearest=True):
        data = html.escape(script_json([ia, ib]), quote=True)
        items.append(f'<li data-ids="{data}"><span class="k">{html.escape(kind)}</span> {html.escape(text)}</li>')
    data = script_json({"pairs": pairs(d), "marks": [classes(t.graph, m) for t, m in zip(trees, marks(d))]})
    title = html.escape(str(d).splitlines()[0])
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}"><title>{title}</title>'
        f"<style>{STYLE}</style></head><body><div id='list'><h1>{title}</h1>"
        f"<p>click a difference, or step with n / p</p><ul>{''.join(items)}</ul></div>\n"
        f"{''.join(sides)}\n<script type='application/json' id='tv-diff-data'>{data}</script>"
        f"<script>{SCRIPT}</script></body></html>\n"
    )


def pairs(d: GraphDiff) -> list[list[int]]:
    """Matched node ids ``[a, b]``: module calls (renamed and wrapped ones too), the ops
    the alignment paired, and the own ops of the other matched calls with as many ops
    (equal structures, which the alignment leaves unpaired), in order."""
    assert d.trees is not None
    ta, tb = d.trees
    out: dict[int, int] = {**d.matched, **d.wrapped, **d.matched_ops}
    for i, j in d.matched.items():
        ca, cb = ta.calls.get(i), tb.calls.get(j)
        if ca is None or cb is None or len(ca.ops) != len(cb.ops) or any(o in d.matched_ops for o in ca.ops):
            continue  # calls the alignment paired the ops of are as it paired them
        for x, y in zip(ca.ops, cb.ops):
            out.setdefault(x, y)
    return [[a, b] for a, b in sorted(out.items())]


def classes(g: Graph, colours: dict[int, str]) -> dict[str, list[int]]:
    """Node ids per colour class of one side: its marked calls, everything inside an
    added or removed call, and ``holds``: the calls around a marked one."""
    kind: dict[int, str] = {}
    for node in g.nodes:  # parents come before their children
        own = colours.get(node.id)
        up = kind.get(node.parent) if node.parent is not None else None
        if own is not None:
            kind[node.id] = KIND[own]
        elif up in ("added", "removed"):
            kind[node.id] = up
    out: dict[str, list[int]] = {"added": [], "removed": [], "changed": [], "holds": []}
    for i, k in kind.items():
        out[k].append(i)
    out["holds"] = sorted(holders(g, colours))
    return out

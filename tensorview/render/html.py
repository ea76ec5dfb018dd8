"""The interactive HTML viewer: ``save("model.html")`` writes one self-contained page,
``graph.interactive()`` shows the same viewer in a notebook (notebook.py).

The page embeds the whole recording in compact form (compact.py) and the viewer's
JavaScript (render/viewer/*.js, with a vendored layout engine); the browser
computes views from it, so every depth can be opened and closed without running the
model again.  Nothing is fetched at view time: the standalone page forbids any request
in its Content-Security-Policy.

A viewer is written as HTML comments and one short script (``viewer_markup``): the
library (layout engine and viewer), the data (graph and configuration, gzip + base64) and
the start code (viewer/boot.js).  The saved page carries elkjs (1.7 MB, about 0.67 MB as
gzip + base64), the best layout; a notebook output carries dagre (the library is then
about 0.07 MB as gzip + base64), so that a notebook of many viewers stays small
(``ENGINES``; bench/layouts.py measures size, time and layout quality of both; a comment
``tv:engine:`` names the one an output asks for).  Each output carries all of them, so it
works alone, in any order, in a per-output iframe; the viewer is unpacked once per page,
each engine once (the browser's ``DecompressionStream``).  Sanitisers
drop comments and untrusted notebooks run no script, so there the output is empty: the
notebook shows the static picture, which is an output of its own (notebook.py).  Model
text never enters the markup as text: it is inside base64, and the viewer puts names
into the page through ``textContent`` only.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
import uuid
from functools import cache
from importlib import resources
from typing import Any

from ..graph import VIEW_OPTION_NAMES
from ..graph.listing import one_line
from .compact import encode
from .escape import visible
from .formats import Drawing

#: the viewer's own scripts, in load order (each an IIFE adding to ``window.tensorview``)
SCRIPTS = (
    "graph.js",
    "scope.js",
    "view.js",
    "labels.js",
    "worker.js",
    "layout.js",
    "draw.js",
    "search.js",
    "panel.js",
    "pictures.js",
    "viewer.js",
)
#: the layout engines, each the files (in order) that make its part of the library: elkjs
#: for the saved page, dagre (and its ELK adapter, dagre.js) for notebook outputs, where
#: every output carries its own copy (bench/layouts.py compares them; docs/viewer.md)
ENGINES = {"elk": ("vendor/elk.bundled.js",), "dagre": ("vendor/dagre.min.js", "dagre.js")}
#: the engine of notebook outputs (``fragment``) and of the saved page (``page``)
NOTEBOOK_ENGINE, PAGE_ENGINE = "dagre", "elk"
BOOT = "boot.js"
#: the standalone page may load nothing: no request leaves it (layout runs in a worker
#: made from a ``blob:`` URL of the page's own text)
CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; worker-src blob:"
#: notebook output height in pixels (the standalone page fills the window)
HEIGHT = 640
#: the one script of a viewer's markup: it runs the start code kept in the comment before it
#: (``currentScript`` where the page sets it, else the script found by its id)
STARTER = (
    '<script id="tv-start-{uid}">(function(s){{for(var n=s;n=n.previousSibling;)'
    'if(n.nodeType==8&&n.data.indexOf("tv:boot:")==0){{var e=document.createElement("script");'
    "e.text=n.data.slice(8);s.parentNode.insertBefore(e,s.nextSibling);return}}}})"
    '(document.currentScript||document.getElementById("tv-start-{uid}"))</script>'
)
#: the line between the layout engine and the viewer's scripts in the library text, which
#: starts with ``/*tv:engine:NAME*/``
VIEWER_MARK = "\n/*tv:viewer*/\n"

_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def script_json(value: Any) -> str:
    """``value`` as JSON that is safe inside a ``<script>`` element: no ``<``, ``>`` or
    ``&`` appears literally (strings keep them as ``\\u`` escapes, which JSON.parse reads
    back), so no ``</script>`` or ``<!--`` can occur.  Strings hold no character XML
    cannot carry (``escape.visible``, as in DOT): the viewer's SVG export parses."""
    text = json.dumps(_visible(value), separators=(",", ":"), allow_nan=False)
    return text.translate(_ESCAPES)


def _visible(value: Any) -> Any:
    """Every string in ``value`` (JSON data: dicts, lists) through ``visible``."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible(str(k)): _visible(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if _NUMBERS.issuperset(map(type, value)):  # the compact columns: nothing to do
            return value
        return [_visible(v) for v in value]
    return value


_NUMBERS = frozenset({int, float, bool, type(None)})


@cache
def asset(name: str) -> str:
    """The text of one viewer file (render/viewer/``name``), shipped as package data."""
    return resources.files(__package__).joinpath("viewer", name).read_text(encoding="utf-8")


def packed(text: str) -> str:
    """``text`` as gzip + base64 (what boot.js unpacks), in lines of 76 characters."""
    raw = gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)  # mtime 0: the same bytes each time
    return base64.encodebytes(raw).decode("ascii")


@cache
def library_text(engine: str = PAGE_ENGINE) -> str:
    """The layout engine (``ENGINES``), then the viewer's scripts: the worker gets the first
    part, the page runs the second.  The engine is never run by the page unless no worker
    can be made (worker.js)."""
    viewer = [*(asset(s) for s in SCRIPTS), f"window.tensorview.cssText = {script_json(asset('viewer.css'))};"]
    layout = "\n".join(asset(f) for f in ENGINES[engine])
    return f"/*tv:engine:{engine}*/\n{layout}{VIEWER_MARK}" + "\n".join(viewer)


@cache
def library(engine: str = PAGE_ENGINE) -> str:
    """The library as one HTML comment (``tv:lib:``), the same in every output of ``engine``."""
    return f"<!--tv:lib:\n{packed(library_text(engine))}-->"


@cache
def boot() -> str:
    """The start code as an HTML comment (``tv:boot:``)."""
    code = asset(BOOT)
    if "--" in code:  # would end or bend the comment (checked, not escaped)
        raise RuntimeError("render/viewer/boot.js contains '--'; it cannot be kept in an HTML comment")
    return f"<!--tv:boot:{code}-->"


def payload(d: Drawing, inline: bool, engine: str = PAGE_ENGINE) -> dict[str, Any]:
    """What one viewer shows: the compact graph and its configuration (with the layout
    engine it asks for)."""
    return {"graph": encode(d.graph), "config": {**config(d), "inline": inline, "engine": engine}}


def viewer_markup(
    d: Drawing,
    *,
    height: int | None,
    inline: bool,
    library_: bool = True,
    picture: bool = False,
    engine: str = PAGE_ENGINE,
) -> str:
    """One viewer: comments (library, data, height, start code) and the script that starts
    it; ``height`` None fills the parent (the standalone page); ``picture``: the output
    before this one is its picture, which the viewer hides when it starts; ``engine``: the
    layout engine the library carries (``ENGINES``)."""
    uid = uuid.uuid4().hex[:16]  # the starter's id, for pages that run scripts without currentScript
    data = packed(
        json.dumps(_visible(payload(d, inline, engine)), separators=(",", ":"), allow_nan=False)
    )  # escape.visible: the SVG export parses
    parts = [library(engine) if library_ else "", f"<!--tv:engine:{engine}-->", f"<!--tv:data:\n{data}-->"]
    if height is not None:
        parts.append(f"<!--tv:height:{int(height)}-->")
    if picture:
        parts.append("<!--tv:picture:1-->")
    parts += [boot(), STARTER.format(uid=uid)]
    return "\n".join(p for p in parts if p)


def config(d: Drawing) -> dict[str, Any]:
    """What the viewer needs besides the graph: view options, direction, name, colours."""
    opts = d.options
    return {
        "name": d.render_options.graph_name,
        "options": {k: getattr(opts, k) for k in sorted(VIEW_OPTION_NAMES)},
        "graph_dir": d.render_options.graph_dir,
        "colors": palette(d),
    }


_GRAY = re.compile(r"gr[ae]y(\d{1,3})\Z")


def palette(d: Drawing) -> dict[str, str]:
    """The colours of the drawing's styler (``style="dark"``, a ``GraphvizStyler``), for the
    viewer: fills per kind, ``text``, ``line``, ``edge``, ``background``.  The browser uses
    a value only where it parses as a CSS colour (X11's ``grayNN`` are translated)."""
    styler = getattr(d, "styler", None)
    if styler is None:
        return {}
    out: dict[str, Any] = dict(getattr(styler, "colors", None) or {})
    nodes: dict[str, Any] = getattr(styler, "node_defaults", None) or {}
    if "fillcolor" in nodes:  # one fill for every node, as in DOT
        out.update(dict.fromkeys(("tensor", "function", "module", "parameter"), nodes["fillcolor"]))
    for key, attrs, name in (("text", nodes, "fontcolor"), ("line", nodes, "color")):
        if name in attrs:
            out[key] = attrs[name]
    edges: dict[str, Any] = getattr(styler, "edge_attr", None) or {}
    if "color" in edges:
        out["edge"] = edges["color"]
    graph_attrs = styler.style_graph(d.get_view())
    if "bgcolor" in graph_attrs:
        out["background"] = graph_attrs["bgcolor"]
    return {str(k): _css(str(v)) for k, v in out.items()}


def _css(color: str) -> str:
    m = _GRAY.match(color.strip().lower())
    if m and int(m.group(1)) <= 100:
        level = round(int(m.group(1)) * 2.55)
        return f"rgb({level}, {level}, {level})"
    return color


def page(d: Drawing) -> str:
    """The standalone page: opens offline in any browser."""
    title = html.escape(f"{one_line(d.render_options.graph_name)} — tensorview", quote=True)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>html, body {{ height: 100%; margin: 0; }} .tv-host {{ height: 100%; }}</style>
</head>
<body>
{viewer_markup(d, height=None, inline=False)}
</body>
</html>
"""

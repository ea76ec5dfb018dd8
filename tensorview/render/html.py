"""The interactive HTML viewer: ``save("model.html")`` writes one self-contained page,
``graph.interactive()`` shows the same viewer in a notebook.

The page embeds the whole recording in compact form (compact.py) and the viewer's
JavaScript (render/viewer/*.js, with the vendored elkjs for layout); the browser
computes views from it, so every depth can be opened and closed without running the
model again.  Nothing is fetched at view time: the standalone page forbids any request
in its Content-Security-Policy.

Model text is user data: the JSON is written into ``<script type="application/json">``
with ``<``, ``>`` and ``&`` as ``\\u`` escapes (no ``</script>`` or ``<!--`` can end or
bend the element), and the viewer puts names into the page through ``textContent``
only.  In a notebook the library (elkjs and the viewer, about 1.7 MB) goes into the
first viewer shown by the process and is run once per page; later outputs carry only
their data and find the library already loaded (``library=True`` puts it into an
output regardless, for notebooks whose first viewer output is gone).
"""

from __future__ import annotations

import html
import json
import re
import uuid
from functools import cache
from importlib import resources
from typing import Any

from ..errors import InvalidInputError, InvalidTypeError, shown
from ..graph import VIEW_OPTION_NAMES
from ..graph.listing import one_line
from .compact import encode
from .escape import visible
from .formats import Drawing, Format, register

#: the viewer's own scripts, in load order (each an IIFE adding to ``window.tensorview``)
SCRIPTS = (
    "graph.js",
    "scope.js",
    "view.js",
    "labels.js",
    "layout.js",
    "draw.js",
    "search.js",
    "panel.js",
    "viewer.js",
)
ELK = "vendor/elk.bundled.js"
#: the standalone page may load nothing: no request leaves it
CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:"
#: notebook output height in pixels (the standalone page fills the window)
HEIGHT = 640
#: what a viewer's place shows until its script runs (or where scripts never run: an
#: untrusted notebook, a static notebook renderer)
NO_SCRIPT = "tensorview interactive viewer: it needs JavaScript (in Jupyter, a trusted notebook: run the cell)."

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


@cache
def library() -> str:
    """One ``<script>``: elkjs and the viewer, run once per page (``__tensorview_loaded``).
    elkjs's UMD header is given no ``define``/``module``/``exports`` so that it sets
    ``window.ELK`` even where RequireJS is loaded (the classic notebook)."""
    parts = [
        "if (!window.__tensorview_loaded) {",
        "(function (define, module, exports) {",
        asset(ELK),
        "}).call(window);",
        *(asset(s) for s in SCRIPTS),
        f"window.tensorview.cssText = {script_json(asset('viewer.css'))};",
        "window.__tensorview_loaded = true;",
        "window.dispatchEvent(new Event('tensorview-loaded'));",
        "}",
    ]
    code = "\n".join(parts)
    for bad in ("</script", "<!--"):  # would end or bend the element (checked, not escaped)
        if bad in code.lower():
            raise RuntimeError(f"a viewer script contains {bad!r}; it cannot be inlined into HTML")
    return f"<script>\n{code}\n</script>"


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


def _viewer(d: Drawing, host_style: str, inline: bool) -> str:
    """The host element, the data and the script that mounts a viewer on them (``inline``:
    in a notebook, where keys and the mouse wheel belong to the page until it is clicked)."""
    uid = uuid.uuid4().hex
    data = script_json(encode(d.graph))
    cfg = script_json({**config(d), "inline": inline})
    missing = script_json(
        "The tensorview viewer library is not loaded in this page (the output that carried it "
        "is gone or the notebook is not trusted): show it again with graph.interactive(library=True)."
    )
    return f"""<div class="tv-host" id="tv-host-{uid}" style="{host_style}">{NO_SCRIPT}</div>
<script type="application/json" id="tv-data-{uid}">{data}</script>
<script>
(function () {{
  var host = document.getElementById("tv-host-{uid}");
  function run() {{
    if (host.getAttribute("data-mounted")) return;
    host.setAttribute("data-mounted", "1");
    host.textContent = "";
    var tv = window.tensorview;
    if (!document.querySelector("style[data-tensorview]")) {{
      var style = document.createElement("style");
      style.setAttribute("data-tensorview", "");
      style.textContent = tv.cssText;
      document.head.appendChild(style);
    }}
    tv.mount(host, JSON.parse(document.getElementById("tv-data-{uid}").textContent), {cfg});
  }}
  if (window.__tensorview_loaded) return run();
  window.addEventListener("tensorview-loaded", run);
  setTimeout(function () {{
    if (!window.__tensorview_loaded) host.textContent = {missing};
  }}, 5000);
}})();
</script>"""


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
{library()}
{_viewer(d, "height: 100%", False)}
</body>
</html>
"""


#: whether this process has shown a notebook viewer with the library (the next ones omit it)
_library_sent = False


def fragment(d: Drawing, *, library_: bool | None = None, height: int = HEIGHT) -> str:
    """A notebook output: the viewer, with the library when ``library_`` is True, or when
    None and no earlier output of this process carried it."""
    global _library_sent
    _check(height, library_)
    include = library_ if library_ is not None else not _library_sent
    if include:
        _library_sent = True
    return (library() + "\n" if include else "") + _viewer(d, f"height: {height}px", True)


def _check(height: Any, library: Any) -> None:
    if not isinstance(height, int) or isinstance(height, bool) or height < 100:
        raise InvalidInputError(f"height must be an int >= 100 (pixels), got {shown(height)}")
    if library is not None and not isinstance(library, bool):
        raise InvalidTypeError(f"library must be True, False or None, got {shown(library)}")


class Interactive:
    """The interactive viewer of a drawing, as a notebook displays it (``_repr_html_``);
    ``html`` is that output's HTML (``graph.save("x.html")`` writes the standalone page)."""

    def __init__(self, drawing: Drawing, *, height: int = HEIGHT, library: bool | None = None) -> None:
        _check(height, library)
        self.drawing = drawing
        self.height = height
        self.library = library

    @property
    def html(self) -> str:
        return fragment(self.drawing, library_=self.library, height=self.height)

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"<tensorview interactive viewer of {self.drawing.render_options.graph_name!r}>"


register(Format("html", ("html", "htm"), "text/html", page, display=True, inline=fragment))

"""The table of output formats: one ``Format`` per kind of file, used by
``ComputationGraph.save``, the Jupyter display and the command line.

A format says which file extensions it owns, its MIME type, whether it needs the
Graphviz ``dot`` program, whether a notebook may display it, and how to produce its
bytes or text from a drawing.  Adding a format is one ``register`` call:

>>> from tensorview.render.formats import Format, register, format_for
>>> _ = register(Format("txt", ("txt",), "text/plain", lambda d: d.graph.table()))
>>> format_for("TXT").name
'txt'
>>> unregister("txt")
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..errors import choices_error
from ..graph import Graph, View, ViewOptions
from .escape import file_name
from .executable import run_dot, with_graph_attrs
from .options import RenderOptions


class Drawing(Protocol):
    """What a format is produced from (``tensorview.ComputationGraph`` is one)."""

    @property
    def graph(self) -> Graph: ...

    @property
    def options(self) -> ViewOptions: ...

    @property
    def render_options(self) -> RenderOptions: ...

    @property
    def source(self) -> str: ...

    def get_view(self) -> View: ...

    def to_json(self) -> dict[str, object]: ...

    def svg(self) -> str: ...


@dataclass(frozen=True)
class Format:
    name: str
    #: file extensions (lower case, no dot); the first is the default
    extensions: tuple[str, ...]
    mime: str
    produce: Callable[[Drawing], str | bytes]
    needs_dot: bool = False
    #: a notebook may show this format (tried in registration order)
    display: bool = False
    #: what a notebook shows when it differs from the file (the html viewer's output)
    inline: Callable[[Drawing], str | bytes] | None = None
    #: a static picture: a notebook shows every picture format it can make in one output
    #: (``image/svg+xml`` for trusted notebooks, ``image/png`` where SVG is not shown)
    picture: bool = False


_FORMATS: dict[str, Format] = {}
_BY_EXTENSION: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    """Add ``fmt`` (replacing a format of the same name); returns it."""
    unregister(fmt.name)
    _FORMATS[fmt.name] = fmt
    for ext in fmt.extensions:
        _BY_EXTENSION[ext] = fmt
    return fmt


def unregister(name: str) -> None:
    old = _FORMATS.pop(name, None)
    if old is not None:
        for ext in old.extensions:
            if _BY_EXTENSION.get(ext) is old:
                del _BY_EXTENSION[ext]


def formats() -> list[Format]:
    """Every registered format, in registration order."""
    return list(_FORMATS.values())


def extensions() -> tuple[str, ...]:
    return tuple(_BY_EXTENSION)


def format_for(extension: str) -> Format:
    """The format owning a file extension (``"svg"``, ``"GV"``; no dot)."""
    ext = extension.lower()
    fmt = _BY_EXTENSION.get(ext)
    if fmt is None:
        raise choices_error("save format", ext, _BY_EXTENSION)
    return fmt


def save_path(directory: str | bytes, filename: str | bytes | None, name: str) -> str:
    """Where ``draw_graph(save_graph=True)`` writes: ``filename`` in ``directory``, else the
    graph's ``name`` (user data) made a safe file name there (``escape.file_name``); PNG
    when the name has no extension of a format (torchview's default)."""
    path = os.fsdecode(filename) if filename else file_name(name)
    ext = os.path.splitext(path)[1][1:].lower()
    if not ext or (not filename and ext not in _BY_EXTENSION):
        path += ".png"
    return os.path.join(os.fsdecode(directory), path)


def _dot_output(kind: str) -> Callable[[Drawing], bytes]:
    def produce(d: Drawing) -> bytes:
        return run_dot(d.source, kind)

    return produce


def _graph_json(d: Drawing) -> str:
    return json.dumps(d.to_json(), indent=1, allow_nan=False)  # strict JSON (serialize.py writes NaN as "NaN")


#: a notebook's PNG is at most this big (inches at 96 dpi: 9,600 px a side); Graphviz scales
#: a larger drawing down to it (``save("x.png")`` keeps the full size)
PNG_SIZE = "100,100"
_SVG_ROOT = re.compile(r"<svg\b([^>]*)>")
_SIZE = re.compile(r'\s(width|height)="([\d.]+)(pt|px)?"')
#: a picture wider than this (CSS pixels) is drawn at the output's width
WIDE_PX = 960
#: a click on a wide picture drawn inline (the classic notebook, nbconvert with inline SVG)
#: shows it at full size, the output scrolling sideways, and a second click scales it back.
#: Event attributes, not a script: they work in markup inserted as HTML, and are inert where
#: the picture is an ``<img>`` (JupyterLab, nbconvert: there the viewer's script does the
#: same, viewer/pictures.js) or sanitised away (untrusted, ``sanitize_html``), which leaves
#: the scaled picture, with no pointer that promises more
_TOGGLE = (
    "var f=this.getAttribute('width')==='100%';"
    "this.setAttribute('width',f?this.getAttribute('data-full-width'):'100%');"
    "this.style.maxWidth=f?'none':'100%';this.style.cursor=f?'zoom-out':'zoom-in';"
    "this.parentNode.style.overflowX=f?'auto':''"
)
_WIDE_ATTRS = (
    f" onclick=\"{_TOGGLE}\" onmouseenter=\"if(this.getAttribute('width')==='100%')this.style.cursor='zoom-in'\""
)


def scaled_svg(svg: str) -> str:
    """The SVG as a notebook shows it: a picture wider than ``WIDE_PX`` is given
    ``width="100%"`` (front-ends draw SVG as an ``<img>``, which then takes the output's
    width; Graphviz's ``viewBox`` keeps the proportions) and a click to see it at full
    size where it is drawn inline (``_TOGGLE``); a narrower one keeps its size; inline, its
    style shrinks it to the width it is given.  ``data-tensorview`` marks it as
    tensorview's picture."""

    def root(m: re.Match[str]) -> str:
        attrs = m.group(1)
        if "style=" in attrs:
            return m.group(0)
        size = {k: float(v) * (96 / 72 if unit in ("", "pt") else 1) for k, v, unit in _SIZE.findall(attrs)}
        if size.get("width", 0) > WIDE_PX and "viewBox=" in attrs:
            full = f"{size['width']:.0f}px"
            attrs = _SIZE.sub(lambda a: ' width="100%"' if a.group(1) == "width" else "", attrs)
            attrs = f' data-full-width="{full}"{_WIDE_ATTRS}{attrs}'
        return f'<svg data-tensorview="picture" style="max-width: 100%; height: auto;"{attrs}>'

    return _SVG_ROOT.sub(root, svg, count=1)


def _notebook_svg(d: Drawing) -> str:
    return scaled_svg(d.svg())


def _notebook_png(d: Drawing) -> str:
    """A PNG no bigger than ``PNG_SIZE``, base64 as notebooks store it."""
    png = run_dot(with_graph_attrs(d.source, {"size": PNG_SIZE}), "png")
    return base64.b64encode(png).decode("ascii")


register(
    Format(
        "svg",
        ("svg",),
        "image/svg+xml",
        _dot_output("svg"),
        needs_dot=True,
        display=True,
        inline=_notebook_svg,
        picture=True,
    )
)
register(
    Format(
        "png",
        ("png",),
        "image/png",
        _dot_output("png"),
        needs_dot=True,
        display=True,
        inline=_notebook_png,
        picture=True,
    )
)
register(Format("pdf", ("pdf",), "application/pdf", _dot_output("pdf"), needs_dot=True))
register(Format("dot", ("gv", "dot"), "text/vnd.graphviz", lambda d: d.source))
register(Format("json", ("json",), "application/json", _graph_json))

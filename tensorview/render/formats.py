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

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..errors import choices_error
from ..graph import Graph, View, ViewOptions
from .escape import file_name
from .executable import run_dot
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


register(Format("svg", ("svg",), "image/svg+xml", _dot_output("svg"), needs_dot=True, display=True))
register(Format("png", ("png",), "image/png", _dot_output("png"), needs_dot=True))
register(Format("pdf", ("pdf",), "application/pdf", _dot_output("pdf"), needs_dot=True))
register(Format("dot", ("gv", "dot"), "text/vnd.graphviz", lambda d: d.source))
register(Format("json", ("json",), "application/json", _graph_json))

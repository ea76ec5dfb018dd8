"""Source locations: where in the user's code each op and module call was made.

``SourceProbe`` records, for every function and module node, ``"file.py:123"``: the
innermost Python frame outside torch, tensorview and the standard library when the op
ran (or was replayed on meta) or the call started.  A subclass's ``__call__`` that only
forwards to ``nn.Module.__call__`` (transformers' gradient-checkpointing layers) is
skipped too, so a decoder layer points at the line that called it.  Paths are shown
from the installed package's directory (``transformers/models/llama/modeling_llama.py:245``),
else relative to the working directory when under it.

The values become the annotation layer ``"source"`` (shown by the HTML viewer and in
the JSON; not written into Graphviz labels).  Cost: one walk up the stack per op, with
the verdict on each file cached (bench/run.py measures it).

>>> import torch
>>> from tensorview.recording import Recorder
>>> model = torch.nn.Sequential(torch.nn.Linear(2, 2))
>>> with Recorder(model, probes=[SourceProbe()]) as rec:
...     _ = model(torch.randn(1, 2))
>>> sorted(set(rec.graph.annotations.layer("source").values()))[0].startswith("<doctest")
True
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Mapping
from types import FrameType
from typing import Any

import torch
from torch import nn

from ..graph import SOURCE_LAYER, FunctionNode, ModuleNode
from .probes import Probe

LAYER = SOURCE_LAYER
_PACKAGES = ("site-packages", "dist-packages")
#: torch's and tensorview's directories: their frames are never the user's code
_OURS = tuple(
    os.path.normcase(p) + os.sep
    for p in (os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
)
#: the standard library's (functools, contextlib...), less the installed packages in it
_STDLIB = tuple({os.path.normcase(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib")})
#: ``__call__`` frames that only hand a module call on (skipped when ``self`` is a module)
_CALL_NAMES = frozenset({"__call__", "_call_impl", "_wrapped_call_impl"})


def _internal(filename: str) -> bool:
    """Whether frames of ``filename`` are skipped (torch, tensorview, the standard library)."""
    if filename.startswith("<"):
        return filename.startswith("<frozen ")
    path = os.path.normcase(os.path.abspath(filename))
    if path.startswith(_OURS):
        return True
    return path.startswith(_STDLIB) and not any(os.sep + p + os.sep in path for p in _PACKAGES)


def shorten_path(filename: str) -> str:
    """``filename`` from its installed package's directory (``transformers/...``), else
    relative to the working directory when under it, else as it is."""
    if filename.startswith("<"):
        return filename
    path = os.path.abspath(filename)
    for p in _PACKAGES:
        _, sep, rest = path.rpartition(os.sep + p + os.sep)
        if sep:
            return rest
    cwd = os.getcwd() + os.sep
    return path[len(cwd) :] if path.startswith(cwd) else path


class SourceProbe(Probe):
    """Records ``"file.py:line"`` of the user's code for every op and module call."""

    name = LAYER

    def __init__(self) -> None:
        self.values: dict[int, str] = {}
        #: filename -> whether its frames are skipped
        self._skip: dict[str, bool] = {}
        #: (filename, line) -> the text recorded, shared by every node made there
        self._text: dict[tuple[str, int], str] = {}

    def _here(self) -> str | None:
        skip = self._skip
        f: FrameType | None = sys._getframe(2)
        while f is not None:
            code = f.f_code
            name = code.co_filename
            inside = skip.get(name)
            if inside is None:
                inside = skip[name] = _internal(name)
            if not inside and not (code.co_name in _CALL_NAMES and isinstance(f.f_locals.get("self"), nn.Module)):
                key = (name, f.f_lineno)
                text = self._text.get(key)
                if text is None:
                    text = self._text[key] = f"{shorten_path(name)}:{f.f_lineno}"
                return text
            f = f.f_back
        return None

    def _record(self, node_id: int) -> None:
        where = self._here()
        if where is not None:
            self.values[node_id] = where

    def start(self, root: ModuleNode, module: nn.Module) -> None:
        self._record(root.id)

    def enter_call(self, m: ModuleNode, module: nn.Module) -> None:
        self._record(m.id)

    def enter_op(self, fn: FunctionNode, func: Any) -> None:
        self._record(fn.id)

    def replay_op(self, fn: FunctionNode, func: Any, memo: Any) -> None:
        self._record(fn.id)

    def layers(self) -> Mapping[str, Mapping[int, Any]]:
        return {LAYER: self.values}

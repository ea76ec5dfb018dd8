"""torchview's ``draw_graph`` arguments, read as torchview reads them.

- **Positional order**: ``draw_graph(model, input_data, input_size, graph_name, depth, ...)``
  as torchview declares it.  tensorview's older order put ``input_size`` second, so a
  second argument made only of numbers (``(1, 3, 224, 224)``, ``[(1, 8), (1, 8)]``,
  ``torch.Size``), holding no tensor, is a shape: torchview would pass those numbers to
  ``forward`` and fail.  Tensors in the ``input_size`` place are ``input_data``.
- ``mode=None`` is ``"eval"``, ``graph_dir=None`` is ``"TB"``; ``depth`` may be a float
  (``float("inf")``: every depth, see ``ViewOptions``).
- ``save_graph=True`` writes what torchview writes: the DOT source to
  ``<directory>/<filename>`` (``filename`` defaults to ``<graph_name>.gv``) and the PNG
  beside it as ``<filename>.png``; a missing ``directory`` is created.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import InputChoiceError, InvalidTypeError, RenderError
from ..render import run_dot

MODES = ("eval", "train", "same")


def _numbers_only(x: Any) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, (int, float)):
        return True
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(_numbers_only(e) for e in x)


def input_slots(input_data: Any, input_size: Any) -> tuple[Any, Any]:
    """``(input_size, input_data)`` from the two places (see the module docstring)."""
    if input_size is None and input_data is not None and _numbers_only(input_data):
        return input_data, None
    return input_size, input_data


def check_mode(mode: Any) -> str:
    """``mode`` with ``None`` as ``"eval"``; an unknown one is an ``InputChoiceError``."""
    if mode is None:
        return "eval"
    if not isinstance(mode, str) or mode not in MODES:
        raise InputChoiceError(f"unknown mode: {mode!r:.80} (must be one of {sorted(MODES)!r} or None)")
    return mode


def check_flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidTypeError(f"{name} must be True or False, got {value!r:.80}")
    return value


def save_files(source: str, directory: str, filename: str) -> tuple[str, str]:
    """Write ``source`` to ``directory/filename`` and its PNG to ``directory/filename.png``
    (creating ``directory``); returns both paths."""
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise RenderError(f"cannot save the graph into directory {directory!r}: it is a file, not a folder")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise RenderError(f"cannot create the directory {directory!r} to save the graph in: {e}") from e
    gv = os.path.join(directory, filename)
    png = gv + ".png"
    data = run_dot(source, "png")
    with open(gv, "w", encoding="utf-8") as f:
        f.write(source)
    with open(png, "wb") as fb:
        fb.write(data)
    return gv, png

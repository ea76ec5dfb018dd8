"""``collect_attributes=True``: each module call's attributes as one line of text, the
format torchview users parse (``Linear(training=False, in_features=128, out_features=64)``).

A probe (recording/probes.py) reads the module object as it is called: its public
instance attributes (``vars(module)`` without names starting with ``_``, so parameters,
buffers and submodules are left out), at most 20 at the top and 5 inside, nested values
down to ``MAX_DEPTH`` levels; tensors as ``Tensor(shape=(1, 2), dtype=torch.float32)``,
never their values.  The text is kept beside the drawing, not as an annotation layer, so
it does not change what is drawn.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..graph import ModuleNode
from ..recording import Probe

MAX_DEPTH = 3
#: how many attributes an object shows, at the top level and nested
LIMITS = (20, 5)
#: the longest text of one value (a huge repr is cut)
MAX_REPR = 200


def describe(obj: Any, level: int = 0) -> str:
    """One-line text of ``obj`` (see the module docstring)."""
    if level > MAX_DEPTH:
        return "..."
    if isinstance(obj, torch.Tensor):
        if isinstance(obj, nn.parameter.UninitializedParameter):
            return "Tensor(<uninitialized>)"
        return f"Tensor(shape={tuple(obj.shape)}, dtype={obj.dtype})"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{k}: {describe(v, level + 1)}" for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ", ".join(describe(v, level + 1) for v in obj) + "]"
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        limit = LIMITS[0] if level == 0 else LIMITS[1]
        public = [(k, v) for k, v in vars(obj).items() if not k.startswith("_")]
        inner = ", ".join(f"{k}={describe(v, level + 1)}" for k, v in public[:limit])
        return f"{type(obj).__name__}({inner}{'...' if len(public) > limit else ''})"
    try:
        text = repr(obj)
    except Exception:  # noqa: BLE001 - an object that cannot print itself
        text = f"<{type(obj).__name__}>"
    return text if len(text) <= MAX_REPR else text[: MAX_REPR - 1] + "…"


class AttributesProbe(Probe):
    """Keeps ``describe(module)`` per module call id, read when the call starts."""

    name = "torchview_attributes"

    def __init__(self) -> None:
        self.found: dict[int, str] = {}

    def start(self, root: ModuleNode, module: nn.Module) -> None:
        self.found[root.id] = describe(module)

    def enter_call(self, m: ModuleNode, module: nn.Module) -> None:
        self.found[m.id] = describe(module)

"""The thread's torch function modes around a recording.

Our ``TorchFunctionMode`` goes to the bottom of the stack for the root call, below the
modes the caller pushed: their ``__torch_function__`` sees the model's calls first, as
without us, and passes them down to ours; tensorview's own calls run with torch
functions off, so no mode sees them.  Around ``draw_graph``'s own set-up (inputs, the
model copy, grad mode) the caller's modes are taken off the stack (``caller_modes_hidden``)
and the root call puts them back above ours for the forward.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import torch

_tls = threading.local()


def mode_stack() -> list[Any]:
    """The thread's torch function modes, bottom first."""
    return [torch._C._get_function_stack_at(i) for i in range(torch._C._len_torch_function_stack())]


def set_mode_stack(modes: list[Any]) -> None:
    """Make the stack ``modes`` (idempotent: a clean-up step)."""
    while torch._C._len_torch_function_stack():
        torch._C._pop_torch_function_stack()
    for m in modes:
        torch._C._push_on_torch_function_stack(m)


def hidden_modes() -> list[Any]:
    """The caller's modes ``caller_modes_hidden`` took off (for the root call to show them
    the forward)."""
    return list(getattr(_tls, "hidden", None) or ())


@contextlib.contextmanager
def caller_modes_hidden() -> Iterator[None]:
    """No mode of the caller sees tensorview's set-up and tear-down; the forward it sees."""
    theirs = mode_stack()
    if not theirs or getattr(_tls, "hidden", None):
        yield
        return
    try:
        _tls.hidden = theirs
        set_mode_stack([])
        yield
    finally:
        _tls.hidden = None
        set_mode_stack(theirs)


_POP_MODE_CODE = getattr(getattr(torch.overrides, "_pop_mode_temporarily", None), "__wrapped__", None)
_POP_MODE_CODE = getattr(_POP_MODE_CODE, "__code__", None)


def close_mode_guards(tb: TracebackType | None) -> None:
    """An interrupt that lands in torch's ``_pop_mode_temporarily`` (around a mode's
    ``__torch_function__``) after it popped our mode leaves pushing it back to the
    generator's finaliser, which runs after the recording ended and leaves our mode on the
    stack: close such generators now, while the clean-up can still take the mode off."""
    while tb is not None and _POP_MODE_CODE is not None:
        gen: Any = getattr(tb.tb_frame.f_locals.get("self"), "gen", None)
        if getattr(gen, "gi_code", None) is _POP_MODE_CODE and gen.gi_frame is not None:
            gen.close()
        tb = tb.tb_next

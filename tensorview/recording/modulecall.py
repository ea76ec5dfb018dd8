"""The patched ``nn.Module.__call__``: how module calls reach the recording thread's session.

``nn.Module.__call__`` is patched once for all recorders of the process (``MODULE_CALL``,
a ``SharedPatch``); the wrapper acts only in a thread that is recording.  With Dynamo
loaded the wrapper is installed behind ``torch._dynamo.disable``, so that a compiled caller
graph-breaks into it instead of tracing it (compiled.py).  That guard costs about a
microsecond per module call, and inside a root call it is not needed: the compiler's
stance is then ``force_eager`` (nothing is traced, in any thread), so the root call swaps
in the same wrapper without the guard (``MODULE_CALL.unguard``) and puts the guarded one
back when it ends (``reguard``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from .compiled import dynamo_disabled
from .patch import SharedPatch
from .tensor import _tls


def _make_call(original: Callable[..., Any]) -> Callable[..., Any]:
    installed: Any = None  # the wrapper as installed (behind torch._dynamo.disable, if loaded)

    def __call__(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        session = getattr(_tls, "session", None)
        if session is None or MODULE_CALL.installed is not installed:  # not recording, or a stale wrapper
            return original(self, *args, **kwargs)
        return session.call_module(original, self, args, kwargs)

    __call__.__wrapped__ = original  # type: ignore[attr-defined]
    __call__.__tensorview__ = True  # type: ignore[attr-defined]
    installed = dynamo_disabled(__call__)
    if installed is not __call__:
        installed.__wrapped__ = original
        installed.__tensorview__ = True
        installed.__tv_bare__ = __call__  # the same wrapper without the guard (``unguard``)
    return installed


MODULE_CALL = SharedPatch(nn.Module, "__call__", _make_call)

__all__ = ["MODULE_CALL"]

"""The patched ``nn.Module.__call__``: how module calls reach the recording thread's session.

``nn.Module.__call__`` is patched once for all recorders of the process (``MODULE_CALL``,
a ``SharedPatch``); the wrapper acts only in a thread that is recording.  With Dynamo
loaded the wrapper is installed behind ``torch._dynamo.disable``, so that a compiled caller
graph-breaks into it instead of tracing it (compiled.py).  That guard costs about a
microsecond per module call, and inside a root call it is not needed: the compiler's
stance is then ``force_eager`` (nothing is traced, in any thread), so the root call swaps
in the same wrapper without the guard (``MODULE_CALL.unguard``) and puts the guarded one
back when it ends (``reguard``).

A submodule call costs the stack one frame of ours (the wrapper, standing in for torch's
``_wrapped_call_impl``, whose one test it runs inline), so a model nested N deep records
wherever its plain forward runs.
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
    # torch's own ``__call__`` (``_wrapped_call_impl``) is run inline: its body is one test
    inline = original is getattr(nn.Module, "_wrapped_call_impl", None)

    def __call__(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        session = getattr(_tls, "session", None)
        if session is None or MODULE_CALL.installed is not installed:  # not recording, or a stale wrapper
            return original(self, *args, **kwargs)
        # a submodule call: entered, run and left from here, so that while the module runs
        # this frame is the only one of ours on the stack (a model nested N deep records
        # where its plain forward runs)
        entered = session.enter_call(self, args, kwargs)
        if entered is None:  # the root call, another thread, a torch.compile wrapper
            return session.call_module(original, self, args, kwargs)
        frame, args, kwargs = entered
        try:
            if inline and self._compiled_call_impl is None:
                out = self._call_impl(*args, **kwargs)
            else:
                out = original(self, *args, **kwargs)
        except BaseException as e:
            session.fail_sub(frame, e)
            raise
        return session.leave_sub(frame, out)

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

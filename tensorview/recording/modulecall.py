"""The patched ``nn.Module.__call__``: how module calls reach the recording thread's session.

``nn.Module.__call__`` is patched once for all recorders of the process (``MODULE_CALL``,
a ``SharedPatch``); the wrapper acts only in a thread that is recording.  With Dynamo
loaded, a compiled caller must not trace the wrapper: while Dynamo traces
(``torch.compiler.is_compiling()``, which it reads as True) the wrapper calls its twin
behind ``torch._dynamo.disable``, so the caller graph-breaks there and the twin runs
eagerly (compiled.py).  Run eagerly, the test costs ~50 ns a module call, where the
disabled wrapper costs about a microsecond.  The attribute is set twice per recording
only (in and out): setting a dunder of ``nn.Module`` updates the slot of every subclass,
0.2-0.6 ms with transformers' classes loaded.

A submodule call costs the stack one frame of ours (the wrapper, standing in for torch's
``_wrapped_call_impl``, whose one test it runs inline), so a model nested N deep records
wherever its plain forward runs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch
import torch.compiler
from torch import nn

from .compiled import dynamo_disabled
from .patch import SharedPatch
from .tensor import _tls

#: True while Dynamo traces (it reads the call as a constant), or torch.export runs
_compiling = torch.compiler.is_compiling


def _make_call(original: Callable[..., Any]) -> Callable[..., Any]:
    installed: Any = None  # the wrapper as installed
    guarded: Any = None  # its twin behind torch._dynamo.disable (None while Dynamo is not loaded)
    # torch's own ``__call__`` (``_wrapped_call_impl``) is run inline: its body is one test
    inline = original is getattr(nn.Module, "_wrapped_call_impl", None)

    def make(check: bool) -> Callable[..., Any]:
        def __call__(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
            if check and guarded is not None and _compiling():  # Dynamo traces: break into the twin
                return guarded(self, *args, **kwargs)
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
        return __call__

    installed = make(True)
    twin = make(False)  # (without the test: called where ``_compiling()`` holds)
    disabled = dynamo_disabled(twin)
    if disabled is not twin:
        guarded = disabled
        guarded.__wrapped__ = original
        guarded.__tensorview__ = True
    installed.__tv_guarded__ = guarded  # type: ignore[attr-defined]
    return installed


#: (the wrapper is made again once Dynamo is loaded: it then has a guarded twin)
MODULE_CALL = SharedPatch(nn.Module, "__call__", _make_call, lambda: "torch._dynamo" in sys.modules)

__all__ = ["MODULE_CALL"]

"""The recording session: all state of one recording, and the hooks that fill it.

Three hooks feed one ``Session``:

* the patched ``nn.Module.__call__`` (``call_module``) makes a ModuleNode per module call
  (calls.py), wraps the root call's inputs as ``RecorderTensor`` and unwraps its outputs
  (boundary.py);
* a ``TorchFunctionMode`` pushed for the duration of the root call (``handle``, ops.py)
  sees every torch function, method and operator in the recording thread;
* ``RecorderTensor.__torch_function__`` forwards to ``handle`` too when the mode is not on
  the stack.

State lives in ``SessionState`` (state.py); nodes are made through its ``NodeFactory``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from torch import nn
from torch.overrides import TorchFunctionMode

from .boundary import RootBoundary
from .compiled import unwrap
from .fxscope import GRAPH_MODULE, interpreted, scoped
from .state import Settings


class _Mode(TorchFunctionMode):
    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return self.session.handle(func, types, args, kwargs or {})


class Session(RootBoundary):
    """One recording of one model: op recording, module scope and the root boundary
    over one ``SessionState``."""

    def __init__(self, model: nn.Module, settings: Settings) -> None:
        super().__init__(model, settings)
        self._mode = _Mode(self)

    def call_module(
        self, call: Callable[..., Any], module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """The patched ``nn.Module.__call__`` of the recording thread lands here."""
        if threading.get_ident() != self.thread:
            return call(module, *args, **kwargs)
        if self.stand_ins is not None and self.stack:  # the caller's module, reached by a closure
            pair = self.stand_ins.get(id(module))
            if pair is not None and pair[0] is module:
                module = pair[1]
        wrapper = self.compile_wrapper
        if wrapper is not None and isinstance(module, wrapper):
            # torch.compile(m): no node of its own; ``m`` is called in its place (its compiled
            # forward would call ``m`` through a method bound before our patch), and gets the
            # wrapper's path; hooks registered on the wrapper itself do not run
            return self.call_module(call, unwrap(module), args, kwargs)
        if isinstance(module, GRAPH_MODULE) and scoped(module):  # hierarchy from fx (fxscope.py)
            call = interpreted(self, call)
        if not self.stack:
            if module is not self.model or self.done:
                return call(module, *args, **kwargs)
            return self.root_call(call, module, args, kwargs)
        return self.sub_call(call, module, args, kwargs)

    def enter_call(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The patched ``__call__``'s fast path: a submodule call in the recording thread is
        entered (``enter_sub``: ``(frame, args, kwargs)``, to be left by ``leave_sub`` or
        ``fail_sub``); None for any other call, which goes through ``call_module``."""
        if not self.stack or threading.get_ident() != self.thread:
            return None
        wrapper = self.compile_wrapper
        if wrapper is not None and isinstance(module, wrapper):
            return None
        if self.stand_ins is not None and id(module) in self.stand_ins:  # runs its copy: call_module
            return None
        if isinstance(module, GRAPH_MODULE):  # an fx hierarchy may be rebuilt: call_module
            return None
        return self.enter_sub(module, args, kwargs)

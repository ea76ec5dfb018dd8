"""``RecorderTensor``: the tensor subclass that carries its graph node through the forward."""

from __future__ import annotations

import threading
from typing import Any

import torch

#: the recording session of this thread (threading.local: other threads never see it)
_tls = threading.local()


def current_session() -> Any:
    return getattr(_tls, "session", None)


class RecorderTensor(torch.Tensor):
    """A tensor being recorded.  ``_tv_node`` is its current TensorNode (a new one after
    each in-place op) and ``_tv_ver`` the version counter value that node stands for.

    Every torch function, method, operator, indexing and in-place op applied to it goes
    through ``__torch_function__`` into the session of the recording thread.  While a
    recording runs, the session's TorchFunctionMode sees the same calls first (and also
    factory functions and ops on parameters), so this hook is the fallback for calls the
    mode does not see.
    """

    _tv_node: Any
    _tv_ver: int

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        session = current_session()
        if kwargs is None:
            kwargs = {}
        if session is None or not session.running:
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)
        return session.handle(func, types, args, kwargs)

"""The floor of tensorview's recording design, measured: a minimal recorder built the same
way (a ``TorchFunctionMode`` sees every op, results are re-wrapped as ``RecorderTensor``
aliases, a patched ``nn.Module.__call__`` sees every module call) that keeps one tuple per
op and per call and nothing else: no nodes, edges, versions, paths, names, scopes.

What it costs over the plain forward is the least any recorder of this design can cost in
Python, whatever it keeps; ``run.py`` puts it next to tensorview's own overhead per op
("floor us/op"), so the table shows how much of the overhead is the design and how much
is what tensorview does per op.  It records nothing usable and is not part of tensorview.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from tensorview.recording.tensor import RecorderTensor

_Disable = torch._C.DisableTorchFunction
_RT = RecorderTensor
_Tensor = torch.Tensor


def _tag(a: Any) -> Any:
    return a._tv_node if type(a) is _RT else None


class _Mode(TorchFunctionMode):
    def __init__(self, log: list[Any]) -> None:
        super().__init__()
        self.log = log

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        with _Disable():
            ins = []
            for a in args:  # tensors, and one level into lists (cat, stack)
                if type(a) is list or type(a) is tuple:
                    ins.extend(_tag(b) for b in a)
                else:
                    ins.append(_tag(a))
            self.log.append((func, ins))
            out = func(*args, **(kwargs or {}))
            if type(out) is _Tensor:
                node = (tuple(out.shape), out.dtype)
                self.log.append(node)
                r = out.as_subclass(_RT)
                r._tv_node = node
                r._tv_ver = r._version
                return r
            return out


@contextmanager
def minimal_recording(log: list[Any]) -> Iterator[None]:
    """Within it, every op and module call of this thread appends to ``log``; tensors given
    to the model should be ``RecorderTensor`` (see ``as_recorded``)."""
    original = nn.Module.__call__

    def call(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        with _Disable():
            log.append((self, [_tag(a) for a in args]))
        out = original(self, *args, **kwargs)
        with _Disable():
            log.append(_tag(out))
        return out

    nn.Module.__call__ = call  # type: ignore[method-assign]
    try:
        with _Mode(log):
            yield
    finally:
        nn.Module.__call__ = original  # type: ignore[method-assign]


def as_recorded(inputs: dict[str, Any]) -> dict[str, Any]:
    """The model's inputs (keyword arguments) with their tensors as RecorderTensors."""
    out = {}
    for k, v in inputs.items():
        if type(v) is _Tensor:
            v = v.as_subclass(_RT)
            v._tv_node = None
        out[k] = v
    return out

"""Meta replay with grad enabled: metacache.py's replay one level down, below autograd.

With grad on, an op on tensors that need grad cannot be replayed as a whole: autograd must
make its node (what ``draw_graph(..., backward=True)`` draws, what the cost model's saved
bytes are read from).  But autograd's part and the kernel are separate steps: autograd
makes its node, then runs the aten ops below it, and a ``TorchDispatchMode`` sees those.
``GradReplay``, pushed around such an op (opcalls.py), replays each aten op already seen
with the same argument metadata, as metacache.py does above autograd; autograd still makes
its nodes from the results, links views to their bases and bumps versions above it.  On
meta, torch runs most kernels as Python decompositions (``_refs``: 100-300 µs an op), so
this is most of a grad-enabled meta forward.

Results are replayed with metacache.py's templates (below autograd a view is a result
sharing an argument's storage), and a template is kept only when replaying it at once
gives results of the same layout, dtype and storage bytes (what saved bytes are counted
from).  An op that changed an argument's layout or storage (``resize_``, ``set_``,
``as_strided_``, an ``out=`` tensor resized) is never replayed.
The mode is used only where no other dispatch mode is on the stack when the op starts: a
mode under it would not see the ops replayed.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .inference import storage_id
from .metacache import MISS, flat_args, key_of, replay, template_of
from .optable import version

_Tensor = torch.Tensor
#: the key under which a recording's meta cache holds its ``GradReplay`` (op keys are tuples)
GRAD_REPLAY = object()
_modes_on_stack = torch._C._len_torch_dispatch_stack


def _tensors(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[_Tensor]:
    """The tensor arguments, also those in a list or tuple (``cat``'s)."""
    ins: list[_Tensor] = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, _Tensor):
            ins.append(a)
        elif type(a) in (list, tuple):
            ins.extend(t for t in a if isinstance(t, _Tensor))
    return ins


def _layout(t: _Tensor) -> tuple[Any, ...]:
    return (t.shape, t.stride(), t.storage_offset(), storage_id(t))


def _facts(out: Any) -> list[Any]:
    """What a replay must reproduce of each result: its layout, dtype and storage bytes."""
    items = out if isinstance(out, (tuple, list)) else (out,)
    return [
        (tuple(o.shape), o.stride(), o.storage_offset(), o.dtype, o.untyped_storage().nbytes())
        if isinstance(o, _Tensor)
        else o
        for o in items
    ]


class GradReplay(TorchDispatchMode):
    """Replays aten ops below autograd (module docstring); one per recording."""

    def __init__(self) -> None:
        super().__init__()
        #: (aten op, argument metadata) -> template (metacache.py), or MISS
        self.cache: dict[Any, Any] = {}
        self.hits = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        key = key_of(func, args, kwargs, below_autograd=True)
        if key is None:
            return func(*args, **kwargs)
        template = self.cache.get(key)
        if template is MISS:
            return func(*args, **kwargs)
        ins = _tensors(args, kwargs)
        if template is not None:
            self.hits += 1
            return replay(template, ins)
        layouts = [_layout(t) for t in ins]
        before = [version(t) for t in ins]
        out = func(*args, **kwargs)
        template = MISS
        if all(_layout(t) == was for t, was in zip(ins, layouts)):  # else it changed an argument's layout
            template = template_of(out, ins, before, flat_args(args, kwargs), below_autograd=True)
        if template is not MISS and _facts(replay(template, ins)) != _facts(out):
            template = MISS  # e.g. a result whose storage is larger than its extent (saved bytes)
        self.cache[key] = template
        return out


def grad_replay(cache: dict[Any, Any]) -> GradReplay | None:
    """The recording's ``GradReplay`` (kept in its meta cache), or None where it must not be
    used: grad off (nothing to do below autograd that the replay above does not) or
    another dispatch mode on the stack."""
    if not torch.is_grad_enabled() or _modes_on_stack():
        return None
    mode = cache.get(GRAD_REPLAY)
    if mode is None:
        mode = cache[GRAD_REPLAY] = GradReplay()
    return mode

"""The caller's tensors that ours stand for (one collaborator of the session), and what
puts them back where the forward left ours.

A RecorderTensor made for a tensor the caller holds (an input, or a parameter, buffer or
input that an op or call returned unchanged, as ``x.to(x.dtype)``) *stands for* it.  When
the root call ends, no RecorderTensor may be left anywhere the caller can reach
(``strip_escaped``): where one stands for a tensor of the caller's, that very object is put
back, as the forward without us would leave it there; else one plain tensor sharing its
storage, the same object wherever the same one of ours was left.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .optable import MODULE_ATTRS
from .tensor import RecorderTensor, alias_as
from .tree import ATOM_TYPES, strip_in_place

_RT = RecorderTensor
_Tensor = torch.Tensor


def _same_geometry(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``a`` and ``b`` (aliases) have the same shape, strides and offset.  Tensors without
    strides (sparse, nested: their ``stride()`` or even ``shape`` raises) have no view
    geometry that an op could have changed without making a new tensor: same layout is
    enough."""
    if a.layout != b.layout or a.is_nested != b.is_nested:
        return False
    if a.layout != torch.strided or a.is_nested:
        return True
    return a.shape == b.shape and a.stride() == b.stride() and a.storage_offset() == b.storage_offset()


class Originals:
    """Which of our tensors stand for which of the caller's, in one recording."""

    def __init__(self) -> None:
        #: RecorderTensors standing for a tensor the caller holds: id -> (ours, theirs)
        self._pairs: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        #: the plain tensor made for each of ours left where the caller can see it (theirs)
        self.plain_of: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def stands_for(self, ours: torch.Tensor, theirs: torch.Tensor) -> torch.Tensor:
        """Note that ``ours`` stands for the caller's ``theirs`` (or for the tensor that
        ``theirs``, one of ours, stands for); returns ``ours``."""
        if type(theirs) is RecorderTensor:
            entry = self._pairs.get(id(theirs))
            if entry is None or entry[0] is not theirs:
                return ours
            theirs = entry[1]
        if ours is not theirs:
            self._pairs[id(ours)] = (ours, theirs)
        return ours

    def theirs(self, t: torch.Tensor) -> torch.Tensor:
        """The caller's tensor for one of ours, ``t``, if ``t`` stands for one and still has
        its shape, strides and offset; else a plain tensor sharing ``t``'s storage, the same
        object for every place ``t`` is left in (returned twice, or returned and stored on
        the model: one object there without recording, so one object here too)."""
        made = self.plain_of.get(id(t))
        if made is not None and made[0] is t:
            return made[1]
        entry = self._pairs.get(id(t))
        if entry is not None and entry[0] is t:
            theirs = entry[1]
            if theirs.dtype == t.dtype and _same_geometry(theirs, t):
                return theirs
        plain = alias_as(t, torch.Tensor)
        self.plain_of[id(t)] = (t, plain)  # holds t: its id stays its own until cleared
        return plain

    def close(self) -> None:
        """The recording ended: drop every tensor held (idempotent)."""
        self._pairs.clear()
        self.plain_of.clear()


def strip_escaped(
    module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], plain: Callable[[torch.Tensor], torch.Tensor]
) -> None:
    """No RecorderTensor may outlive the recording: not in a cache object the caller
    passed in and the model updated, nor in an attribute the forward stored on a module:
    each is replaced by ``plain(it)``."""

    def is_ours(t: Any) -> bool:
        return type(t) is _RT

    strip_in_place((args, kwargs), is_ours, plain)
    seen: set[int] = set()
    stack = [module]
    while stack:  # module.modules(), without its generator per level
        m = stack.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        stack.extend([c for c in m._modules.values() if c is not None])
        for k, b in m._buffers.items():  # assigned in forward (``self.buf = self.buf.to(...)``)
            if type(b) is _RT:
                m._buffers[k] = plain(b)
        for p in m._parameters.values():  # made in forward (``self.w = nn.Parameter(x)``)
            if type(p) is _RT:  # (a leaf: torch allows no other) one object, as without us
                p.__class__ = nn.Parameter
                for attr in ("_tv_node", "_tv_ver", "_tv_tok"):
                    p.__dict__.pop(attr, None)
        d = m.__dict__
        for k in d.keys() - MODULE_ATTRS:  # only what the model itself stored
            v = d[k]
            t = type(v)
            if t in ATOM_TYPES:
                continue
            if t is _RT:
                d[k] = plain(v)
            elif t is tuple and all(type(x) in ATOM_TYPES for x in v):
                continue  # kernel_size=(3, 3) and the like: nothing to look into
            elif isinstance(v, (_Tensor, list, tuple, dict)):
                d[k] = strip_in_place(v, is_ours, plain, objects=False)

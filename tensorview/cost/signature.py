"""Op signatures: what decides the aten ops a torch function runs and the inputs of their
FLOP formulas.  The cost probe (probe.py) runs an op whose signature it has seen before in
the recording without the FLOP counter and gives it the cost measured then."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from ..recording.metacache import _ATOMS, describe

__all__ = ["op_signature"]

_Tensor = torch.Tensor
_functorch_active = torch._C._are_functorch_transforms_active
_grad_enabled, _inference_mode, _autocast = (
    torch.is_grad_enabled,
    torch.is_inference_mode_enabled,
    torch.is_autocast_enabled,
)
_ATOM_TYPES = frozenset(_ATOMS)
#: type -> whether it is a tensor type (learnt on use: the recorder's subclass, Parameter...)
_TENSOR_TYPE: dict[type, bool] = {}


def _tensor(a: _Tensor, parts: list[Any]) -> bool:
    """A tensor's shape, strides, dtype, device, layout and grad flag; a meta tensor is not
    described (on meta the counter replays aten ops: running them costs more)."""
    if a.is_meta:
        return False
    parts += (a.shape, a.stride(), a.dtype, a.device, a.layout, a.requires_grad)
    return True


def _kept(tensors: list[_Tensor]) -> Callable[[_Tensor, list[Any]], bool]:
    """``_tensor`` that also appends the tensor to ``tensors``."""

    def described(a: _Tensor, parts: list[Any]) -> bool:
        if _tensor(a, parts):
            tensors.append(a)
            return True
        return False

    return described


def op_signature(
    func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any] | None, tensors: list[_Tensor] | None = None
) -> tuple[Any, ...] | None:
    """What decides the aten ops a torch function runs and their FLOP formulas' inputs:
    the function, the metadata of its tensors (shape, strides, dtype, device, layout,
    whether they need grad), its plain values, grad, inference and autocast modes; None
    where something else may (other objects, meta tensors, functorch transforms).  The
    tensors met are appended to ``tensors`` where given, in the order described."""
    if _functorch_active():
        return None
    parts: list[Any] = [func, _grad_enabled(), _inference_mode(), _autocast()]
    for a in args:
        ta = type(a)
        is_tensor = _TENSOR_TYPE.get(ta)
        if is_tensor is None:
            is_tensor = _TENSOR_TYPE[ta] = issubclass(ta, _Tensor)
        if is_tensor:  # (the common case, written out)
            if a.is_meta:
                return None
            parts += (a.shape, a.stride(), a.dtype, a.device, a.layout, a.requires_grad)
            if tensors is not None:
                tensors.append(a)
        elif ta in _ATOM_TYPES:  # (a plain value, as ``describe`` puts it)
            parts.append((ta, a))
        elif not describe(a, parts, 0, _tensor if tensors is None else _kept(tensors)):
            return None
    if kwargs:
        for k, v in kwargs.items():
            parts.append(k)
            tv = type(v)
            if tv in _ATOM_TYPES:
                parts.append((tv, v))
            elif not describe(v, parts, 0, _tensor if tensors is None else _kept(tensors)):
                return None
    return tuple(parts)

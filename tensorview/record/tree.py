"""Map a function over every tensor in a nested Python value, rebuilding containers only
where something changed (tensor, list, tuple, namedtuple, structseq, dict and its
subclasses such as Hugging Face ``ModelOutput``, dataclass instances)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch

_Tensor = torch.Tensor
_MAX_DEPTH = 32


def map_tensors(obj: Any, fn: Callable[..., torch.Tensor], *, with_path: bool = False) -> Any:
    """Return ``obj`` with each tensor ``t`` replaced by ``fn(t)`` (or ``fn(t, path)`` with
    ``with_path``, where path is ``"0_key"``-style).  Unchanged containers are returned as
    the same object, so the caller's values are never rebuilt or altered needlessly."""
    return _map(obj, fn, with_path, "", 0)


def _map(obj: Any, fn: Callable[..., Any], with_path: bool, path: str, depth: int) -> Any:
    if isinstance(obj, _Tensor):
        return fn(obj, path) if with_path else fn(obj)
    if depth > _MAX_DEPTH or obj is None or isinstance(obj, (str, bytes, int, float, bool)):
        return obj
    t = type(obj)
    sep = "_" if path else ""
    if t is list or t is tuple or isinstance(obj, (list, tuple)):
        keys = getattr(obj, "_fields", None) or range(len(obj))
        items = [_map(v, fn, with_path, f"{path}{sep}{k}", depth + 1) for k, v in zip(keys, obj)]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        if t is list or t is tuple:
            return t(items)
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
            return t(*items)
        try:
            return t(items)  # structseq (torch.return_types) and list/tuple subclasses
        except TypeError:
            return t(*items)
    if isinstance(obj, dict):
        new = {k: _map(v, fn, with_path, f"{path}{sep}{k}", depth + 1) for k, v in obj.items()}
        if all(new[k] is v for k, v in obj.items()):
            return obj
        if t is dict:
            return new
        try:
            out = t(**new) if dataclasses.is_dataclass(obj) else t(new)
        except TypeError:
            out = t(new)
        return out
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            nv = _map(v, fn, with_path, f"{path}{sep}{f.name}", depth + 1)
            if nv is not v:
                changes[f.name] = nv
        if not changes:
            return obj
        try:
            return dataclasses.replace(obj, **changes)
        except (TypeError, ValueError):
            import copy

            new_obj = copy.copy(obj)
            for k, v in changes.items():
                object.__setattr__(new_obj, k, v)
            return new_obj
    return obj

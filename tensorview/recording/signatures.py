"""The signatures of the forwards recorded, kept (``inspect.signature`` is slow behind decorators)."""

from __future__ import annotations

import inspect
import types
import weakref
from typing import Any

#: ``inspect.signature`` of the forwards recorded, by function, held weakly (a forward's
#: closure may hold anything); ~50 us each for a forward behind decorators, as
#: transformers' are: once per function, not once per recording.  [bound methods, others]
_SIGNATURES: tuple[weakref.WeakKeyDictionary[Any, inspect.Signature], ...] = (
    weakref.WeakKeyDictionary(),
    weakref.WeakKeyDictionary(),
)


def forward_signature(forward: Any) -> inspect.Signature:
    """``inspect.signature(forward)``, kept per function (a bound method's signature is its
    function's without the first parameter, whatever object it is bound to)."""
    bound = isinstance(forward, types.MethodType)
    table, key = _SIGNATURES[0 if bound else 1], forward.__func__ if bound else forward
    try:
        sig = table.get(key)
    except TypeError:  # not weakly referable, or unhashable
        return inspect.signature(forward)
    if sig is None:
        sig = table[key] = inspect.signature(forward)
    return sig


__all__ = ["forward_signature"]

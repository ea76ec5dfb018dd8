"""torchinfo's ``summary`` arguments that change what runs, not what the table shows
(:mod:`.columns` has those): ``batch_dim``, ``verbose``'s default, ``cache_forward_pass``.
docs/migrating-torchinfo.md lists every argument and its meaning here.
"""

from __future__ import annotations

import sys
from typing import Any

from ..errors import InvalidInputError, InvalidTypeError

__all__ = ["check_cache", "default_verbose", "with_batch_dim"]


def default_verbose(verbose: Any) -> Any:
    """torchinfo's default: 1 (print the table) in a script, 0 in an interactive session
    (a REPL or a notebook shows the returned summary anyway)."""
    if verbose is not None:
        return verbose
    return 0 if getattr(sys, "ps1", None) or "IPython" in sys.modules and _in_ipython() else 1


def _in_ipython() -> bool:
    get = getattr(sys.modules["IPython"], "get_ipython", None)
    return get is not None and get() is not None


def check_cache(cache_forward_pass: Any) -> None:
    """torchinfo's ``cache_forward_pass`` is accepted (True, False, None) and changes
    nothing: every call records anew; ``summary.table(...)`` re-renders a summary without
    running the model again."""
    if cache_forward_pass is not None and not isinstance(cache_forward_pass, bool):
        raise InvalidTypeError(f"cache_forward_pass must be True, False or None, got {cache_forward_pass!r:.80}")


def _is_shape(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and all(isinstance(d, int) and not isinstance(d, bool) for d in value)


def with_batch_dim(input_size: Any, batch_dim: Any) -> Any:
    """``input_size`` with a dimension of 1 inserted at ``batch_dim`` in each shape
    (torchinfo: shapes given without their batch dimension run with a batch of 1)."""
    if batch_dim is None:
        return input_size
    if isinstance(batch_dim, bool) or not isinstance(batch_dim, int):
        raise InvalidTypeError(f"batch_dim must be an int or None, got {batch_dim!r:.80}")
    if input_size is None:
        return None  # input_data holds its batch already
    if _is_shape(input_size):
        return _insert(tuple(input_size), batch_dim)
    if isinstance(input_size, (tuple, list)) and all(_is_shape(s) for s in input_size):
        return [_insert(tuple(s), batch_dim) for s in input_size]
    return input_size  # not shapes: make_inputs says what is wrong


def _insert(shape: tuple[int, ...], batch_dim: int) -> tuple[int, ...]:
    n = len(shape) + 1
    if not -n <= batch_dim < n:
        raise InvalidInputError(f"batch_dim {batch_dim} is out of range for input shape {shape} (-{n}..{n - 1})")
    at = batch_dim % n
    return (*shape[:at], 1, *shape[at:])

"""torchinfo's ``summary`` arguments that change what runs, not what the table shows
(:mod:`.columns` has those): ``batch_dim``, ``verbose``'s default, ``cache_forward_pass``.
docs/migrating-torchinfo.md lists every argument and its meaning here.
"""

from __future__ import annotations

import copy
import sys
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy
from torch.utils._pytree import tree_map

from ..errors import InputConflictError, InvalidInputError, InvalidTypeError
from ..recording.fake import is_fake
from ..recording.inputs import make_inputs, to_device
from ..recording.placement import as_device, model_device

__all__ = [
    "check_cache",
    "check_inputs",
    "default_verbose",
    "has_lazy",
    "input_sizes",
    "materialised",
    "with_batch_dim",
]


def check_inputs(input_size: Any, input_data: Any, dtypes: Any) -> Any:
    """torchinfo's input rules, before anything runs: ``input_size`` and ``input_data``
    together are an :class:`InputConflictError` (a ``RuntimeError`` as torchinfo's), an
    ``input_size`` that is no sequence a ``TypeError``; returns ``dtypes`` with
    torchinfo's tensor types (``torch.LongTensor``) as dtypes."""
    if input_size is not None and input_data is not None:
        raise InputConflictError("pass one of input_size or input_data, not both")
    if input_size is not None and not isinstance(input_size, (tuple, list, torch.Tensor)):
        raise InvalidTypeError(
            f"input_size must be a shape such as (1, 3, 224, 224) or a list of shapes, got {input_size!r:.80}"
        )
    if isinstance(dtypes, (list, tuple)):
        return [_dtype(d) for d in dtypes]
    return _dtype(dtypes)


def _dtype(d: Any) -> Any:
    dtype = getattr(d, "dtype", None) if isinstance(d, type) else None  # torch.LongTensor's is torch.int64
    return dtype if isinstance(dtype, torch.dtype) else d


def input_sizes(input_size: Any, input_data: Any) -> Any:
    """torchinfo's ``input_size`` of a summary: the shapes as given (a list of them), or
    the sizes of the tensors in ``input_data`` in its structure (a ``torch.Size`` for a
    tensor)."""
    if input_data is not None:
        return tree_map(lambda v: v.size() if isinstance(v, torch.Tensor) else v, input_data)
    if input_size is None:
        return []
    if isinstance(input_size, list) and input_size and isinstance(input_size[0], int):
        return [tuple(input_size)]
    if isinstance(input_size, list):
        return input_size
    if input_size and isinstance(input_size[0], (tuple, list)):
        return list(input_size)
    return [input_size]


def has_lazy(model: nn.Module) -> bool:
    """Whether ``model`` has parameters or buffers of lazy modules not materialised yet."""
    return bool(_lazy(model))


def _lazy(model: nn.Module) -> list[str]:
    return [
        p or "(root)"
        for p, m in model.named_modules()
        if any(is_lazy(t) for t in (*m._parameters.values(), *m._buffers.values()) if t is not None)
    ]


def _fresh(t: torch.Tensor) -> Any:
    """A new uninitialised parameter or buffer like ``t``."""
    make: Any = type(t)
    return make(requires_grad=t.requires_grad, device=t.device, dtype=t.dtype)


def materialised(model: nn.Module, inputs: tuple[Any, Any, Any, dict[str, Any]] | None, device: Any) -> nn.Module:
    """``model``, or where it has lazy modules (``nn.LazyLinear``: parameters without a
    shape until the first forward) a copy materialised by one forward on ``device`` (the
    caller's model stays lazy).  ``inputs``: ``(input_size, input_data, dtypes,
    forward_kwargs)``, None for the parameter table (nothing runs).  On meta, lazy
    modules are an error saying what to do; so is a TorchScript module on meta (its
    compiled code cannot be moved there)."""
    fake = is_fake(device)
    dev = None if fake else as_device(device)
    on_meta = fake or (dev if dev is not None else model_device(model)).type == "meta"
    if on_meta and any(isinstance(m, torch.jit.ScriptModule) for m in model.modules()):
        raise InvalidInputError(
            f"{type(model).__name__} is (or holds) a TorchScript module, whose compiled code cannot be moved "
            "to the meta device: pass device='cpu' (or the model's device) to record it there, or summarise "
            "the Python module before torch.jit.script"
        )
    lazy = _lazy(model)
    if not lazy:
        return model
    where = f"{type(model).__name__} has lazy modules ({', '.join(lazy[:3])}{', ...' if len(lazy) > 3 else ''})"
    if inputs is None:
        return model  # the parameter table counts them as 0 and says so
    if on_meta:
        raise InvalidInputError(
            f"{where} whose parameters get their shapes from a first forward, which cannot run on "
            "the meta device (it has no values to initialise them with): pass device='cpu', where "
            "tv.summary materialises a copy by one forward (your model stays lazy), or run model(x) once first"
        )
    # an uninitialised buffer cannot be deep-copied: each copy gets a fresh one
    memo: dict[int, Any] = {
        id(t): _fresh(t)
        for m in model.modules()
        for t in (*m._parameters.values(), *m._buffers.values())
        if t is not None and is_lazy(t)
    }
    clone = copy.deepcopy(model, memo)
    input_size, input_data, dtypes, forward_kwargs = inputs
    target = dev if dev is not None else model_device(model)
    args, kwargs = make_inputs(input_size, input_data, dtypes, target)
    kwargs.update({k: to_device(v, target, f"forward keyword argument {k!r}") for k, v in forward_kwargs.items()})
    with torch.no_grad():
        clone(*args, **kwargs)
    return clone


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

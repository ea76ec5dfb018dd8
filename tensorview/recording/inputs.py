"""Model inputs and model placement for ``draw_graph``: building tensors from shapes,
moving given data to the recording device, and running a model on another device
(``meta``) without touching the caller's model."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from ..errors import InvalidInputError, InvalidTypeError
from .optable import MODULE_ATTRS
from .tree import map_tensors, strip_in_place


def _is_shape(x: Any) -> bool:
    return isinstance(x, (tuple, list, torch.Size)) and all(isinstance(d, int) and not isinstance(d, bool) for d in x)


def make_inputs(
    input_size: Any, input_data: Any, dtypes: Any, device: torch.device | None
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Positional and keyword arguments for the forward call."""
    if (input_size is None) == (input_data is None):
        got = "both" if input_size is not None else "neither"
        raise InvalidInputError(f"pass exactly one of input_size or input_data (got {got})")
    if input_data is not None:
        if input_data is not None and device is not None:
            input_data = map_tensors(input_data, lambda t: t.to(device))
        if isinstance(input_data, torch.Tensor):
            return (input_data,), {}
        if type(input_data) in (tuple, list):
            return tuple(input_data), {}
        if type(input_data) is dict:
            bad = [k for k in input_data if not isinstance(k, str)]
            if bad:
                raise InvalidInputError(f"input_data dict keys must be argument names (str), got {bad[0]!r}")
            return (), dict(input_data)
        return (input_data,), {}
    shapes = _shapes(input_size)
    dts = _dtypes(dtypes, len(shapes))
    return tuple(_tensor(s, dt, device) for s, dt in zip(shapes, dts)), {}


def _shapes(input_size: Any) -> list[tuple[int, ...]]:
    if _is_shape(input_size):
        shapes = [tuple(input_size)]
    elif isinstance(input_size, (tuple, list)) and input_size and all(_is_shape(s) for s in input_size):
        shapes = [tuple(s) for s in input_size]
    else:
        raise InvalidInputError(
            f"bad input_size {input_size!r}: expected a shape such as (1, 3, 224, 224) "
            "or a list of shapes such as [(1, 16), (1, 16)]"
        )
    for s in shapes:
        if any(d < 0 for d in s):
            raise InvalidInputError(f"bad input_size: shape {s!r} has a negative dimension")
    return shapes


def _dtypes(dtypes: Any, n: int) -> list[torch.dtype]:
    if dtypes is None:
        return [torch.float32] * n
    if isinstance(dtypes, torch.dtype):
        return [dtypes] * n
    if not isinstance(dtypes, (list, tuple)) or not all(isinstance(d, torch.dtype) for d in dtypes):
        raise InvalidTypeError(f"dtypes must be a torch.dtype or a list of them, got {dtypes!r}")
    if len(dtypes) != n:
        raise InvalidInputError(f"got {len(dtypes)} dtypes {list(dtypes)!r} for {n} input shape(s)")
    return list(dtypes)


def _tensor(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | None) -> torch.Tensor:
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, dtype=dtype, device=device)
    return torch.zeros(shape, dtype=dtype, device=device)  # token ids, masks: always in range


def model_device(model: nn.Module) -> torch.device:
    for t in _tensors(model):
        return t.device
    return torch.device("cpu")


@contextlib.contextmanager
def placed(model: nn.Module, device: torch.device | None) -> Iterator[nn.Module]:
    """The model to run on ``device``: the model itself when it already lives there,
    else a copy whose parameters and buffers are on ``device`` (on ``meta`` the copy
    costs no memory).  The caller's model is never moved or modified."""
    if device is None or all(t.device == device for t in _tensors(model)):
        yield model
        return
    memo: dict[int, Any] = {}
    for t in _tensors(model):
        if id(t) in memo:
            continue
        moved = t.detach().to(device)
        memo[id(t)] = nn.Parameter(moved, requires_grad=t.requires_grad) if isinstance(t, nn.Parameter) else moved
    try:
        clone = copy.deepcopy(model, memo)
    except Exception as e:  # noqa: BLE001 - any failure means we cannot copy safely
        raise InvalidInputError(
            f"cannot record {type(model).__name__} on {device}: the model could not be copied "
            f"({type(e).__name__}: {e}); move the model to {device} yourself, or pass device=None"
        ) from e
    # plain tensor attributes (not parameters or buffers) were deep-copied where they
    # were; on the copy, move them too, so `x * self.mask` works on the device
    for m in clone.modules():
        d = m.__dict__
        for k in d.keys() - MODULE_ATTRS:
            if isinstance(d[k], (torch.Tensor, list, tuple, dict)):
                d[k] = strip_in_place(d[k], lambda t: t.device != device, lambda t: t.to(device), objects=False)
    yield clone


def _tensors(model: nn.Module) -> Iterator[torch.Tensor]:
    yield from model.parameters()
    yield from model.buffers()


@contextlib.contextmanager
def training_mode(model: nn.Module, mode: str) -> Iterator[None]:
    """Set train/eval for the forward and put every module's flag back afterwards."""
    flags = [(m, m.training) for m in model.modules()]
    try:
        if mode != "same":
            model.train(mode == "train")
        yield
    finally:
        for m, f in flags:
            m.training = f


def as_device(device: Any) -> torch.device | None:
    if device is None:
        return None
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise InvalidInputError(f"bad device {device!r}: {e}") from e


__all__ = ["as_device", "make_inputs", "model_device", "placed", "training_mode"]

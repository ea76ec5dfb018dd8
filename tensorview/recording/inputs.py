"""Model inputs for ``draw_graph``: checking what the user passed, building tensors from
shapes and moving given data to the recording device (placement.py puts the model there)."""

from __future__ import annotations

import contextlib
import difflib
import operator
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import torch
from torch import nn

from ..errors import (
    InputChoiceError,
    InputSizeTypeError,
    InvalidInputError,
    InvalidTypeError,
    RecordingError,
    add_hint,
    describe,
    shown,
)
from .signatures import forward_signature
from .tree import map_tensors
from .values import keep_values

#: the largest size of one dimension torch can hold
MAX_DIM = 2**63 - 1
#: dtypes ``input_size`` can make tensors of besides floating and complex ones (zeros)
INT_DTYPES = (
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint16,
    torch.uint32,
    torch.uint64,
)


def summary(value: Any) -> str:
    """A short description of ``value`` for error messages: tensors by shape, dtype and
    device (never their values), anything else as a repr cut at 80 characters."""
    if isinstance(value, torch.Tensor):
        return f"tensor(shape={tuple(value.shape)}, dtype={value.dtype}, device={value.device})"
    return shown(value)  # (a broken __repr__ never hides the real error)


def check_model(model: Any, who: str) -> None:
    """``model`` must be an ``nn.Module`` instance; a module class gets a hint."""
    if isinstance(model, nn.Module):
        return
    if isinstance(model, type) and issubclass(model, nn.Module):
        cls: type = model
        name = f"nn.{cls.__name__}" if getattr(nn, cls.__name__, None) is cls else cls.__qualname__
        raise InvalidTypeError(
            f"{who} needs a torch.nn.Module instance, got the class {name}: pass an instance, e.g. {name}(...)"
        )
    raise InvalidTypeError(f"{who} needs a torch.nn.Module, got {type(model).__name__}: {summary(model)}")


def _dim(d: Any) -> int | None:
    """``d`` as a dimension size (Python and numpy integers), else ``None``."""
    if isinstance(d, (bool, torch.Tensor)):
        return None
    try:
        return operator.index(d)
    except TypeError:
        return None


def _is_shape(x: Any) -> bool:
    return isinstance(x, (tuple, list, torch.Size)) and all(_dim(d) is not None for d in x)


def _has_tensor(x: Any) -> bool:
    found: list[bool] = []

    def see(t: torch.Tensor) -> torch.Tensor:
        found.append(True)
        return t

    map_tensors(x, see, objects=see)  # also a tensor held by an object (an ImageList)
    return bool(found)


def to_device(value: Any, device: torch.device | None, what: str) -> Any:
    """``value`` with every tensor moved to ``device`` (the caller's tensors are not
    changed); a tensor on ``meta`` holds no data, so it cannot go anywhere else."""
    if device is None:
        return value

    def move(t: torch.Tensor) -> torch.Tensor:
        if t.device.type == "meta" and device.type != "meta":
            raise InvalidInputError(
                f"{what} {summary(t)} is on the meta device and holds no data, so it cannot be "
                f"moved to {device} (the recording device); pass device='meta' to record on "
                f"meta (your model is copied there, not moved), or give inputs with data"
            )
        return keep_values(t.to(device), t)  # on meta, small tensors keep their values (values.py)

    return map_tensors(value, move)


def check_forward_kwargs(model: Any, forward_kwargs: Iterable[str], options: Iterable[str]) -> None:
    """A keyword for ``forward`` that ``forward`` does not declare by name (it would go
    into ``**kwargs`` or fail) and that is close to one of ``options`` is a misspelled
    option (``dept=2``): an ``InvalidInputError`` that says which option was meant.
    ``model`` may have no ``forward`` (an ``ExportedProgram``): then it declares none."""
    options = list(options)
    forward = getattr(model, "forward", None)
    try:
        params = forward_signature(forward).parameters if forward is not None else {}
    except (TypeError, ValueError):
        return
    declared = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for key in forward_kwargs:
        if key in declared:
            continue
        close = difflib.get_close_matches(key, options, n=1, cutoff=0.8)
        if close:
            where = "it would go into forward's **kwargs" if var_kw else "forward takes no such keyword"
            first = declared[0] if declared else "x"
            raise InvalidInputError(
                f"unknown draw_graph option {key!r}: did you mean {close[0]}? ({type(model).__name__}.forward "
                f"does not declare {key!r}: {where}); to pass {key!r} to forward anyway, give all inputs "
                f"as input_data, a dict of keyword arguments: input_data={{{first!r}: ..., {key!r}: ...}}"
            )


def make_inputs(
    input_size: Any, input_data: Any, dtypes: Any, device: torch.device | None
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Positional and keyword arguments for the forward call.  Tensors given in the
    ``input_size`` place (torchview's ``draw_graph(model, x)``) are ``input_data``."""
    if input_data is None and input_size is not None and _has_tensor(input_size):
        input_size, input_data = None, input_size
    if (input_size is None) == (input_data is None):
        got = "both" if input_size is not None else "neither"
        raise InputChoiceError(f"pass exactly one of input_size or input_data (got {got})")
    if input_data is not None:
        if dtypes is not None:
            raise InvalidInputError(
                f"dtypes={summary(dtypes)} applies to input_size only; with input_data, give "
                "tensors of the dtypes you want (e.g. input_data=x.to(torch.float64))"
            )
        args, kwargs = split_input_data(input_data)
        return to_device(args, device, "input_data"), to_device(kwargs, device, "input_data")
    shapes = _shapes(input_size)
    dts = _dtypes(dtypes, len(shapes))
    return tuple(_tensor(s, dt, device) for s, dt in zip(shapes, dts)), {}


def split_input_data(input_data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``input_data`` as the positional and keyword arguments of ``forward``, by torchview's
    rules (its ``forward_prop``): any ``Mapping`` (``dict``, ``OrderedDict``, ``UserDict``,
    Hugging Face ``BatchEncoding``/``BatchFeature``/``ModelOutput``) gives keyword arguments;
    any ``list`` or ``tuple``, subclasses included (a namedtuple, ``torch.Size``), gives
    positional arguments, one per item; anything else (a tensor, a dataclass, another
    object) is the one positional argument (where torchview raises ``Unknown input type``)."""
    if isinstance(input_data, torch.Tensor):
        return (input_data,), {}
    if isinstance(input_data, (tuple, list)):
        return tuple(input_data), {}
    if isinstance(input_data, Mapping):
        bad = [k for k in input_data if not isinstance(k, str)]
        if bad:
            raise InvalidInputError(
                f"input_data {type(input_data).__name__} keys must be argument names (str), got {summary(bad[0])}"
            )
        return (), {k: input_data[k] for k in input_data}
    return (input_data,), {}


def _shapes(input_size: Any) -> list[tuple[int, ...]]:
    if _is_shape(input_size):
        shapes = [tuple(input_size)]
    elif isinstance(input_size, (tuple, list)) and input_size and all(_is_shape(s) for s in input_size):
        shapes = list(input_size)
    else:
        kind = InvalidInputError if isinstance(input_size, (tuple, list)) else InputSizeTypeError
        raise kind(
            f"bad input_size {summary(input_size)}: expected a shape such as (1, 3, 224, 224) "
            "or a list of shapes such as [(1, 16), (1, 16)]"
        )
    shapes = [tuple(operator.index(d) for d in s) for s in shapes]  # numpy integers become ints
    for s in shapes:
        if any(d < 0 for d in s):
            raise InvalidInputError(f"bad input_size: shape {summary(s)} has a negative dimension")
        if any(d > MAX_DIM for d in s):
            raise InvalidInputError(
                f"bad input_size: shape {summary(s)} has a dimension over 2**63 - 1 "
                f"(the largest torch can hold); dimensions must be in 0..{MAX_DIM}"
            )
    return shapes


def _dtypes(dtypes: Any, n: int) -> list[torch.dtype]:
    if dtypes is None:  # torch.set_default_dtype(torch.float64) is honoured
        return [torch.get_default_dtype()] * n
    if isinstance(dtypes, torch.dtype):
        return [dtypes] * n
    if not isinstance(dtypes, (list, tuple)) or not all(isinstance(d, torch.dtype) for d in dtypes):
        raise InvalidTypeError(f"dtypes must be a torch.dtype or a list of them, got {summary(dtypes)}")
    if len(dtypes) != n:
        raise InvalidInputError(f"got {len(dtypes)} dtypes {summary(list(dtypes))} for {n} input shape(s)")
    return list(dtypes)


#: an op that takes integer indices refused floating ones (embedding, gather, index_select,
#: one_hot, indexing with a tensor): the words its message uses
_INDEX_WORDS = re.compile(r"\b(indices|index)\b", re.I)
_INT_WORDS = re.compile(r"\b(long|int|int32|int64|LongTensor)\b", re.I)


@contextlib.contextmanager
def dtypes_hint(input_size: Any, input_data: Any, dtypes: Any) -> Iterator[None]:
    """Inside it, a ``RecordingError`` of an op that wanted integer indices where
    ``input_size`` made floating tensors (``nn.Embedding`` first) says to pass
    ``dtypes=[torch.long]``."""
    try:
        yield
    except RecordingError as e:
        if input_data is not None or input_size is None or _has_tensor(input_size):
            raise
        text = describe(e.__cause__ or e)  # (never raises: a __str__ may)
        dts = _dtypes(dtypes, len(_shapes(input_size)))
        floats = sorted({str(d) for d in dts if d.is_floating_point or d.is_complex})
        if floats and _INDEX_WORDS.search(text) and _INT_WORDS.search(text):
            made = "the default dtype, torch.get_default_dtype()" if dtypes is None else "dtypes"
            add_hint(
                e,
                f"input_size made {', '.join(floats)} tensors ({made}), but an op here takes "
                "integer indices (token ids for nn.Embedding): pass dtypes=[torch.long], one dtype "
                "per input shape (e.g. dtypes=[torch.long, torch.float32])",
            )
        raise


def _check_dtype(dtype: torch.dtype) -> None:
    if not (dtype.is_floating_point or dtype.is_complex or dtype in INT_DTYPES):
        raise InvalidInputError(
            f"dtypes: input_size cannot make a {dtype} tensor (it makes random floating or "
            "complex tensors and zero integer or bool tensors); use a floating, complex, "
            "integer or bool dtype, or pass the tensor itself as input_data"
        )


def _tensor(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | None) -> torch.Tensor:
    _check_dtype(dtype)
    try:
        if dtype.is_floating_point or dtype.is_complex:
            return torch.randn(shape, dtype=dtype, device=device)
        return torch.zeros(shape, dtype=dtype, device=device)  # token ids, masks: always in range
    except (RuntimeError, NotImplementedError) as e:  # too large, a dtype the device cannot make
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InvalidInputError(
            f"cannot make an input tensor of shape {summary(shape)} and dtype {dtype} on "
            f"{device or 'cpu'}: {first[:200]}; use device='meta' to record without memory, "
            "or pass the tensor as input_data"
        ) from e


__all__ = [
    "check_forward_kwargs",
    "check_model",
    "dtypes_hint",
    "make_inputs",
    "split_input_data",
    "summary",
    "to_device",
]

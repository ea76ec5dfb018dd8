"""Known values on meta: small tensors computed from inputs that came with data.

``draw_graph(model, input_data=tokenizer(...), device="meta")`` moves the caller's CPU
tensors to meta, where they hold no values; but a forward may ask for values: Hugging Face
mask helpers ask ``attention_mask.all()`` to skip the mask, which fails on meta
("Tensor.item() cannot be called on meta tensors").  The values are known, though: the
caller gave them.  So each small input moved to meta keeps its CPU values
(``keep_values``); an op whose tensor arguments all have values is also run on those values
on the CPU (``follow``: masks, positions, token ids sliced and compared), and a value
query on such a tensor (``bool()``, ``.item()``, ``.tolist()``, ``x in t``) is answered from them
(``answer``).  Values are computed outside any dispatch mode (the cost probe's FLOP
counter does not count them).  Tensors computed from parameters, or from anything without values, have
none, so a query on them fails as before (with the hint to record on the CPU or with
``device="fake"``).  Ops with randomness are never run on values (they would move the
CPU's random state), except the random factories (``torch.rand([])``: layer drop in
training), whose values are drawn from a generator of our own; results over ``LIMIT``
elements are never kept.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import _disable_current_modes as _no_modes

from .names import clean_name
from .optable import QUERIES
from .tensor import RecorderTensor

_Tensor = torch.Tensor
_Disable = torch._C.DisableTorchFunction
_CPU = torch.device("cpu")

#: the most elements of a tensor whose values are kept (masks, ids, positions)
LIMIT = 1 << 16
#: queries that read values (answered from the values kept)
VALUE_QUERIES = frozenset(
    q
    for q in (
        getattr(_Tensor, n, None)
        for n in ("__bool__", "__int__", "__float__", "__index__", "item", "tolist", "__contains__")
    )
    if q is not None and q in QUERIES
) | frozenset(q for q in (getattr(torch, "is_nonzero", None), getattr(_Tensor, "is_nonzero", None)) if q is not None)
#: parts of op names that draw random numbers
_RANDOM = ("rand", "dropout", "bernoulli", "normal", "multinomial", "poisson", "exponential", "uniform", "cauchy")


#: the generator random factories on meta draw their values from (never the CPU's own:
#: recording must not move the caller's random state)
_RNG = torch.Generator().manual_seed(0)


#: the factories of random numbers that take a ``generator`` (``torch.rand([])``: a layer
#: dropped in training with probability ``layerdrop``, as wav2vec2 and M2M100 do)
_RANDOM_FACTORIES = frozenset((torch.rand, torch.randn, torch.randint, torch.randperm))


class _NoValue(Exception):
    pass


def keep_values(moved: torch.Tensor, data: torch.Tensor) -> torch.Tensor:
    """``moved`` (a tensor put on meta for the recording) stands for ``data`` (the caller's,
    with values): keep them when small.  Returns ``moved``."""
    if (
        moved.device.type == "meta"
        and data.device.type == "cpu"
        and data.numel() <= LIMIT
        and data.layout == torch.strided
    ):
        moved._tv_val = data.detach().clone()  # type: ignore[attr-defined]
    return moved


def value_of(t: Any) -> torch.Tensor | None:
    """The values kept for ``t``, if any."""
    d = getattr(t, "__dict__", None)
    return d.get("_tv_val") if d else None


def answer(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Value query ``func`` on ``args[0]``, a tensor with values (``value_of``), answered
    from them (``x in t``: ``x`` too, where it is a tensor with values)."""
    with _Disable(), _no_modes():
        rest = tuple(value_of(a) if isinstance(a, _Tensor) and value_of(a) is not None else a for a in args[1:])
        return func(value_of(args[0]), *rest, **kwargs)


def _sub(x: Any) -> Any:
    if isinstance(x, _Tensor):
        v = value_of(x)
        if v is None:
            raise _NoValue
        return v
    if isinstance(x, torch.device) and x.type == "meta":
        return _CPU
    if type(x) in (list, tuple):
        return type(x)(_sub(y) for y in x)
    if type(x) is dict:
        return {k: _sub(y) for k, y in x.items()}
    return x


def follow(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
    """After op ``func`` ran on meta: its result ``out`` gets values when every tensor
    argument has them; an argument written in place by an op that cannot be followed
    loses its values (they would be stale).  Returns ``out``."""
    name = getattr(func, "__name__", "") or ""
    with _Disable():
        try:
            if not _small(out):
                raise _NoValue
            if any(r in name for r in _RANDOM):
                if func not in _RANDOM_FACTORIES or "generator" in kwargs:
                    raise _NoValue
                kwargs = {**kwargs, "generator": _RNG}  # drawn from our own generator
            vargs = _sub(args)
            vkwargs = _sub(kwargs)
            if vkwargs.get("device") == "meta":
                vkwargs["device"] = _CPU
        except _NoValue:
            if clean_name(name).endswith("_") or name == "__setitem__" or "out" in kwargs:
                for a in args:
                    if isinstance(a, _Tensor) and value_of(a) is not None:
                        del a.__dict__["_tv_val"]
            return out
        try:
            with _no_modes():  # outside the cost probe's counters: not the model's work
                vout = func(*vargs, **vkwargs)
        except Exception:  # noqa: BLE001 - the values are a help, never a new failure
            return out
        if isinstance(out, _Tensor):
            _keep(out, vout)
        elif isinstance(out, (tuple, list)) and isinstance(vout, (tuple, list)) and len(out) == len(vout):
            for o, v in zip(out, vout):
                if isinstance(o, _Tensor):
                    _keep(o, v)
    return out


def _small(out: Any) -> bool:
    """``out`` (an op's result) is tensors of at most ``LIMIT`` elements (checked before
    running the op on values: a big one would take real memory)."""
    if isinstance(out, _Tensor):
        return out.numel() <= LIMIT
    if isinstance(out, (tuple, list)):
        return all(not isinstance(o, _Tensor) or o.numel() <= LIMIT for o in out)
    return True  # no tensor (``__setitem__``)


def _keep(out: torch.Tensor, v: Any) -> None:
    """``out`` (one of ours: never a tensor of the caller's) has the values ``v``."""
    if (
        type(out) is RecorderTensor
        and isinstance(v, _Tensor)
        and v.device.type == "cpu"
        and v.shape == out.shape
        and v.numel() <= LIMIT
    ):
        out._tv_val = v  # type: ignore[attr-defined]


__all__ = ["LIMIT", "VALUE_QUERIES", "answer", "follow", "keep_values", "value_of"]

"""Shape replay for the ``meta`` device.

On ``meta`` an op computes nothing but the metadata of its results, yet torch's meta
kernels are slow (often 100+ µs an op, most of a meta forward).  A model repeats the
same ops on the same shapes again and again (80 identical decoder layers), so the
recorder keeps, per recording, what each (op, argument metadata) produced and replays it:

* a result that is a new tensor is made with ``torch.empty_strided`` (same shape, strides,
  dtype);
* a result that is a view of an argument is made with ``as_strided`` on that argument, so
  it shares the argument's storage and version counter, as the real view would;
* a result that is an argument itself is that argument, with the shape and strides the op
  gave it (an in-place view op: ``unsqueeze_``, ``transpose_``, ``t_``, ``squeeze_``);
* an argument the op mutated gets its version counter bumped as often as the op did.

Anything outside what this can reproduce is simply not cached and runs for real: tensors
not on meta or not strided, complex or quantized dtypes (conjugate/negative bits),
tensors that need grad while grad mode is on, arguments other than plain values (numbers,
strings, dtypes, devices, slices and tuples of them), views that change dtype or alias
something other than an argument, and results other than tensors and plain values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .inference import storage_id
from .optable import bump_version, storage_owner, version

_Tensor = torch.Tensor
_ATOMS = (
    int,
    float,
    bool,
    str,
    type(None),
    type(Ellipsis),
    torch.dtype,
    torch.device,
    torch.memory_format,
    torch.layout,
)
_STRIDED = torch.strided

#: key -> template, or MISS when the op's results cannot be replayed
MISS = object()


def key_of(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *, below_autograd: bool = False
) -> tuple[Any, ...] | None:
    """A hashable description of the call, or None when it must not be cached;
    ``below_autograd``: an aten op seen below autograd (gradreplay.py), where tensors that
    need grad are plain arguments (autograd made its node above)."""
    grad = torch.is_grad_enabled() and not below_autograd
    parts: list[Any] = [func, grad, torch.is_autocast_enabled()]
    tensor = _meta_tensor_in_grad if grad else _meta_tensor
    for a in args:
        if not (tensor(a, parts) if isinstance(a, _Tensor) else describe(a, parts, 0, tensor)):
            return None
    for k, v in kwargs.items():
        parts.append(k)
        if not describe(v, parts, 0, tensor):
            return None
    return tuple(parts)


def describe(a: Any, parts: list[Any], depth: int, tensor: Callable[[Any, list[Any]], bool]) -> bool:
    """Append what describes argument ``a`` to ``parts``, flat: a tensor as ``tensor(a,
    parts)`` does, a plain value its type and value, a slice its parts, a list or tuple (up
    to four deep) its type and length then its items; False when ``a`` cannot be described
    (another object, a tensor ``tensor`` refuses).  Meta replay's keys (``key_of``) and
    the cost probe's op signatures (cost/signature.py) are made by it."""
    if isinstance(a, _Tensor):
        return tensor(a, parts)
    ta = type(a)
    if ta in _ATOMS:
        parts.append((ta, a))
        return True
    if ta is slice:
        parts.append(slice)
        return all(describe(x, parts, depth + 1, tensor) for x in (a.start, a.stop, a.step))
    if (ta is tuple or ta is list or ta is torch.Size) and depth < 4:
        parts.append((ta, len(a)))
        return all(describe(x, parts, depth + 1, tensor) for x in a)
    return False


#: dtype -> whether its tensors can be replayed (not complex, not quantized), learnt on use
_DTYPE_OK: dict[torch.dtype, bool] = {}


def _meta_tensor(a: _Tensor, parts: list[Any], grad: bool = False) -> bool:
    """A tensor of a call meta replay may cache: a strided meta tensor of a plain dtype (not
    one that needs grad while grad is on); its shape, strides, offset and dtype."""
    dt = a.dtype
    ok = _DTYPE_OK.get(dt)
    if ok is None:
        ok = _DTYPE_OK[dt] = not (a.is_complex() or a.is_quantized)
    if not ok or not a.is_meta or a.layout is not _STRIDED:
        return False
    if grad and a.requires_grad:
        return False
    parts.append((a.shape, a.stride(), a.storage_offset(), dt))
    return True


def _meta_tensor_in_grad(a: _Tensor, parts: list[Any]) -> bool:
    return _meta_tensor(a, parts, True)


def template_of(
    out: Any, ins: list[_Tensor], before: list[int], flat: bool = True, *, below_autograd: bool = False
) -> Any:
    """How to replay ``out`` (the op's result) from the arguments ``ins``; MISS if not.
    ``below_autograd``: an aten op's result below autograd, which links views above it, so
    a view is a result sharing an argument's storage (as for inference tensors).

    ``flat``: ``ins`` are all the tensors of the call (none nested deeper than one list);
    only then is a view whose base is none of them known to view a tensor the op made
    internally (``F.linear`` on a 3-D input returns a view of its ``mm`` result), which
    nothing else holds, so it is replayed as a new tensor with the same strides."""
    roots = [storage_owner(t) for t in ins]
    internal: list[Any] = []  # bases of internal views seen, to refuse two sharing one
    after = [version(t) for t in ins]
    bumps = tuple((i, a - v) for i, (a, v) in enumerate(zip(after, before)) if a != v)
    if any(d < 0 for _, d in bumps):
        return MISS
    if isinstance(out, _Tensor):
        one = _one(out, ins, roots, flat, internal, below_autograd)
        return MISS if one is MISS else ("one", one, bumps)
    if type(out) in _ATOMS:
        return ("atom", out, bumps)
    if type(out) in (tuple, list) or type(out).__module__ == "torch.return_types":
        items = []
        for o in out:
            if isinstance(o, _Tensor):
                one = _one(o, ins, roots, flat, internal, below_autograd)
                if one is MISS:
                    return MISS
                items.append(one)
            elif type(o) in _ATOMS:
                items.append(("atom", o))
            else:
                return MISS
        return ("seq", type(out), tuple(items), bumps)
    return MISS


def _one(
    o: _Tensor, ins: list[_Tensor], roots: list[_Tensor], flat: bool, internal: list[Any], below: bool = False
) -> Any:
    if not o.is_meta or o.layout != _STRIDED or o.is_complex() or o.requires_grad:
        return MISS
    shape, stride, offset, dtype = tuple(o.shape), o.stride(), o.storage_offset(), o.dtype
    for i, t in enumerate(ins):
        if o is t:  # with its metadata after the op (``unsqueeze_``, ``t_`` change it in place)
            return ("same", i, shape, stride, offset)
    if below or o.is_inference():  # no view links: a view is a result sharing an argument's storage
        key = storage_id(o)
        for i, t in enumerate(ins):
            if key is not None and (below or t.is_inference()) and storage_id(t) == key:
                return MISS if t.dtype != dtype else ("view", i, shape, stride, offset)
    elif o._is_view():
        base = o._base
        for i, r in enumerate(roots):
            if base is r:
                if ins[i].dtype != dtype:
                    return MISS
                return ("view", i, shape, stride, offset)
        if not flat or offset != 0 or any(b is base for b in internal):
            return MISS
        internal.append(base)  # a view of a tensor the op made itself: a new tensor to the caller
        return ("new", shape, stride, dtype)
    if offset != 0:
        return MISS
    return ("new", shape, stride, dtype)


def replay(template: Any, ins: list[_Tensor]) -> Any:
    """The op's result again, made from ``ins`` without running the op."""
    kind = template[0]
    for i, d in template[-1]:
        for _ in range(d):
            bump_version(ins[i])
    if kind == "one":
        return _make(template[1], ins)
    if kind == "atom":
        return template[1]
    t, items = template[1], template[2]
    values = [it[1] if it[0] == "atom" else _make(it, ins) for it in items]
    if t is tuple or t is list:
        return t(values)
    return t(values)  # torch.return_types structseqs take one sequence


def _make(spec: tuple[Any, ...], ins: list[_Tensor]) -> _Tensor:
    kind = spec[0]
    if kind == "same":
        t = ins[spec[1]]
        if (t.shape, t.stride(), t.storage_offset()) != spec[2:]:  # an in-place view op (``unsqueeze_``)
            with torch.autograd._unsafe_preserve_version_counter(t):  # (its bumps are replayed above)
                t.as_strided_(spec[2], spec[3], spec[4])
        return t
    if kind == "view":
        return ins[spec[1]].as_strided(spec[2], spec[3], spec[4])
    return torch.empty_strided(spec[1], spec[2], dtype=spec[3], device="meta")


def flat_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """No tensor lies deeper than one list or tuple in the call's arguments (so ``_op``
    collected every tensor argument)."""
    for a in (*args, *kwargs.values()):
        if type(a) in (list, tuple) and any(
            type(b) in (list, tuple, dict)
            and any(isinstance(c, _Tensor) for c in (b.values() if type(b) is dict else b))
            for b in a
        ):
            return False
        if type(a) is dict:
            return False
    return True

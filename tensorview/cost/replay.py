"""Meta replay below autograd, for costs recorded with grad enabled.

The recorder's meta replay (recording/metacache.py) skips ops whose arguments need grad,
so a grad-enabled recording (what the cost model needs, to see what autograd saves) runs
every meta kernel, and torch's meta kernels are slow (Python reference implementations
for most elementwise ops).  :class:`ReplayingOpFlops` is the FLOP counter with a replay
of its own one level lower: it sits below autograd (a dispatch mode), so autograd has
already recorded the op and will save its tensors as usual whatever the kernel returns.
For an aten op on meta tensors that it has already seen with the same argument metadata,
it returns fresh tensors of the recorded shapes, strides and dtypes instead of running
the kernel.

Only ops whose results are all fresh tensors are replayed: not views (their results
share the argument's storage, which saved-byte counting relies on), not ops that return
an argument (``add_``, ``copy_``, ``out=``) or change an argument's shape, strides or
offset (``resize_``), not results whose storage is larger than their extent (the byte
counts of saved tensors come from storages).  An op that writes into an argument and
returns fresh tensors (training BatchNorm updating its running statistics: its meta
kernel is the slowest of a ResNet's) is replayed too: on meta a write changes no data, and
the replay bumps the version counters of the written arguments as often as the real run
did (checked on the first run: the metadata of every argument must be unchanged).  FLOPs
are counted on the replayed results exactly as on real ones (torch's formulas read
shapes).

The templates are kept for the process (:data:`TEMPLATES`, up to :data:`TEMPLATE_LIMIT`
entries, then started afresh; :func:`clear_templates` empties it): a template is a
function of the op and its arguments' metadata alone (shapes, strides, dtypes, plain
values, grad and autocast modes are all in its key), and the first run of a meta kernel
is the slow part (training BatchNorm's is a Python decomposition of ~1 ms), so a second
``tv.summary`` of a model, or of a model sharing its shapes, runs none again.
"""

from __future__ import annotations

from typing import Any

import torch

from ..recording.metacache import key_of
from .flops import OpFlops

__all__ = ["TEMPLATES", "TEMPLATE_LIMIT", "ReplayingOpFlops", "clear_templates"]

_STRIDED = torch.strided
_NOT_REPLAYABLE = object()

#: (op, argument metadata) -> how to make its results again, for the process (module docstring)
TEMPLATES: dict[Any, Any] = {}
#: entries kept at most (about 1.2 KB each, ResNet-50 makes 57); past it the table starts afresh
TEMPLATE_LIMIT = 10_000


def clear_templates() -> None:
    """Forget every template (the next ops on meta run their kernels again)."""
    TEMPLATES.clear()


def _fresh(o: Any, in_storages: set[int]) -> tuple[Any, ...] | None:
    """How to make ``o`` again (shape, stride, dtype), or None when it is not a fresh dense
    meta tensor."""
    if not isinstance(o, torch.Tensor):
        return None
    if not o.is_meta or o.layout != _STRIDED or o.is_complex() or o.is_quantized or o._is_view():
        return None
    if o.storage_offset() != 0 or o.untyped_storage()._cdata in in_storages:
        return None
    extent = 1 + sum((n - 1) * s for n, s in zip(o.shape, o.stride())) if o.numel() else 0
    if o.untyped_storage().nbytes() != extent * o.element_size():
        return None
    return (tuple(o.shape), o.stride(), o.dtype)


def _template(out: Any, args: Any, kwargs: Any) -> Any:
    ins: set[int] = set()
    for a in (*args, *kwargs.values()):
        for t in a if isinstance(a, (list, tuple)) else (a,):
            if isinstance(t, torch.Tensor):
                ins.add(t.untyped_storage()._cdata)
    if isinstance(out, torch.Tensor):
        one = _fresh(out, ins)
        return _NOT_REPLAYABLE if one is None else one
    if type(out) is tuple and out and all(isinstance(o, torch.Tensor) for o in out):
        many = [_fresh(o, ins) for o in out]
        if any(m is None for m in many) or len({id(o) for o in out}) != len(out):
            return _NOT_REPLAYABLE
        return many
    return _NOT_REPLAYABLE


def _make(spec: tuple[Any, ...]) -> torch.Tensor:
    return torch.empty_strided(spec[0], spec[1], dtype=spec[2], device="meta")


def _tensor_args(args: Any, kwargs: Any) -> list[torch.Tensor]:
    """The tensors of a call, in order (top level, and one level into lists and tuples)."""
    out: list[torch.Tensor] = []
    for a in (*args, *kwargs.values()):
        for t in a if isinstance(a, (list, tuple)) else (a,):
            if isinstance(t, torch.Tensor):
                out.append(t)
    return out


def _state(ts: list[torch.Tensor]) -> list[tuple[Any, ...]] | None:
    """(version, shape, strides, offset) of each tensor; None when one has no version
    counter (an inference tensor)."""
    try:
        return [(t._version, tuple(t.shape), t.stride(), t.storage_offset()) for t in ts]
    except RuntimeError:
        return None


class _Writes:
    """The template of an op that writes into arguments: its results' template, and how
    often the op bumped the version counter of each argument (by position in the call)."""

    __slots__ = ("results", "bumps")

    def __init__(self, results: Any, bumps: tuple[tuple[int, int], ...]) -> None:
        self.results, self.bumps = results, bumps


def _writes_template(results: Any, before: list[tuple[Any, ...]] | None, after: Any) -> Any:
    if results is _NOT_REPLAYABLE or before is None or after is None or len(before) != len(after):
        return _NOT_REPLAYABLE
    if any(b[1:] != a[1:] or a[0] < b[0] for b, a in zip(before, after)):
        return _NOT_REPLAYABLE  # an argument changed shape (resize_): not a pure write
    return _Writes(results, tuple((i, a[0] - b[0]) for i, (b, a) in enumerate(zip(before, after)) if a[0] != b[0]))


class ReplayingOpFlops(OpFlops):
    """:class:`~.flops.OpFlops` that replays functional aten ops on meta (module docstring).
    ``replays`` counts the ops it did not run."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.replays = 0
        self._templates = TEMPLATES
        # per op: None (not replayed: a view, no schema), False (functional), True (writes)
        self._writes: dict[Any, bool | None] = {}

    def _writes_kind(self, func: Any) -> bool | None:
        schema = getattr(func, "_schema", None)
        kind = None if schema is None or getattr(func, "is_view", True) else bool(schema.is_mutable)
        self._writes[func] = kind
        return kind

    def run(self, func: Any, args: Any, kwargs: Any) -> Any:
        try:
            writes = self._writes[func]
        except KeyError:
            writes = self._writes_kind(func)
        if writes is None:
            return func(*args, **kwargs)
        for a in args:
            if isinstance(a, torch.Tensor) and a.is_meta:
                break
        else:
            return func(*args, **kwargs)  # nothing on meta: nothing to replay
        with torch.no_grad():  # below autograd the grad flags do not matter: key on metadata
            key = key_of(func, args, kwargs)
        if key is None:  # also where a tensor is not on meta (a write there is real)
            return func(*args, **kwargs)
        template = self._templates.get(key)
        if template is None:
            if len(self._templates) >= TEMPLATE_LIMIT:
                self._templates.clear()
            if not writes:
                out = func(*args, **kwargs)
                self._templates[key] = _template(out, args, kwargs)
                return out
            ins = _tensor_args(args, kwargs)
            before = _state(ins)
            out = func(*args, **kwargs)
            self._templates[key] = _writes_template(_template(out, args, kwargs), before, _state(ins))
            return out
        if template is _NOT_REPLAYABLE:
            return func(*args, **kwargs)
        self.replays += 1
        if type(template) is _Writes:
            if template.bumps:
                ins = _tensor_args(args, kwargs)
                for i, n in template.bumps:
                    for _ in range(n):
                        torch.autograd.graph.increment_version(ins[i])
            template = template.results
        if type(template) is list:
            return tuple(_make(spec) for spec in template)
        return _make(template)

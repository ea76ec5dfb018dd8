"""In-place ops on inference tensors (made under ``torch.inference_mode()``).

The recorder finds in-place ops by the version counter (ops.py), but inference tensors
keep none (reading ``_version`` raises, and the raise alone costs about 25 µs) and keep no
view links either (``_base`` is None).  So, for them, a recording counts writes itself:

* the "version" of an inference tensor is the number of writes seen to its storage
  (``InferenceWrites.version``); views share their base's storage, so a write through a
  view is seen by the base, as with a real version counter;
* while an op runs, a ``TorchDispatchMode`` (``_WriteCatcher``) reads the schema of every
  aten op it reaches: an argument marked written (``Tensor(a!)``, ``alias_info.is_write``)
  counts a write to its storage.  That covers every way to mutate: ``relu_()``,
  ``x += y``, ``out=``, ``__setitem__``, ``F.relu(x, inplace=True)``, ``copy_``...

Off the hot path: nothing of this runs before a recording meets its first inference tensor.
When the root call starts in ``torch.inference_mode()`` or with inference tensors as
inputs, the catcher is pushed once for the whole call; when one is met later (a forward
that enters inference mode itself), each op from then on runs under the catcher.  While
such a recording runs, ``optable.version`` asks ``is_inference()`` before reading a
counter (see docs/models.md for the measured cost).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .tensor import current_session

#: the recordings (in any thread) that have met inference tensors and still run, by id;
#: while not empty, ``optable.version`` checks ``is_inference()`` first (a set: adding and
#: discarding are single steps, so an interrupt cannot leave a count wrong)
ACTIVE: set[int] = set()
_Disable = torch._C.DisableTorchFunction
_Tensor = torch.Tensor

#: aten op -> its written arguments, as (position, name, keyword-only)
_WRITTEN: dict[Any, tuple[tuple[int, str, bool], ...]] = {}


def _written_args(func: Any) -> tuple[tuple[int, str, bool], ...]:
    spec = _WRITTEN.get(func)
    if spec is None:
        schema = getattr(func, "_schema", None)  # higher-order ops have none
        spec = tuple(
            (i, a.name, a.kwarg_only)
            for i, a in enumerate(schema.arguments if schema is not None else ())
            if a.alias_info is not None and a.alias_info.is_write
        )
        _WRITTEN[func] = spec
    return spec


def storage_id(t: torch.Tensor) -> int | None:
    """An id of ``t``'s storage (shared by all its views), None if it has none."""
    try:
        return int(t.untyped_storage()._cdata)
    except (RuntimeError, NotImplementedError, TypeError):  # sparse, nested...
        return None


class InferenceWrites:
    """The writes to storages of one recording (storage id -> writes seen)."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.catcher = _WriteCatcher(self)
        #: the catcher is on the dispatch stack for the whole root call (else per op)
        self.on_stack = False
        ACTIVE.add(id(self))

    def push(self) -> None:
        """Catch writes from now until ``close`` (the root call's start: balanced)."""
        self.catcher.__enter__()
        self.on_stack = True

    def close(self) -> None:
        """Stop counting: the catcher leaves the dispatch stack (with any mode an
        interrupted forward left above it), and version reads stop asking."""
        self.on_stack = False
        while True:
            depth = torch._C._len_torch_dispatch_stack()
            at = next((i for i in range(depth - 1, -1, -1) if torch._C._get_dispatch_stack_at(i) is self.catcher), None)
            if at is None:
                break
            for _ in range(depth - 1 - at):
                torch._C._pop_torch_dispatch_stack()
            self.catcher.__exit__(None, None, None)
        ACTIVE.discard(id(self))

    def version(self, t: torch.Tensor) -> int:
        with _Disable():
            key = storage_id(t)
        if key is None:
            return -1
        return self.counts.get(key, 0)

    def bump(self, t: torch.Tensor) -> None:
        """One more write to ``t``'s storage."""
        key = storage_id(t)
        if key is not None:
            self.counts[key] = self.counts.get(key, 0) + 1


class _WriteCatcher(TorchDispatchMode):
    """Counts a write for every tensor an aten op's schema says it writes."""

    #: higher-order ops (cond, flex_attention...) pass through like any op
    supports_higher_order_operators = True

    def __init__(self, writes: InferenceWrites) -> None:
        super().__init__()
        self.writes = writes

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in torch._dynamo.disable (importing Dynamo,
        # ~3 s, and a wrapper call per aten op); recordings never run under Dynamo
        return False

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        spec = _written_args(func)
        if spec:
            with _Disable():
                for i, name, kwarg_only in spec:
                    v = args[i] if not kwarg_only and i < len(args) else kwargs.get(name)
                    for t in v if isinstance(v, (list, tuple)) else (v,):
                        if isinstance(t, _Tensor):
                            self.writes.bump(t)
        return out


def session_writes(create: bool = True) -> InferenceWrites | None:
    """The write counts of the recording running in this thread (made on first use)."""
    s = current_session()
    if s is None or not s.running:
        return None
    w: InferenceWrites | None = s.ops.inference_writes(create)
    return w


def inference_version(t: torch.Tensor) -> int:
    """The "version" of inference tensor ``t``: writes seen to its storage (-1 outside a
    recording, or without a storage)."""
    w = session_writes()
    return -1 if w is None else w.version(t)


def bump_inference(t: torch.Tensor) -> None:
    w = session_writes()
    if w is not None:
        with _Disable():
            w.bump(t)


__all__ = ["ACTIVE", "InferenceWrites", "bump_inference", "inference_version", "storage_id"]

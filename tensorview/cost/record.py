"""``CostRecord``: what the cost probe measured in one recording, as exact integers by
node id, with the per-module-call roll-ups already made.

A module call ``m`` contains the nodes with ids in ``[m.id, m.end)`` (its own id is the
key of what ran in the call outside any recorded op: factories, hooks, ops on tensors
the recorder does not track).  Its FLOPs and uncounted op calls are the sums over those
keys, its saved-for-backward bytes the bytes of the storages saved under them, each
storage once.  A failed call (``end == -1``) contains everything recorded after it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from itertools import accumulate
from operator import sub
from typing import Any

from ..graph import ModuleNode
from .flops import OpFlops
from .memory import SavedTensors
from .params import ModuleParams, ParamTotals

__all__ = ["CostRecord", "merge_counts", "roll_up"]


@dataclasses.dataclass(frozen=True)
class CostRecord:
    """The costs of one recording (see the module docstring).

    ``flops``/``uncounted``/``saved_bytes`` hold function nodes (their own op) and module
    calls (rolled up); a function node that is missing did 0 FLOPs, left nothing uncounted,
    saved nothing.  ``params`` has one entry per module call.  ``saved_measured`` is False
    when the forward ran without grad (nothing is saved then, so saved bytes are unknown)."""

    flops: Mapping[int, int]
    uncounted: Mapping[int, Mapping[str, int]]
    saved_bytes: Mapping[int, int]
    params: Mapping[int, ModuleParams]
    totals: ParamTotals
    total_flops: int
    total_uncounted: Mapping[str, int]
    total_saved_bytes: int
    #: bytes of parameter/buffer storages autograd saved (not activation memory)
    saved_param_bytes: int
    saved_measured: bool

    @property
    def uncounted_calls(self) -> int:
        """How many op calls of the forward had no FLOP formula."""
        return sum(self.total_uncounted.values())


def merge_counts(parts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """``{name: calls}`` summed over ``parts``, most called first (then by name)."""
    out: dict[str, int] = {}
    for part in parts:
        for name, n in part.items():
            out[name] = out.get(name, 0) + n
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def _ids(keys: Iterable[Any]) -> list[int]:
    return sorted(k for k in keys if isinstance(k, int))


def _ranks(keys: list[int], last: int) -> list[int]:
    """How many of the sorted ``keys`` (ids up to ``last - 1``) are below x, for x up to ``last``."""
    marks = [0] * (last + 1)
    for k in keys:
        marks[k + 1] = 1
    return list(accumulate(marks))


def roll_up(
    calls: list[ModuleNode],
    counter: OpFlops,
    saved: SavedTensors | None,
    params: Mapping[int, ModuleParams],
    totals: ParamTotals,
) -> CostRecord:
    """The record of one recording: per-key measurements of ``counter`` and ``saved``
    (keys are node ids), rolled up over every module call of ``calls``.  The record's
    ``uncounted`` mappings are the counter's (not copied: thousands of small dicts, most
    of the roll-up's time): neither is changed afterwards."""
    module_ids = {m.id for m in calls}
    flops: dict[int, int] = {k: v for k, v in counter.flops.items() if isinstance(k, int) and k not in module_ids and v}
    uncounted: dict[int, Mapping[str, int]] = {
        k: v for k, v in counter.uncounted.items() if isinstance(k, int) and k not in module_ids and v
    }
    fkeys = _ids(counter.flops)
    ukeys = _ids(counter.uncounted)
    skeys = _ids(saved.storages) if saved is not None else []
    last = max([-1, *fkeys[-1:], *ukeys[-1:], *skeys[-1:]]) + 1  # (past every key)
    # by node id x: FLOPs under the keys below x, how many keys below x (one list lookup per
    # call and table, where a search of the sorted keys is a C call each)
    below = [0] * (last + 1)
    for k in fkeys:
        below[k + 1] = counter.flops[k]
    flops_below = list(accumulate(below))
    ukeys_below, skeys_below = _ranks(ukeys, last), _ranks(skeys, last)
    saved_bytes: dict[int, int] = {}
    per_key: dict[Any, int] = {}
    if saved is not None:
        per_key = saved.saved_bytes
        saved_bytes = {k: v for k, v in per_key.items() if isinstance(k, int) and k not in module_ids and v}
    uncounted_of = counter.uncounted
    total_saved: int | None = None
    # each module call: the keys in [start, end) of each table (lists made in C-level loops)
    ids = [m.id for m in calls]
    starts = [k if k < last else last for k in ids]
    ends = [e if 0 <= e < last else last for e in [m.end for m in calls]]
    flops.update(zip(ids, map(sub, map(flops_below.__getitem__, ends), map(flops_below.__getitem__, starts))))
    below_at = ukeys_below.__getitem__
    for mid, lo, hi in zip(ids, map(below_at, starts), map(below_at, ends)):
        if lo < hi:
            one = uncounted_of[ukeys[lo]] if hi == lo + 1 else None
            # (one key with one name, as most calls of a leaf module: nothing to merge or sort)
            merged = one if one is not None and len(one) == 1 else merge_counts(uncounted_of[k] for k in ukeys[lo:hi])
            if merged:
                uncounted[mid] = merged
    if saved is not None:
        below_at = skeys_below.__getitem__
        every = len(skeys) == len(per_key)
        for mid, lo, hi in zip(ids, map(below_at, starts), map(below_at, ends)):
            # (one key: its storages are distinct, its sum is the call's)
            if hi == lo + 1:
                saved_bytes[mid] = per_key[skeys[lo]]
            elif lo == 0 and hi == len(skeys) and every:  # every key (the root call): the total
                total_saved = saved_bytes[mid] = saved.total if total_saved is None else total_saved
            else:
                saved_bytes[mid] = saved.bytes_of(skeys[lo:hi]) if lo < hi else 0
    return CostRecord(
        flops=flops,
        uncounted=uncounted,
        saved_bytes=saved_bytes,
        params=dict(params),
        totals=totals,
        total_flops=counter.total,
        total_uncounted=merge_counts(counter.uncounted.values()),
        total_saved_bytes=(saved.total if total_saved is None else total_saved) if saved is not None else 0,
        saved_param_bytes=saved.param_total if saved is not None else 0,
        saved_measured=saved is not None,
    )

"""``CostRecord``: what the cost probe measured in one recording, as exact integers by
node id, with the per-module-call roll-ups already made.

A module call ``m`` contains the nodes with ids in ``[m.id, m.end)`` (its own id is the
key of what ran in the call outside any recorded op: factories, hooks, ops on tensors
the recorder does not track).  Its FLOPs and uncounted op calls are the sums over those
keys, its saved-for-backward bytes the bytes of the storages saved under them, each
storage once.  A failed call (``end == -1``) contains everything recorded after it.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Mapping
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


def roll_up(
    calls: list[ModuleNode],
    counter: OpFlops,
    saved: SavedTensors | None,
    params: Mapping[int, ModuleParams],
    totals: ParamTotals,
) -> CostRecord:
    """The record of one recording: per-key measurements of ``counter`` and ``saved``
    (keys are node ids), rolled up over every module call of ``calls``."""
    module_ids = {m.id for m in calls}
    flops: dict[int, int] = {k: v for k, v in counter.flops.items() if isinstance(k, int) and k not in module_ids and v}
    uncounted: dict[int, Mapping[str, int]] = {
        k: dict(v) for k, v in counter.uncounted.items() if isinstance(k, int) and k not in module_ids and v
    }
    fkeys = _ids(counter.flops)
    prefix = [0]
    for k in fkeys:
        prefix.append(prefix[-1] + counter.flops[k])
    ukeys = _ids(counter.uncounted)
    skeys = _ids(saved.storages) if saved is not None else []
    last = max([-1, *fkeys[-1:], *ukeys[-1:], *skeys[-1:]])
    saved_bytes: dict[int, int] = {}
    if saved is not None:
        saved_bytes = {k: v for k, v in saved.saved_bytes.items() if isinstance(k, int) and k not in module_ids and v}
    left = bisect.bisect_left
    uncounted_of = counter.uncounted
    for m in calls:  # one module call: the keys in [m.id, end) of each table
        start, end = m.id, (m.end if m.end >= 0 else last + 1)
        flops[start] = prefix[left(fkeys, end)] - prefix[left(fkeys, start)]
        lo, hi = left(ukeys, start), left(ukeys, end)
        if lo < hi:
            merged = merge_counts(uncounted_of[k] for k in ukeys[lo:hi])
            if merged:
                uncounted[start] = merged
        if saved is not None:
            lo, hi = left(skeys, start), left(skeys, end)
            saved_bytes[start] = saved.bytes_of(skeys[lo:hi]) if lo < hi else 0
    return CostRecord(
        flops=flops,
        uncounted=uncounted,
        saved_bytes=saved_bytes,
        params=dict(params),
        totals=totals,
        total_flops=counter.total,
        total_uncounted=merge_counts(counter.uncounted.values()),
        total_saved_bytes=saved.total if saved is not None else 0,
        saved_param_bytes=saved.param_total if saved is not None else 0,
        saved_measured=saved is not None,
    )

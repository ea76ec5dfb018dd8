"""``CostProbe``: the cost model wired into the recorder as a probe.

While the root call runs, an :class:`~.flops.OpFlops` dispatch mode counts the FLOPs of
every aten op and :class:`~.memory.SavedTensors` hooks see every tensor autograd saves
(only when the forward runs with grad enabled: nothing is saved otherwise).  Both file
what they see under a *key*, the id of the node running now: the FunctionNode of the
recorded op, else the ModuleNode of the module call (factories, hooks, ops on tensors the
recorder does not track).  ``exit_op`` hands the op's cost back as the memo of a
meta-replay template, and ``replay_op`` adds it for every replayed call, so meta replay
gives the same numbers as running every op.  On a real device an op whose signature
(:func:`op_signature`) was seen before in the recording runs without the counter and is
given the cost measured then (the counter's Python call per aten op is most of the
probe's time per op); where what it saves was learnt then, it also runs without the
saved-tensor hooks and its saves are filed as learnt (:mod:`.savedops`).

On meta, ``F.scaled_dot_product_attention`` runs through the CPU's fused kernel where the
CPU would use it (:func:`~.memory.sdpa_as_on_cpu`, a probe substitute), so autograd saves
what it saves on a real device rather than the math path's ``seq x seq`` weights.

When the call ends, the probe rolls the measurements up over every module call and keeps
the result as ``probe.record`` (:class:`~.record.CostRecord`); ``layers()`` publishes the
layers named in ``stats`` (see :mod:`.layers`).

>>> import torch, tensorview as tv
>>> model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
>>> probe = CostProbe()
>>> with tv.Recorder(model, probes=[probe]) as rec:
...     _ = model(torch.randn(2, 8))
>>> probe.record.total_flops, probe.record.totals.total_params
(128, 36)
>>> str(rec.graph.graph.annotations.layer("params")[0])
'36'
"""

from __future__ import annotations

import contextlib
import gc
import importlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import torch
from torch import nn

from ..graph import FunctionNode, ModuleNode
from ..recording import Probe
from .flops import OpFlops
from .layers import PROBE_STATS, check_stats, stat_layers
from .memory import ON_META, SavedTensors
from .params import module_params_and_totals
from .record import CostRecord, roll_up
from .replay import ReplayingOpFlops
from .savedops import SeenSaves
from .signature import op_signature

__all__ = ["CostProbe", "op_signature"]

_stack_len = torch._C._len_torch_dispatch_stack
_stack_at = torch._C._get_dispatch_stack_at
_pop_mode = torch._C._pop_torch_dispatch_stack
_push_mode = torch._C._push_on_torch_dispatch_stack
_NOTHING_RAN = (None, None, None)  # (what is known of its signature, cost, saves) of an op without one


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: the roll-up makes thousands of small acyclic
    objects, each few hundred of which would start a collection over the whole recording
    (a third of the roll-up's time on a 2k-op model); the collector's state is restored."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class CostProbe(Probe):
    """Measure FLOPs, bytes saved for backward and parameters per node (module docstring).

    ``stats``: the annotation layers to publish (default: every measured one; the
    measurements are made either way and kept in ``record``).  ``saved``: install the
    saved-tensor hooks when the forward runs with grad enabled.  ``meta_attention``: run
    attention on meta as the CPU would (see :func:`~.memory.sdpa_as_on_cpu`).  ``replay``:
    on meta, replay aten ops below autograd instead of running their kernels again
    (:mod:`.replay`; the numbers are the same, tested)."""

    name = "cost"

    def __init__(
        self,
        stats: Iterable[str] = PROBE_STATS,
        *,
        saved: bool = True,
        meta_attention: bool = True,
        replay: bool = True,
    ) -> None:
        self.stats = tuple(s for s in check_stats(tuple(stats)) if s in PROBE_STATS)
        self.measure_saved = saved
        self.replay = replay
        self.substitutes: Mapping[Any, Any] = dict(ON_META) if meta_attention else {}
        #: what the last recording measured (set when its root call ends)
        self.record: CostRecord | None = None
        self._counter = OpFlops()
        self._saved: SavedTensors | None = None
        self._seen = SeenSaves(SavedTensors())
        self._stack: list[Any] = []
        self._calls: list[ModuleNode] = []
        self._modules: list[nn.Module] = []
        self._entered = False
        # op signature -> [(FLOPs or None where no formula ran, uncounted calls, the memo of
        # its calls) when it first ran, what it saves (savedops.py)]
        self._costs: dict[Any, list[Any]] = {}
        # per op running: (what is known of its signature, its cost on a hit, the state of its saves)
        self._ops: list[tuple[Any, Any, Any]] = []
        self._popped = False  # the counter is off the dispatch stack for an op seen before

    def _set(self, key: Any) -> None:
        self._counter.current = key
        if self._saved is not None:
            self._saved.current = key

    # -- the recording -------------------------------------------------------------------
    def start(self, root: ModuleNode, module: nn.Module) -> None:
        self.record = None
        self._calls, self._modules, self._stack = [root], [module], []
        self._costs, self._ops, self._popped = {}, [], False
        # a dispatch mode's ``__torch_dispatch__`` (torch._disable_dynamo) imports Dynamo
        # at its first call: here at the root, not under the deepest op of a deep model
        importlib.import_module("torch._dynamo")

        self._entered = False  # stop() leaves the modes only where start() entered them
        self._counter = ReplayingOpFlops() if self.replay else OpFlops()
        self._saved = None
        saved = SavedTensors(module) if self.measure_saved and torch.is_grad_enabled() else None
        self._counter.__enter__()
        if saved is not None:
            try:
                saved.__enter__()
            except BaseException:
                self._counter.__exit__(None, None, None)
                raise
        self._saved, self._entered = saved, True
        if saved is not None:
            self._seen = SeenSaves(saved)
        self._set(root.id)

    # called around every op and module call: _set written out
    def enter_call(self, m: ModuleNode, module: nn.Module) -> None:
        self._calls.append(m)
        self._modules.append(module)
        counter, saved = self._counter, self._saved
        self._stack.append(counter.current)
        counter.current = m.id
        if saved is not None:
            saved.current = m.id

    def exit_call(self, m: ModuleNode) -> None:
        stack = self._stack
        key = stack.pop() if stack else None
        self._counter.current = key
        saved = self._saved
        if saved is not None:
            saved.current = key

    def enter_op_args(self, fn: FunctionNode, func: Any, args: tuple[Any, ...] | None, kwargs: Any) -> None:
        """An op seen before with the same signature (:func:`op_signature`) runs with the
        FLOP counter off the dispatch stack (where it alone is on it): its cost is the one
        measured the first time; and with the saved-tensor hooks off where what it saves
        was learnt (:mod:`.savedops`)."""
        counter = self._counter
        self._stack.append(counter.current)
        fid = fn.id
        counter.current = fid
        saved = self._saved
        if args is None:
            sig = None
        elif saved is None:
            sig = op_signature(func, args, kwargs)
        else:
            saved.current = fid
            tensors: list[Any] = []
            sig = op_signature(func, args, kwargs, tensors)
        if sig is None:
            if saved is not None:
                saved.current = fid
            self._ops.append(_NOTHING_RAN)
            return
        known = self._costs.get(sig)
        if known is None:
            known = self._costs[sig] = [None, None]
        seen = None if saved is None else self._seen.enter(known, tensors)
        cost = known[0]
        if cost is not None and not self._popped and _stack_len() == 1 and _stack_at(0) is counter:
            _pop_mode(None)
            self._popped = True
            self._ops.append((known, cost, seen))
            return
        self._ops.append((known, None, seen))

    def exit_op(self, fn: FunctionNode, func: Any) -> Any:
        return self.exit_op_result(fn, func, None)

    def exit_op_result(self, fn: FunctionNode, func: Any, out: Any) -> Any:
        stack, counter = self._stack, self._counter
        key = stack.pop() if stack else None
        counter.current = key
        saved = self._saved
        if saved is not None:
            saved.current = key
        ops = self._ops
        known, cost, seen = ops.pop() if ops else _NOTHING_RAN
        fid = fn.id
        if seen is not None:
            self._seen.exit(seen, fid, out)
        if cost is not None:
            _push_mode(counter)
            self._popped = False
            flops, uncounted, memo = cost
            if flops is not None:
                counted = counter.flops
                counted[fid] = counted.get(fid, 0) + flops
            if uncounted:
                u = counter.uncounted.get(fid)
                if u is None:  # (shared by every op of the signature: nothing is counted under fid now)
                    counter.uncounted[fid] = uncounted
                else:
                    for name, n in uncounted.items():
                        u[name] = u.get(name, 0) + n
            return memo
        memo = counter.cost_of(fid)
        if known is not None:
            flops = counter.flops.get(fid)
            known[0] = (flops, memo[1], (flops or 0, memo[1]))
        return memo

    def replay_op(self, fn: FunctionNode, func: Any, memo: Any) -> None:
        if memo is not None:
            self._counter.add(fn.id, *memo)

    def stop(self) -> None:
        counter, saved = self._counter, self._saved
        if not self._entered:  # start() failed: its error is the one to see
            self._modules, self._stack = [], []
            return
        self._entered = False
        if self._popped:  # (an op seen before was left by an exception between its hooks)
            _push_mode(counter)
            self._popped = False
        self._seen.undo()  # (an op that left its saved-tensor hooks off, likewise)
        try:
            if saved is not None:
                saved.__exit__(None, None, None)
        finally:
            counter.__exit__(None, None, None)
        calls, modules = self._calls, self._modules
        self._modules, self._stack = [], []
        if not modules:
            return
        root = modules[0]
        with _gc_paused():
            rows, totals = module_params_and_totals(root, [(m.path, mod) for m, mod in zip(calls, modules)])
            self.record = roll_up(calls, counter, saved, {m.id: r for m, r in zip(calls, rows)}, totals)

    def layers(self) -> Mapping[str, Mapping[int, Any]]:
        if self.record is None:
            return {}
        return stat_layers(self.record, self.stats)

"""Probes: facts recorded per node while the forward runs, beyond what the graph holds
(source locations, FLOPs, bytes saved for backward...).

A probe is told when the root call starts and stops, and around every recorded op and
module call; what it found becomes annotation layers of the graph (``layers()``), so
views, renderers and the JSON show it like any other annotation.  Without probes the
session skips all of this (one attribute test per op).

Meta replay (recording/metacache.py) does not run an op it has seen before; a probe that
measures ops returns a memo from ``exit_op`` when the op really ran, and gets it back in
``replay_op`` for each replayed call, so replayed ops carry the facts of the op they
replay.

A probe may also name ``substitutes``, ``{torch function: function to run instead}``: an
equivalent function that lets it see better facts (the cost probe runs attention on meta
through the CPU's fused kernel, so autograd saves what it saves on a real device).  The
node keeps the op's name; the session swaps the function only while probes run.  An op
written in Python that calls a substituted function by a global name of its module
(``F.multi_head_attention_forward`` calls ``scaled_dot_product_attention``) runs as a
copy of itself whose globals name the substitute (:func:`with_substitutes`): ops run with
torch functions switched off, so that inner call is never an op the session could swap.

Node names are handed out when the recording ends (graph/names.py): while it runs, a
probe should key what it finds by node id and read ``op``, ``path`` and shapes, not names.

>>> import torch
>>> from tensorview.recording import Recorder
>>> class CountOps(Probe):
...     name = "ops_inside"
...     def __init__(self): self.per_call = {}
...     def start(self, root, module): self.per_call[root.id] = 0
...     def enter_call(self, m, module): self.per_call[m.id] = 0
...     def exit_op(self, fn, func):
...         for m in self.open: self.per_call[m] += 1
...     def layers(self): return {self.name: self.per_call}
>>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
>>> with Recorder(model, probes=[CountOps()]) as rec:
...     _ = model(torch.randn(1, 2))
>>> {rec.graph[i].path: n for i, n in rec.graph.annotations.layer("ops_inside").items()}
{'': 2, '0': 1, '1': 1}
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from torch import nn

from ..graph import FunctionNode, ModuleNode


class Probe:
    """Base class: override what you need.  ``open`` lists the ids of the module calls
    now running, outermost first (kept up to date by the base class)."""

    name = "probe"
    #: torch function -> the function to run in its place (see the module docstring)
    substitutes: Mapping[Any, Any] = MappingProxyType({})

    def start(self, root: ModuleNode, module: nn.Module) -> None:
        """The root call starts (``root`` is its node)."""

    def stop(self) -> None:
        """The root call ended, normally or by an exception."""

    def enter_call(self, m: ModuleNode, module: nn.Module) -> None:
        """A module call starts (after ``open`` got ``m.id``)."""

    def exit_call(self, m: ModuleNode) -> None:
        """A module call ended (before ``m.id`` leaves ``open``)."""

    def enter_op(self, fn: FunctionNode, func: Any) -> None:
        """Op ``func`` is about to run as node ``fn``."""

    def enter_op_args(self, fn: FunctionNode, func: Any, args: tuple[Any, ...] | None, kwargs: Any) -> None:
        """``enter_op`` with the op's arguments (``args`` None where they are not the
        op's own: a fill or another tensor subclass runs it); override to see them."""
        self.enter_op(fn, func)

    def exit_op(self, fn: FunctionNode, func: Any) -> Any:
        """Op ``func`` ran (also when it raised); the return value is kept as the memo of a
        meta-replay template and passed to ``replay_op`` for replayed calls."""
        return None

    def exit_op_result(self, fn: FunctionNode, func: Any, out: Any) -> Any:
        """``exit_op`` with what the op returned (None where it raised); override to see it."""
        return self.exit_op(fn, func)

    def replay_op(self, fn: FunctionNode, func: Any, memo: Any) -> None:
        """Op ``func`` was replayed on meta instead of run; ``memo`` is what ``exit_op``
        returned when the op it replays ran."""

    def layers(self) -> Mapping[str, Mapping[int, Any]]:
        """The annotation layers this probe recorded: ``{layer name: {node id: value}}``."""
        return {}

    # -- bookkeeping the session calls ----------------------------------------------------
    @property
    def open(self) -> list[int]:
        opened: list[int] | None = self.__dict__.get("_open")
        if opened is None:
            opened = []
            self.__dict__["_open"] = opened
        return opened


def with_substitutes(func: Any, substitutes: Mapping[Any, Any]) -> Any:
    """What to run for ``func``: its substitute; else, for a Python function whose code
    calls a substituted function by a global name, a copy of it whose globals map those
    names to the substitutes (nothing is patched: the module and ``func`` are untouched);
    else ``func``.  One level deep: functions it calls keep their own globals."""
    sub = substitutes.get(func)
    if sub is not None:
        return sub
    if type(func) is not types.FunctionType or not substitutes:
        return func
    by_id = {id(k): v for k, v in substitutes.items()}
    g = func.__globals__
    names = {n: by_id[id(g[n])] for n in func.__code__.co_names if n in g and id(g[n]) in by_id}
    if not names:
        return func
    clone = types.FunctionType(func.__code__, {**g, **names}, func.__name__, func.__defaults__, func.__closure__)
    clone.__kwdefaults__ = func.__kwdefaults__
    clone.__qualname__, clone.__module__, clone.__doc__ = func.__qualname__, func.__module__, func.__doc__
    return clone


class Probes:
    """The probes of one session, called together; the session holds ``None`` without any.
    With one probe (the common case) its methods are called directly, bound once."""

    __slots__ = ("probes", "substitutes", "_runs", "_opens", "_one", "op_hooks_of_one")

    def __init__(self, probes: list[Probe]) -> None:
        self.probes = probes
        self.substitutes: dict[Any, Any] = {}
        for p in probes:
            self.substitutes.update(p.substitutes)
        self._runs: dict[Any, Any] = {}  # op -> what runs for it (one copy per op: stable meta-cache keys)
        self._opens = [p.open for p in probes]  # (each probe's ``open``, read once)
        one = probes[0] if len(probes) == 1 else None
        self._one = one
        #: the one probe's ``enter_op_args`` and ``exit_op_result`` (None with several): for the op runner
        self.op_hooks_of_one: tuple[Any, Any] | None = (
            (one.enter_op_args, one.exit_op_result) if one is not None else None
        )

    def substituting(self) -> bool:
        """Some probe runs its own function in place of an op."""
        return bool(self.substitutes)

    def substitute(self, func: Any) -> Any:
        """The function to run for op ``func`` (:func:`with_substitutes`, once per op)."""
        run = self._runs.get(func)
        if run is None:
            run = self._runs[func] = with_substitutes(func, self.substitutes)
        return run

    def start(self, root: ModuleNode, module: nn.Module) -> None:
        for p, opened in zip(self.probes, self._opens):
            opened.append(root.id)
            p.start(root, module)

    def stop(self) -> None:
        for p, opened in zip(self.probes, self._opens):
            p.stop()
            opened.clear()

    def enter_call(self, m: ModuleNode, module: nn.Module) -> None:
        one = self._one
        if one is not None:
            self._opens[0].append(m.id)
            one.enter_call(m, module)
            return
        for p, opened in zip(self.probes, self._opens):
            opened.append(m.id)
            p.enter_call(m, module)

    def exit_call(self, m: ModuleNode) -> None:
        one = self._one
        if one is not None:
            one.exit_call(m)
            opened = self._opens[0]
            if opened and opened[-1] == m.id:
                opened.pop()
            return
        for p, opened in zip(self.probes, self._opens):
            p.exit_call(m)
            if opened and opened[-1] == m.id:
                opened.pop()

    def enter_op(self, fn: FunctionNode, func: Any, args: tuple[Any, ...] | None = None, kwargs: Any = None) -> None:
        for p in self.probes:
            p.enter_op_args(fn, func, args, kwargs)

    def exit_op(self, fn: FunctionNode, func: Any, out: Any = None) -> tuple[Any, ...]:
        return tuple([p.exit_op_result(fn, func, out) for p in self.probes])

    def replay_op(self, fn: FunctionNode, func: Any, memos: tuple[Any, ...]) -> None:
        for p, memo in zip(self.probes, memos):
            p.replay_op(fn, func, memo)

    def layers(self) -> dict[str, Mapping[int, Any]]:
        out: dict[str, Mapping[int, Any]] = {}
        for p in self.probes:
            out.update(p.layers())
        return out

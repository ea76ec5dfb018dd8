"""From a walked program to the IR: module calls rebuilt from the module stacks, then
everything made through ``GraphBuilder``'s scripting layer.

A call instance is a run of consecutive items whose stacks share an entry's unique key
(export and fx give each call of a module its own key: ``L__self__shared``,
``L__self__shared@1``), so a module called twice gives two calls with call indices 0
and 1, as in the eager recording.  A call's inputs are the values made outside it that
its items read (parameters, buffers and constants are made where first used, as the
recorder does, so they are no call's input); its outputs are the values made inside it
that are read after it or returned."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from ..graph import Graph, GraphBuilder
from ..graph.builder import Call
from .meta import Entry, Value
from .walk import Item, Walk

#: sources made where they are first used
LAZY = frozenset({"parameter", "buffer", "constant"})


@dataclass(eq=False)
class CallPlan:
    entry: Entry
    opaque: bool = False
    inputs: list[Value] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)


def plan(items: list[Item]) -> tuple[list[CallPlan], list[int | None]]:
    """The call instances, and for each item the instance of its closed module call."""
    calls: list[CallPlan] = []
    leaves: list[int | None] = []
    inners: list[tuple[int, ...]] = []
    open_: list[tuple[str, int]] = []
    for item in items:
        k = 0
        while k < len(open_) and k < len(item.entries) and open_[k][0] == item.entries[k].key:
            k += 1
        del open_[k:]
        for e in item.entries[k:]:
            calls.append(CallPlan(e))
            open_.append((e.key, len(calls) - 1))
        item.chain = tuple(i for _, i in open_)
        leaf = None
        if item.leaf is not None:
            calls.append(CallPlan(item.leaf, opaque=True))
            leaf = len(calls) - 1
        leaves.append(leaf)
        inners.append(item.chain if leaf is None else (*item.chain, leaf))
        for v in item.results:
            v.chain = item.chain
        for v in item.args:
            v.users.append(inners[-1])
    _unstale(items, inners)
    for item, inner, leaf in zip(items, inners, leaves):
        for v in item.args:
            into = (() if leaf is None else (leaf,)) if v.role in LAZY else inner
            for c in into:
                if c not in v.chain and all(v is not w for w in calls[c].inputs):
                    calls[c].inputs.append(v)
    for item in items:
        for v in item.results:
            for c in v.chain:
                if _escapes(v, c):
                    calls[c].outputs.append(v)
    return calls, leaves


def _escapes(v: Value, c: int) -> bool:
    return v.output or any(c not in u for u in v.users)


def _unstale(items: list[Item], inners: list[tuple[int, ...]]) -> None:
    """``torch.export`` reads a tensor through the last op that returned it: after
    ``h = x.to(torch.float32)`` inside a norm, a residual ``x`` read after the norm reads
    ``h`` (the same object).  Such a no-op alias read outside the call that made it, while
    that call returns something else, is read as its source, as the eager forward did."""

    def crosses(v: Value) -> bool:  # a no-op alias of a tensor made outside its call
        return v.alias_of is not None and bool(v.chain) and v.chain[-1] not in v.alias_of.chain

    made: dict[int, list[Value]] = {}
    for item in items:
        for v in item.results:
            if v.chain:
                made.setdefault(v.chain[-1], []).append(v)
    returns_other: dict[int, bool] = {}
    stale: set[int] = set()
    for item in items:
        for v in item.results:
            if v.output or not crosses(v):
                continue
            c = v.chain[-1]
            if c not in returns_other:
                returns_other[c] = any(not crosses(w) and _escapes(w, c) for w in made[c])
            if returns_other[c]:
                stale.add(id(v))
    if not stale:
        return
    for item, inner in zip(items, inners):
        for i, v in enumerate(item.args):
            while id(v) in stale and v.chain[-1] not in inner and v.alias_of is not None:
                v = v.alias_of
            item.args[i] = v
    for item in items:
        for v in item.results:
            v.users.clear()
    for item, inner in zip(items, inners):
        for v in item.args:
            v.users.append(inner)


class Builder:
    def __init__(self, walk: Walk, root: Entry) -> None:
        self.walk = walk
        self.b = GraphBuilder(root.cls_name, cls_module=root.cls_module)
        self.calls, self.leaves = plan(walk.items)
        self.opened: list[tuple[int, AbstractContextManager[Call], Call]] = []

    def build(self) -> Graph:
        b = self.b
        for v in self.walk.inputs:
            shape, dtype, device = v.meta
            v.tid = b.input(shape, v.name, dtype, device)
        for item, leaf in zip(self.walk.items, self.leaves):
            self.sync(item.chain)
            ids = [self.tensor_id(v) for v in item.args]
            if leaf is not None:
                self.closed_call(leaf, ids, item.results)
            elif item.created:
                for v in item.results:
                    v.tid = b.tensor(item.label, v.meta[0], "created", dtype=v.meta[1], device=v.meta[2])
            else:
                tids = b.op_results(item.label, ids, [v.meta for v in item.results])
                for v, t in zip(item.results, tids):
                    v.tid = t
        self.sync(())
        outs = []
        for v in self.walk.outputs:
            t = self.tensor_id(v)
            if v.is_source:  # an input or parameter returned as it is: an alias, as recorded
                t = b.tensor(v.name or "output", v.meta[0], dtype=v.meta[1], device=v.meta[2], copy_of=t)
            outs.append(t)
        b.output(*outs)
        return b.finish()

    def tensor_id(self, v: Value) -> int:
        if v.tid is None:  # a parameter, buffer or constant: made where first used
            shape, dtype, device = v.meta
            v.tid = self.b.param(v.name, shape, v.role, dtype, device)
        return v.tid

    def sync(self, chain: tuple[int, ...]) -> None:
        """Close the open calls not in ``chain``, open those of ``chain`` not open yet."""
        k = 0
        while k < len(self.opened) and k < len(chain) and self.opened[k][0] == chain[k]:
            k += 1
        while len(self.opened) > k:
            self.close(*self.opened.pop())
        for c in chain[k:]:
            p = self.calls[c]
            e = p.entry
            ids = [self.tensor_id(v) for v in p.inputs]
            cm = self.b.module(e.path, e.cls_name, *ids, cls_module=e.cls_module)
            self.opened.append((c, cm, cm.__enter__()))

    def close(self, c: int, cm: AbstractContextManager[Call], call: Call) -> None:
        outputs = self.calls[c].outputs
        call.returns(*[self.tensor_id(v) for v in outputs if not v.is_source])
        cm.__exit__(None, None, None)
        for v in outputs:
            if v.is_source:  # made inside from nothing (``created``) and returned: an alias
                self.alias(v, call)

    def alias(self, v: Value, call: Call) -> None:
        shape, dtype, device = v.meta
        v.tid = self.b.tensor(
            "_out", shape, dtype=dtype, device=device, copy_of=v.tid, producer=call.id, named_after=call.node
        )
        v.role = "intermediate"

    def closed_call(self, c: int, ids: list[int], results: list[Value]) -> None:
        e = self.calls[c].entry
        with self.b.module(e.path, e.cls_name, *ids, cls_module=e.cls_module, opaque=True) as call:
            pass
        for v in results:
            shape, dtype, device = v.meta
            v.tid = self.b.tensor("_out", shape, dtype=dtype, device=device, producer=call.id, named_after=call.node)

"""Unique readable node names, handed out as torch.fx does: ``add``, ``add_1``, ``add_2``."""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Sequence

from .nodes import Node


class Namespace:
    """Hands out unique readable names: ``add``, ``add_1``, ``add_2`` (as torch.fx does)."""

    __slots__ = ("_used", "_clean")

    def __init__(self) -> None:
        self._used: dict[str, int] = {}
        self._clean: dict[str, str] = {}

    def copy(self) -> Namespace:
        """A namespace that has handed out the same names (this one is not changed by it)."""
        other = Namespace()
        other._used = dict(self._used)
        other._clean = dict(self._clean)
        return other

    def __call__(self, base: str) -> str:
        clean = self._clean.get(base)  # bases recur: each is checked once
        if clean is None:
            clean = self._clean[base] = base if base.isascii() and base.isidentifier() else _sanitize(base)
        base = clean
        used = self._used
        n = used.get(base)
        if n is None:
            used[base] = 0
            return base
        while True:
            n += 1
            candidate = f"{base}_{n}"
            if candidate not in self._used:
                used[base] = n
                used[candidate] = 0
                return candidate


#: suffixes known to keep a clean name clean (``_sanitize`` is skipped after them)
_CLEAN_SUFFIXES = frozenset(("", "_out", *(f"_out{i}" for i in range(1, 64))))

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _sanitize(base: str) -> str:
    if not base:
        return "node"
    if base.isascii():  # the common cases, checked in C
        if base.isidentifier():
            return base
        if ("_" + base).isidentifier():  # a module path such as "0" or "0_weight"
            return "_" + base
    if all(c in _SAFE for c in base):
        out = base
    else:
        out = "".join(c if c in _SAFE else "_" for c in base)
    if out[0].isdigit():
        out = "_" + out
    return out


def name_nodes(nodes: Sequence[Node], start: int, after: dict[int, int], names: Namespace) -> int:
    """Give ``nodes[start:]`` their unique names, in id order, from ``names``; returns the
    number of nodes named.  Until then a node holds its base name (``add``), or, when listed
    in ``after`` (node id -> id of an earlier node), a suffix to that node's final name
    (``_out`` after ``add_1``: ``add_1_out``).  Naming once at the end instead of at each
    node's creation keeps the per-op cost of recording down; the names are the same."""
    bases = [n.name for n in nodes[start:]]
    assign_names(nodes, start, unique_names(nodes, bases, start, after, names))
    after.clear()
    return len(nodes)


def unique_names(
    nodes: Sequence[Node], bases: Sequence[str], start: int, after: dict[int, int], names: Namespace
) -> list[str]:
    """The names ``name_nodes`` gives ``nodes[start:]``, whose base names are ``bases``
    (the nodes are not changed; ``names`` is)."""
    if start == 0 and not names._used:
        fast = _count_names(bases, after, names)
        if fast is not None:
            return fast
    out: list[str] = []
    for i, base in enumerate(bases, start):
        a = after.get(i)
        if a is not None:
            base = (out[a - start] if a >= start else nodes[a].name) + base
        out.append(names(base))
    return out


def assign_names(nodes: Sequence[Node], start: int, new: Sequence[str]) -> None:
    """``nodes[start + i].name = new[i]``, in one C loop: an asynchronous exception (Ctrl-C)
    comes between two bytecodes, so it finds all of them named or none."""
    deque(map(setattr, itertools.islice(nodes, start, None), itertools.repeat("name"), new), maxlen=0)


def _count_names(bases: Sequence[str], after: dict[int, int], names: Namespace) -> list[str] | None:
    """The fast way to name nodes with ``bases`` from an unused ``names``: the k-th use of a
    base is ``base_k``.  That is what ``Namespace`` hands out as long as no such name
    equals another base (``add_1`` used as a base and made from ``add``): then, and only
    then, two nodes get the same name here; this is checked, and on a clash nothing is
    changed (None: name them one by one).  On success ``names`` is left as if it had named
    them."""
    clean = names._clean
    counts: dict[str, int] = {}
    out: list[str] = []
    for i, base in enumerate(bases):
        a = after.get(i)
        if a is None:
            c = clean.get(base)
            if c is None:
                c = clean[base] = base if base.isascii() and base.isidentifier() else _sanitize(base)
        else:  # a final name and a suffix: clean when the suffix is
            c = out[a] + base
            if base not in _CLEAN_SUFFIXES:
                c = _sanitize(c)
        n = counts.get(c)
        if n is None:
            counts[c] = 0
            out.append(c)
        else:
            counts[c] = n + 1
            out.append(f"{c}_{n + 1}")
    used = dict.fromkeys(out, 0)
    if len(used) != len(out):  # a clash
        return None
    used.update((c, n) for c, n in counts.items() if n)
    names._used = used
    return out

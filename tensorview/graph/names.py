"""Unique readable node names, handed out as torch.fx does: ``add``, ``add_1``, ``add_2``."""

from __future__ import annotations

from collections.abc import Sequence

from .nodes import Node


class Namespace:
    """Hands out unique readable names: ``add``, ``add_1``, ``add_2`` (as torch.fx does)."""

    __slots__ = ("_used", "_clean")

    def __init__(self) -> None:
        self._used: dict[str, int] = {}
        self._clean: dict[str, str] = {}

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
    if start == 0 and not names._used and _count_names(nodes, after, names):
        after.clear()
        return len(nodes)
    for i in range(start, len(nodes)):
        node = nodes[i]
        a = after.get(i)
        node.name = names(node.name if a is None else nodes[a].name + node.name)
    after.clear()
    return len(nodes)


def _count_names(nodes: Sequence[Node], after: dict[int, int], names: Namespace) -> bool:
    """The fast way to name all of ``nodes`` from an unused ``names``: the k-th use of a base
    is ``base_k``.  That is what ``Namespace`` hands out as long as no such name equals
    another base (``add_1`` used as a base and made from ``add``): then, and only then, two
    nodes get the same name here; this is checked, and on a clash nothing is changed
    (``False``: name them one by one).  On success ``names`` is left as if it had named
    them."""
    clean = names._clean
    counts: dict[str, int] = {}
    out: list[str] = []
    for i, node in enumerate(nodes):
        a = after.get(i)
        if a is None:
            c = clean.get(node.name)
            if c is None:
                base = node.name
                c = clean[base] = base if base.isascii() and base.isidentifier() else _sanitize(base)
        else:  # a final name and a suffix: clean when the suffix is
            c = out[a] + node.name
            if node.name not in _CLEAN_SUFFIXES:
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
        return False
    used.update((c, n) for c, n in counts.items() if n)
    names._used = used
    for node, name in zip(nodes, out):
        node.name = name
    return True

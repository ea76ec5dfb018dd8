"""Unique readable node names, handed out as torch.fx does: ``add``, ``add_1``, ``add_2``."""

from __future__ import annotations


class Namespace:
    """Hands out unique readable names: ``add``, ``add_1``, ``add_2`` (as torch.fx does)."""

    __slots__ = ("_used", "_clean")

    def __init__(self) -> None:
        self._used: dict[str, int] = {}
        self._clean: dict[str, str] = {}

    def __call__(self, base: str) -> str:
        if not (base.isascii() and base.isidentifier()):  # checked in C; most names pass
            clean = self._clean.get(base)
            if clean is None:
                clean = self._clean[base] = _sanitize(base)
            base = clean
        n = self._used.get(base)
        if n is None:
            self._used[base] = 0
            return base
        while True:
            n += 1
            candidate = f"{base}_{n}"
            if candidate not in self._used:
                self._used[base] = n
                self._used[candidate] = 0
                return candidate


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

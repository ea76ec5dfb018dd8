"""Choosing modules to tap: by type, by index in iteration order, by qualified-name pattern."""

from __future__ import annotations

import operator
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any

from torch import nn

from ..errors import InvalidInputError, InvalidTypeError, shown

Types = type[nn.Module] | Iterable[type[nn.Module]] | None
Indices = int | Iterable[int] | None
Names = str | Iterable[str] | None


def select(
    model: nn.Module, *, recursive: bool, types: Types = None, indices: Indices = None, names: Names = None
) -> list[tuple[str, nn.Module]]:
    """``(path, module)`` pairs of ``model.named_modules()`` (``recursive``, the root
    included as ``""``) or ``model.named_children()`` that pass every given filter."""
    if not isinstance(model, nn.Module):
        raise InvalidTypeError(f"model must be a torch.nn.Module, got {type(model).__name__}: {shown(model)}")
    candidates = list(model.named_modules() if recursive else model.named_children())
    type_tuple = _types(types)
    index_set = _indices(indices, len(candidates))
    patterns = _patterns(names, [path for path, _ in candidates])
    return [
        (path, module)
        for i, (path, module) in enumerate(candidates)
        if (type_tuple is None or isinstance(module, type_tuple))
        and (index_set is None or i in index_set)
        and (patterns is None or any(fnmatchcase(path, p) for p in patterns))
    ]


def _types(types: Types) -> tuple[type[nn.Module], ...] | None:
    if types is None:
        return None
    one = "a torch.nn.Module subclass"
    entries: tuple[Any, ...] = (types,) if isinstance(types, type) else tuple(_iterable("types", types, one))
    for t in entries:
        if not (isinstance(t, type) and issubclass(t, nn.Module)):
            raise InvalidTypeError(f"types entries must be torch.nn.Module subclasses (nn.Linear, ...), got {t!r}")
    return entries


def _indices(indices: Indices, count: int) -> set[int] | None:
    if indices is None:
        return None
    given: list[Any] = [indices] if _is_index(indices) else list(_iterable("indices", indices, "an int"))
    for i in given:
        if not _is_index(i):
            raise InvalidTypeError(f"indices must be ints, got {shown(i)}")
    entries = [operator.index(i) for i in given]  # numpy integers too
    for i in entries:
        if not 0 <= i < count:
            raise InvalidInputError(f"module index {i} out of range (must be in 0..{count - 1} for {count} modules)")
    return set(entries)


def _patterns(names: Names, paths: list[str]) -> list[str] | None:
    if names is None:
        return None
    entries: list[Any] = [names] if isinstance(names, str) else list(_iterable("names", names, "a str pattern"))
    for p in entries:
        if not isinstance(p, str):
            raise InvalidTypeError(f"names must be strings (fnmatch patterns like 'layer*.conv1'), got {p!r}")
        if not any(fnmatchcase(path, p) for path in paths):
            shown = ", ".join(repr(path) for path in paths[:12]) + (", ..." if len(paths) > 12 else "")
            raise InvalidInputError(f"names pattern {p!r} matches no module (paths: {shown})")
    return entries


def _is_index(i: Any) -> bool:
    """An int, a numpy integer or a one-element integer tensor (not a bool)."""
    if isinstance(i, bool):
        return False
    try:
        operator.index(i)
    except TypeError:
        return False
    return True


def _iterable(what: str, value: Any, one: str) -> Iterable[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidTypeError(f"{what} must be {one} or a list of them, got {type(value).__name__}: {shown(value)}")
    return value

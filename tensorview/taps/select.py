"""Choosing modules to tap: by type, by index in iteration order, by qualified-name pattern."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

from torch import nn

from ..errors import InvalidInputError, InvalidTypeError

Types = type[nn.Module] | Iterable[type[nn.Module]] | None
Indices = int | Iterable[int] | None
Names = str | Iterable[str] | None


def select(
    model: nn.Module, *, recursive: bool, types: Types = None, indices: Indices = None, names: Names = None
) -> list[tuple[str, nn.Module]]:
    """``(path, module)`` pairs of ``model.named_modules()`` (``recursive``, the root
    included as ``""``) or ``model.named_children()`` that pass every given filter."""
    if not isinstance(model, nn.Module):
        raise InvalidTypeError(f"model must be a torch.nn.Module, got {type(model).__name__}: {model!r:.80}")
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
    entries = (types,) if isinstance(types, type) else tuple(types)
    for t in entries:
        if not (isinstance(t, type) and issubclass(t, nn.Module)):
            raise InvalidTypeError(f"types entries must be torch.nn.Module subclasses (nn.Linear, ...), got {t!r}")
    return entries


def _indices(indices: Indices, count: int) -> set[int] | None:
    if indices is None:
        return None
    entries = [indices] if isinstance(indices, int) else list(indices)
    for i in entries:
        if isinstance(i, bool) or not isinstance(i, int):
            raise InvalidTypeError(f"indices must be ints, got {i!r}")
        if not 0 <= i < count:
            raise InvalidInputError(f"module index {i} out of range (must be in 0..{count - 1} for {count} modules)")
    return set(entries)


def _patterns(names: Names, paths: list[str]) -> list[str] | None:
    if names is None:
        return None
    entries = [names] if isinstance(names, str) else list(names)
    for p in entries:
        if not isinstance(p, str):
            raise InvalidTypeError(f"names must be strings (fnmatch patterns like 'layer*.conv1'), got {p!r}")
        if not any(fnmatchcase(path, p) for path in paths):
            shown = ", ".join(repr(path) for path in paths[:12]) + (", ..." if len(paths) > 12 else "")
            raise InvalidInputError(f"names pattern {p!r} matches no module (paths: {shown})")
    return entries

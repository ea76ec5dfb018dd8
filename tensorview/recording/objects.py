"""The tensors held by objects that are not value containers: types registered with
``torch.utils._pytree`` other than lists, tuples, dicts and dataclasses (a KV cache a user
registered for ``torch.export``), and plain objects' attributes (``__dict__`` and
``__slots__``: torchvision's ``ImageList``, a ``Box`` holding a tensor).

Such objects are never copied or rebuilt: a callee may mutate them (a KV cache is updated
in place) and the caller may rely on their identity.  ``visit`` only hands each tensor to
a function.  The walk is bounded: each object once (cycles), containers at most
``MAX_DEPTH`` deep, plain objects nested at most ``MAX_OBJECT_DEPTH`` deep, at most
``MAX_VISITS`` values per walk; modules, classes, functions and other callables, Python
modules, enums, sets and tensors' own attributes are never walked.
"""

from __future__ import annotations

import dataclasses
import enum
import types
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.utils._pytree as pytree

_Tensor = torch.Tensor
MAX_DEPTH = 32
MAX_OBJECT_DEPTH = 4
MAX_VISITS = 10_000
#: values that hold no tensor
SCALARS = (str, bytes, int, float, bool, complex, torch.dtype, torch.device, torch.Size)
#: objects that are never walked (besides callables: modules, functions, classes)
_OPAQUE = (types.ModuleType, enum.Enum, set, frozenset, range, slice, torch.UntypedStorage, torch.TypedStorage)
_SUPPORTED = pytree.SUPPORTED_NODES
_node_type = pytree._get_node_type


def pytree_node(obj: Any) -> Any:
    """The ``torch.utils._pytree`` node definition of ``obj``'s type (namedtuples and
    structseqs included), or ``None`` when pytree treats it as a leaf."""
    return _SUPPORTED.get(_node_type(obj))


def key_name(key: Any) -> str:
    """A pytree key entry as a path part: ``MappingKey`` -> key, ``SequenceKey`` -> index,
    ``GetAttrKey`` -> attribute name."""
    for attr in ("key", "idx", "name"):
        if hasattr(key, attr):
            return str(getattr(key, attr))
    return str(key)


def pytree_children(node: Any, obj: Any) -> tuple[list[tuple[str, Any]], Any]:
    """``([(path part, child)], context)`` of ``obj`` by its pytree functions."""
    if node.flatten_with_keys_fn is not None:
        pairs, context = node.flatten_with_keys_fn(obj)
        return [(key_name(k), v) for k, v in pairs], context
    children, context = node.flatten_fn(obj)
    return [(str(i), v) for i, v in enumerate(children)], context


class Walk:
    """The state of one walk: objects seen (each is walked once), values left, and the
    objects it was started on (``roots``)."""

    __slots__ = ("seen", "left", "roots")

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.left = MAX_VISITS
        self.roots: list[Any] = []


def visit(obj: Any, fn: Callable[..., Any], with_path: bool, path: str, walk: Walk, depth: int = 0) -> None:
    """Call ``fn(t)`` (``fn(t, path)`` with ``with_path``) for each tensor ``t`` held by
    ``obj``, each tensor once per walk; nothing is copied or changed."""
    walk.roots.append(obj)
    _visit(obj, fn, with_path, path, walk, depth, 0)


def _visit(obj: Any, fn: Callable[..., Any], with_path: bool, path: str, walk: Walk, depth: int, odepth: int) -> None:
    if walk.left <= 0:
        return
    walk.left -= 1
    if isinstance(obj, _Tensor):
        if id(obj) not in walk.seen:
            walk.seen.add(id(obj))
            if with_path:
                fn(obj, path)
            else:
                fn(obj)
        return
    if obj is None or depth > MAX_DEPTH or id(obj) in walk.seen:
        return
    kind, names = kind_of(obj)
    if kind == SKIP:
        return
    walk.seen.add(id(obj))
    items: Iterable[tuple[Any, Any]]
    if kind == MAP:
        items = obj.items()
    elif kind == SEQ:
        items = zip(names or range(len(obj)), obj)
    else:
        if odepth >= MAX_OBJECT_DEPTH:
            return
        odepth += 1
        items = _object_items(obj, kind, names)
    sep = "_" if path else ""
    for k, v in items:
        if v is None or type(v) in _QUICK:  # skip the common scalars quickly
            walk.left -= 1
            continue
        _visit(v, fn, with_path, f"{path}{sep}{k}" if with_path else "", walk, depth + 1, odepth)
        if walk.left <= 0:
            return


SKIP, SEQ, MAP, TREE, DATA, PLAIN = range(6)
_QUICK = frozenset({int, float, bool, str})
#: type -> (size of the pytree registry when looked at, kind, field or slot names)
_KINDS: dict[type, tuple[int, int, tuple[str, ...]]] = {}


def kind_of(obj: Any) -> tuple[int, tuple[str, ...]]:
    """How to walk ``obj`` (``SKIP``, ``SEQ``, ``MAP``, ``DATA``, ``TREE``: another pytree
    node, ``PLAIN``: another object) and its field or slot names, decided once per type
    (again after a pytree registration)."""
    t = type(obj)
    n = len(_SUPPORTED)
    hit = _KINDS.get(t)
    if hit is not None and hit[0] == n:
        return hit[1], hit[2]
    names: tuple[str, ...] = ()
    if issubclass(t, dict):
        kind = MAP
    elif issubclass(t, (list, tuple)):
        kind = SEQ
        names = tuple(getattr(t, "_fields", ()) or ())
    elif callable(obj) or issubclass(t, _OPAQUE) or issubclass(t, SCALARS):
        kind = SKIP
    elif dataclasses.is_dataclass(t):
        kind, names = DATA, tuple(f.name for f in dataclasses.fields(t))
    elif t in _SUPPORTED:
        kind = TREE
    else:
        kind, names = PLAIN, _slot_names(t)
    _KINDS[t] = (n, kind, names)
    return kind, names


def _object_items(obj: Any, kind: int, names: tuple[str, ...]) -> list[tuple[Any, Any]]:
    if kind == TREE:
        try:
            return pytree_children(_SUPPORTED[type(obj)], obj)[0]
        except Exception:  # a flatten function that fails on this value: walk it as an object
            return _attributes(obj, _slot_names(type(obj)))
    if kind == DATA:
        return [(k, getattr(obj, k, None)) for k in names]
    return _attributes(obj, names)


def _attributes(obj: Any, slots: tuple[str, ...]) -> list[tuple[str, Any]]:
    """An object's attributes: its ``__dict__`` (read without ``__getattr__``) and its
    filled ``slots``."""
    try:
        d = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        d = None
    items = list(d.items()) if isinstance(d, dict) else []
    for name in slots:
        try:
            items.append((name, object.__getattribute__(obj, name)))
        except AttributeError:  # an empty slot
            continue
    return items


_SLOTS: dict[type, tuple[str, ...]] = {}


def _slot_names(t: type) -> tuple[str, ...]:
    """The ``__slots__`` of ``t`` and its bases (private names mangled)."""
    hit = _SLOTS.get(t)
    if hit is not None:
        return hit
    names: list[str] = []
    for cls in t.__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):
                name = f"_{cls.__name__.lstrip('_')}{name}"
            names.append(name)
    out = _SLOTS[t] = tuple(names)
    return out


def slot_items(obj: Any) -> list[tuple[str, Any]]:
    """``(attribute, value)`` for each filled slot of ``obj`` (for tree.py's in-place strip)."""
    out = []
    for name in _slot_names(type(obj)):
        try:
            out.append((name, object.__getattribute__(obj, name)))
        except AttributeError:
            continue
    return out

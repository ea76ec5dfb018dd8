"""Map a function over every tensor in a nested Python value, rebuilding containers only
where something changed.

Value containers are rebuilt: list, tuple, dict and their subclasses, namedtuples,
structseqs, dataclass instances.  Those ``torch.utils._pytree`` knows (namedtuples,
structseqs, ``OrderedDict``, ``defaultdict``, Hugging Face ``ModelOutput``, dataclasses
registered for ``torch.export``) are taken apart and rebuilt by their pytree functions.

Other objects holding tensors (other pytree node types, plain objects' attributes such as
torchvision's ``ImageList``) are never copied or rebuilt (objects.py): with
``objects=fn``, each of their tensors is handed to ``fn`` and the object is kept as is;
without it they are left alone."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from .objects import (
    MAP,
    MAX_DEPTH,
    PLAIN,
    SEQ,
    SKIP,
    TREE,
    Walk,
    kind_of,
    pytree_children,
    pytree_node,
    slot_items,
    visit,
)

_Tensor = torch.Tensor
_MAX_DEPTH = MAX_DEPTH
#: plain values, never containers (a fast first test)
_VALUES = frozenset({type(None), bool, int, float, str})


def map_tensors(
    obj: Any,
    fn: Callable[..., torch.Tensor],
    *,
    with_path: bool = False,
    objects: Callable[..., Any] | None = None,
    walk: Walk | None = None,
    notes: list[Any] | None = None,
) -> Any:
    """Return ``obj`` with each tensor ``t`` replaced by ``fn(t)`` (or ``fn(t, path)`` with
    ``with_path``, where path is ``"0_key"``-style).  Unchanged containers are returned as
    the same object, so the caller's values are never rebuilt or altered needlessly.
    ``objects``: called (like ``fn``) on each tensor held by other objects, which are kept;
    ``walk``: the bounds of that walk, shared between calls (``walk.roots`` lists the objects
    walked); ``notes``: without ``objects``, the objects met are appended to it."""
    return _map(obj, fn, with_path, "", 0, objects, walk if objects is not None else notes)


def _map(
    obj: Any,
    fn: Callable[..., Any],
    with_path: bool,
    path: str,
    depth: int,
    objects: Callable[..., Any] | None,
    walk: Any,
) -> Any:
    if isinstance(obj, _Tensor):
        return fn(obj, path) if with_path else fn(obj)
    t = type(obj)
    if t in _VALUES or depth > _MAX_DEPTH:
        return obj
    sep = "_" if path else ""
    if t is list or t is tuple:
        if with_path:
            items = [_map(v, fn, True, f"{path}{sep}{k}", depth + 1, objects, walk) for k, v in enumerate(obj)]
        else:  # (no paths to make, and a tensor mapped here: a list of tensors is the common case)
            d = depth + 1
            items = [fn(v) if isinstance(v, _Tensor) else _map(v, fn, False, "", d, objects, walk) for v in obj]
        return obj if all(a is b for a, b in zip(items, obj)) else t(items)
    if t is dict:
        new = {k: _map(v, fn, with_path, f"{path}{sep}{k}", depth + 1, objects, walk) for k, v in obj.items()}
        return obj if all(new[k] is v for k, v in obj.items()) else new
    kind = kind_of(obj)[0]
    if kind == SKIP:
        return obj
    if kind in (TREE, PLAIN):  # other objects: their tensors are handed over, the object kept
        if objects is not None:
            visit(obj, objects, with_path, path, walk or Walk(), depth)
        elif walk is not None:
            walk.append(obj)  # ``notes``: noted, not walked
        return obj
    node = pytree_node(obj)  # list/tuple/dict subclasses and dataclasses: rebuilt
    if node is not None:
        children, context = pytree_children(node, obj)
        values = [_map(v, fn, with_path, f"{path}{sep}{k}", depth + 1, objects, walk) for k, v in children]
        if all(a is b for a, (_, b) in zip(values, children)):
            return obj
        return node.unflatten_fn(values, context)
    if kind == SEQ:
        keys = getattr(obj, "_fields", None) or range(len(obj))
        items = [_map(v, fn, with_path, f"{path}{sep}{k}", depth + 1, objects, walk) for k, v in zip(keys, obj)]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
            return t(*items)
        try:
            return t(items)  # list/tuple subclasses
        except TypeError:
            return t(*items)
    if kind == MAP:
        new = {k: _map(v, fn, with_path, f"{path}{sep}{k}", depth + 1, objects, walk) for k, v in obj.items()}
        if all(new[k] is v for k, v in obj.items()):
            return obj
        try:
            out = t(**new) if dataclasses.is_dataclass(t) else t(new)
        except TypeError:
            out = t(new)
        return out
    changes = {}  # a dataclass
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        nv = _map(v, fn, with_path, f"{path}{sep}{f.name}", depth + 1, objects, walk)
        if nv is not v:
            changes[f.name] = nv
    if not changes:
        return obj
    try:
        return dataclasses.replace(obj, **changes)
    except (TypeError, ValueError):
        import copy

        new_obj = copy.copy(obj)
        for k, v in changes.items():
            object.__setattr__(new_obj, k, v)
        return new_obj


_ATOMS = (str, bytes, int, float, bool, complex, type(None), type, torch.dtype, torch.device)
#: the same, for a test of ``type(x)`` (a value of one of these holds no tensor)
ATOM_TYPES = frozenset(_ATOMS)
_MODULE_INTERNALS = frozenset({"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"})


def strip_in_place(obj: Any, is_ours: Callable[[Any], bool], fix: Callable[[Any], Any], *, objects: bool = True) -> Any:
    """Replace, in place, every tensor ``t`` with ``is_ours(t)`` found in mutable containers
    and object attributes reachable from ``obj`` by ``fix(t)``; tuples holding one are
    rebuilt and put back in their parent.  Used so no recorded tensor survives in a cache
    object a model returned or updated, or in an attribute a forward stored on a module.
    ``objects=False`` walks only lists, dicts and tuples (not arbitrary objects).
    Returns ``obj``, or its replacement when ``obj`` itself is a tensor or a tuple."""
    return _strip(obj, is_ours, fix, objects, set(), 0)


def _strip(
    obj: Any, is_ours: Callable[[Any], bool], fix: Callable[[Any], Any], objects: bool, seen: set[int], depth: int
) -> Any:
    """Returns a replacement for ``obj`` (or ``obj`` itself when fixed in place)."""
    if isinstance(obj, _Tensor):
        return fix(obj) if is_ours(obj) else obj
    if isinstance(obj, _ATOMS) or depth > 8 or id(obj) in seen:
        return obj
    seen.add(id(obj))
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            nv = _strip(v, is_ours, fix, objects, seen, depth + 1)
            if nv is not v:
                obj[i] = nv
        return obj
    if isinstance(obj, dict):
        for k, v in list(obj.items()):
            nv = _strip(v, is_ours, fix, objects, seen, depth + 1)
            if nv is not v:
                obj[k] = nv
        return obj
    if isinstance(obj, tuple):
        items = [_strip(v, is_ours, fix, objects, seen, depth + 1) for v in obj]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        return map_tensors(obj, lambda t: fix(t) if is_ours(t) else t)
    if not objects:
        return obj
    if callable(obj):  # modules, functions, classes
        return obj
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        for k, v in list(d.items()):
            if k in _MODULE_INTERNALS:
                continue
            nv = _strip(v, is_ours, fix, objects, seen, depth + 1)
            if nv is not v:
                d[k] = nv
    for k, v in slot_items(obj):
        nv = _strip(v, is_ours, fix, objects, seen, depth + 1)
        if nv is not v:
            object.__setattr__(obj, k, nv)
    return obj


def flat_tensors(obj: Any, *, objects: bool = False) -> list[torch.Tensor]:
    """The tensors inside a nested value, in traversal order (what ``map_tensors`` visits);
    ``objects``: also those held by other objects."""
    found: list[torch.Tensor] = []

    def see(t: torch.Tensor) -> torch.Tensor:
        found.append(t)
        return t

    map_tensors(obj, see, objects=see if objects else None)
    return found


def output_names(obj: Any) -> dict[int, tuple[str, str]]:
    """``id(tensor) -> (name, field)`` for the tensors of a returned value, as Python would
    reach them: ``logits``, ``output[0]``, ``past_key_values.layers[3].keys`` (attributes
    of plain objects such as a KV cache included).  ``field`` is the top-level part:
    the dict key or dataclass field, ``output[i]`` for a returned tuple's element,
    ``output`` for a returned tensor.  The first place a tensor is found names it."""
    found: dict[int, tuple[str, str]] = {}
    _names(obj, (), found, set(), 0)
    return found


def _names(obj: Any, path: tuple[Any, ...], found: dict[int, tuple[str, str]], seen: set[int], depth: int) -> None:
    if isinstance(obj, _Tensor):
        if id(obj) not in found:
            found[id(obj)] = _path_text(path)
        return
    if isinstance(obj, _ATOMS) or depth > 8 or id(obj) in seen:
        return
    seen.add(id(obj))
    items: Any
    if isinstance(obj, (list, tuple)):
        fields = getattr(obj, "_fields", None)
        items = zip(fields, obj) if fields else enumerate(obj)
    elif isinstance(obj, dict):
        items = obj.items()
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        items = ((f.name, getattr(obj, f.name, None)) for f in dataclasses.fields(obj))
    else:
        d = getattr(obj, "__dict__", None)
        if not isinstance(d, dict) or callable(obj):
            return
        items = ((k, v) for k, v in d.items() if k not in _MODULE_INTERNALS)
    for k, v in items:
        _names(v, (*path, k), found, seen, depth + 1)


def _path_text(path: tuple[Any, ...]) -> tuple[str, str]:
    if not path:
        return "output", "output"
    head = path[0]
    field = f"output[{head}]" if isinstance(head, int) else str(head)
    parts = [field]
    for k in path[1:]:
        parts.append(f"[{k}]" if isinstance(k, int) else f".{k}")
    return "".join(parts), field

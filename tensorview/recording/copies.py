"""A copy of the module tree to run in another mode without touching the caller's model.

``draw_graph(mode="eval")`` of a model in training mode must not flip the caller's
flags (another thread training the same model would see them flipped), and a forward in
training mode must not update the caller's BatchNorm statistics.  ``tree_copy`` makes a
new object for every module of the tree (its own ``training`` flag, its own
``_modules``/``_parameters``/``_buffers`` dicts and hook dicts), holding the *same*
Parameter objects, buffers and other attributes: no parameter memory is copied and the
graph (module paths, parameter names and roles) is the one of the model itself.  A
plain list, dict or set attribute gets a container of its own (holding the same items),
so what a forward adds to a cache kept there stays in the copy (LeViT fills
``self.ab`` in eval mode and clears it only when set to training mode again: the
caller's model would later read a bias computed from old weights); a container shared
by several modules stays shared among their copies.  ``own_buffers`` then clones the
buffers, which a forward may update (BatchNorm in training mode, a step counter or a
static KV cache in any mode).

A forward may reach a module other than through the tree: a function or lambda made in
``__init__`` that closes over ``self.mlp`` (torchview's custom-attention fixture), a
global, an object that is not a module.  Those references still lead to the caller's
modules, whatever the copy does, so every copy made for a recording is remembered with
its original (``remember``), and the session runs the copy of any module of the original
that is called while it records (``stand_ins``): the call runs in the copy's mode, on
the copy's device and buffers, and is named by the module's path.
"""

from __future__ import annotations

import copy
import weakref
from typing import Any

import torch
from torch import nn

from .optable import MODULE_ATTRS

#: the hook registries of a module (dicts keyed by handle id)
HOOK_DICTS = tuple(k for k, v in nn.Module().__dict__.items() if "hook" in k and isinstance(v, dict))


def tree_copy(model: nn.Module) -> nn.Module:
    """The module tree copied, everything else shared (see the module docstring).  Shared
    submodules stay shared; a registered submodule also kept in a plain list, tuple or
    dict attribute is replaced there by its copy (in a new container).  TorchScript
    modules keep their flags inside TorchScript, so they are deep-copied."""
    memo: dict[int, nn.Module] = {}
    containers: dict[int, tuple[Any, Any]] = {}
    copied: list[tuple[nn.Module, nn.Module]] = []
    stack = [model]
    while stack:  # every module copied first (a walk, not recursion: any depth)...
        m = stack.pop()
        if id(m) in memo:
            continue
        c = memo[id(m)] = _shallow(m)
        if not isinstance(m, torch.jit.ScriptModule):
            copied.append((m, c))
            stack.extend(v for v in reversed(m._modules.values()) if v is not None)
    for m, c in copied:  # ...then linked: children and attributes name the copies
        d = c.__dict__
        d["_modules"] = {k: (None if v is None else memo[id(v)]) for k, v in m._modules.items()}
        for k in d.keys() - MODULE_ATTRS:
            d[k] = _attribute(d[k], memo, containers)
    return memo[id(model)]


def _shallow(m: nn.Module) -> nn.Module:
    """A new object for ``m`` with its own ``_parameters``, ``_buffers`` and hook dicts
    (``_modules`` and attributes still the original's); a TorchScript module deep-copied.
    (An FSDP2 model is copied without FSDP's hooks, unsharded.py: theirs would write the
    original modules' ``_parameters``.)"""
    c: nn.Module
    if isinstance(m, torch.jit.ScriptModule):
        return copy.deepcopy(m)
    try:  # the object as it is: no __new__, __copy__ or __getstate__ of the class runs
        c = object.__new__(type(m))
        c.__dict__.update(m.__dict__)
    except TypeError:
        c = copy.copy(m)
    d = c.__dict__
    d["_parameters"] = dict(m._parameters)
    d["_buffers"] = dict(m._buffers)
    for k in HOOK_DICTS:  # hooks registered on the copy stay on the copy
        v = d.get(k)
        if isinstance(v, dict):
            d[k] = v.copy()
    return c


def _attribute(value: Any, memo: dict[int, nn.Module], containers: dict[int, tuple[Any, Any]]) -> Any:
    """A plain attribute of a copied module: the copies in place of modules, and a plain
    list, dict or set in a container of its own, one per original container (kept in
    ``containers`` with the original, whose id must stay its own)."""
    if not isinstance(value, (list, dict, set)):
        return _swap(value, memo, 0)
    done = containers.get(id(value))
    if done is None:
        new = value if isinstance(value, set) else _swap(value, memo, 0)
        done = containers[id(value)] = (value, copy.copy(value) if new is value else new)
    return done[1]


def _swap(value: Any, memo: dict[int, nn.Module], depth: int) -> Any:
    """``value`` with the copied modules in place of the originals, in new containers."""
    if isinstance(value, nn.Module):
        return memo.get(id(value), value)
    if depth > 2 or type(value) not in (list, tuple, dict):
        return value
    if isinstance(value, dict):
        new = {k: _swap(v, memo, depth + 1) for k, v in value.items()}
        return new if any(new[k] is not v for k, v in value.items()) else value
    items = [_swap(v, memo, depth + 1) for v in value]
    return type(value)(items) if any(a is not b for a, b in zip(items, value)) else value


#: copy -> {id(module of the original): (that module, a weak reference to its copy)}, for as
#: long as the copy lives (the originals are held, so their ids stay theirs; the copies
#: are not: a copy's submodule holding its root would keep the key alive)
_STAND_INS: weakref.WeakKeyDictionary[nn.Module, dict[int, tuple[nn.Module, Any]]] = weakref.WeakKeyDictionary()


def remember(original: nn.Module, clone: nn.Module) -> nn.Module:
    """Note that ``clone`` is a copy of ``original`` (same module paths); returns ``clone``."""
    if clone is not original:
        copies = dict(clone.named_modules(remove_duplicate=False))
        pairs = {}
        for name, m in original.named_modules(remove_duplicate=False):
            c = copies.get(name)
            if c is not None and c is not m:
                pairs[id(m)] = (m, weakref.ref(c))
        _STAND_INS[clone] = pairs
    return clone


def stand_ins(clone: nn.Module) -> dict[int, tuple[nn.Module, nn.Module]] | None:
    """For a copy made by ``remember``: ``id(original module) -> (original, copy)``."""
    pairs = _STAND_INS.get(clone)
    if not pairs:
        return None
    found = {k: (m, ref()) for k, (m, ref) in pairs.items()}
    return {k: v for k, v in found.items() if v[1] is not None} or None


def own_buffers(model: nn.Module) -> None:
    """Give every module of ``model`` (a ``tree_copy``) its own copy of its buffers (tied
    buffers stay tied), so that a forward writing them (BatchNorm in training, a step
    counter, a KV cache) leaves the original's alone."""
    clones: dict[int, torch.Tensor] = {}
    for m in model.modules():
        if isinstance(m, torch.jit.ScriptModule):
            continue
        for k, b in m._buffers.items():
            if b is not None:
                if id(b) not in clones:
                    clones[id(b)] = b.detach().clone()
                m._buffers[k] = clones[id(b)]


__all__ = ["HOOK_DICTS", "own_buffers", "remember", "stand_ins", "tree_copy"]

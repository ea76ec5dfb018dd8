"""Parameter accounting: per module call and model-wide.

A lazy module's parameters (``nn.LazyLinear`` before its first forward) have no shape
yet and count 0.  Every total counts a parameter once, however many modules hold it or calls use it (tied
embeddings, weight sharing, one module registered under two names): a parameter is one
``nn.Parameter`` object, as in ``model.parameters()``.  ``trainable`` counts those with
``requires_grad``.  Buffers are counted apart (elements and bytes), never as parameters.

Per module call (:func:`module_params`), a row gives the module's own parameters,
recursively (each once), and, when some of them are also held by a module outside its
subtree (``lm_head`` and ``transformer.wte`` of GPT-2, or two names of one module), the
paths of those modules and how many of its elements they share.  A call of a module
object that was already called (a Linear applied twice, a second name of a module) is
marked ``repeat``: its parameters were counted at the first call.

The training-memory estimate built on these totals is in :mod:`.training`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from .paramtree import plain_tree, tensor_figures

__all__ = [
    "ModuleParams",
    "ParamTotals",
    "module_params",
    "module_params_and_totals",
    "param_totals",
]


@dataclasses.dataclass(frozen=True)
class ParamTotals:
    """Model-wide parameter figures, each parameter and buffer counted once."""

    total_params: int
    trainable_params: int
    buffers: int  # elements
    param_bytes: int
    trainable_bytes: int
    buffer_bytes: int

    @property
    def frozen_params(self) -> int:
        return self.total_params - self.trainable_params


def param_totals(model: nn.Module) -> ParamTotals:
    """Unique parameter and buffer counts of ``model`` (works on meta)."""
    params, buffers = _subtree(model, {})
    return _totals(params.values(), buffers.values())


def _totals(params: Iterable[nn.Parameter], buffers: Iterable[torch.Tensor]) -> ParamTotals:
    """:class:`ParamTotals` of these tensors (each given once; lazy ones count 0)."""
    n, trainable, param_bytes, trainable_bytes, n_buffers, buffer_bytes = tensor_figures(params, buffers)
    return ParamTotals(n, trainable, n_buffers, param_bytes, trainable_bytes, buffer_bytes)


@dataclasses.dataclass(frozen=True)
class ModuleParams:
    """The parameters of one module call (its module's, recursively, each once)."""

    path: str
    params: int
    trainable: int
    buffers: int  # elements
    param_bytes: int
    buffer_bytes: int
    #: elements of ``params`` also held by modules outside this module's subtree
    shared_params: int = 0
    #: paths of those modules, sorted
    shared_with: tuple[str, ...] = ()
    #: the same module object was called before: its parameters are already counted
    repeat: bool = False


_new = object.__new__
_set = object.__setattr__


def _row(path: str, n: int, trainable: int, buffers: int, nbytes: int, buffer_bytes: int, repeat: bool) -> ModuleParams:
    """``ModuleParams(path, n, trainable, buffers, nbytes, buffer_bytes, repeat=repeat)``,
    nothing shared, made as ``copy``/``pickle`` make one (its fields set at once: a frozen
    dataclass's ``__init__`` sets each through ``object.__setattr__``, 2.5x the time, and a
    recording makes one per module call)."""
    row = _new(ModuleParams)
    _set(
        row,
        "__dict__",
        {
            "path": path,
            "params": n,
            "trainable": trainable,
            "buffers": buffers,
            "param_bytes": nbytes,
            "buffer_bytes": buffer_bytes,
            "shared_params": 0,
            "shared_with": (),
            "repeat": repeat,
        },
    )
    return row


def _owners(model: nn.Module) -> dict[int, list[str]]:
    """id(parameter) -> paths of every module holding it directly, under every name."""
    owners: dict[int, list[str]] = {}
    for path, m in model.named_modules(remove_duplicate=False):
        for p in m._parameters.values():
            if p is not None:
                paths = owners.get(id(p))
                if paths is None:
                    owners[id(p)] = [path]
                elif path not in paths:
                    paths.append(path)
    return owners


def _inside(path: str, root: str) -> bool:
    return root == "" or path == root or path.startswith(root + ".")


def module_params(model: nn.Module, calls: Iterable[tuple[str, nn.Module]]) -> list[ModuleParams]:
    """One :class:`ModuleParams` per module call, in the order given.

    ``calls`` lists ``(path, module)`` of every module call (the recorded ModuleNodes:
    path and the module object).  Sharing is found among all modules of ``model`` by
    every name they have (``named_modules(remove_duplicate=False)``)."""
    return module_params_and_totals(model, calls)[0]


def module_params_and_totals(
    model: nn.Module, calls: Iterable[tuple[str, nn.Module]]
) -> tuple[list[ModuleParams], ParamTotals]:
    """:func:`module_params` and :func:`param_totals` of ``model``, from one walk of its tree."""
    calls = list(calls)
    tree = plain_tree(model)
    if tree is None:
        return _general(model, calls)
    # no sharing anywhere: a call's figures are its subtree's sums, nothing is shared
    rows: list[ModuleParams] = []
    seen_modules: set[int] = set()
    at = tree.get
    for path, module in calls:
        key = id(module)
        got = at(key, _NOWHERE)
        if got[0] != path:  # (called under another path, or from outside the model)
            return _general(model, calls)
        n, trainable, param_bytes, _, n_buffers, buffer_bytes = got[1]
        rows.append(_row(path, n, trainable, n_buffers, param_bytes, buffer_bytes, key in seen_modules))
        seen_modules.add(key)
    n, trainable, param_bytes, trainable_bytes, n_buffers, buffer_bytes = tree[id(model)][1]
    return rows, ParamTotals(n, trainable, n_buffers, param_bytes, trainable_bytes, buffer_bytes)


_NOWHERE: tuple[None, None] = (None, None)


def _general(model: nn.Module, calls: list[tuple[str, nn.Module]]) -> tuple[list[ModuleParams], ParamTotals]:
    """:func:`module_params_and_totals` for any tree: parameters held by several modules
    or names, modules called under other paths or from outside the model."""
    owners = _owners(model)
    own: dict[int, tuple[list[nn.Parameter], tuple[int, int, int, int, int]]] = {}
    subtrees: dict[int, tuple[dict[int, nn.Parameter], dict[int, torch.Tensor]]] = {}
    seen_modules: set[int] = set()
    rows: list[ModuleParams] = []
    for path, module in calls:
        key = id(module)
        got = own.get(key)
        if got is None:
            got = own[key] = _counts(module, subtrees)
        params, (n, trainable, param_bytes, n_buffers, buffer_bytes) = got
        shared = 0
        others: set[str] = set()
        for p in params:
            held = owners.get(id(p), ())
            if len(held) == 1 and held[0] == path:  # the common case: held by this module alone
                continue
            outside = [o for o in held if not _inside(o, path)]
            if outside:
                shared += p.numel()
                others.update(outside)
        # positional: the fields in their order (keywords cost a frozen dataclass more)
        rows.append(
            ModuleParams(
                path,
                n,
                trainable,
                n_buffers,
                param_bytes,
                buffer_bytes,
                shared,
                tuple(sorted(others)) if others else (),
                key in seen_modules,
            )
        )
        seen_modules.add(key)
    all_params, all_buffers = _subtree(model, subtrees)
    return rows, _totals(all_params.values(), all_buffers.values())


def _subtree(
    module: nn.Module, memo: dict[int, tuple[dict[int, nn.Parameter], dict[int, torch.Tensor]]]
) -> tuple[dict[int, nn.Parameter], dict[int, torch.Tensor]]:
    """``({id: parameter}, {id: buffer})`` of ``module``'s tree, each tensor once, in the
    order of ``module.parameters()``/``buffers()``; made bottom-up and kept in ``memo`` for
    every module below (one walk for all the calls of a model, not one per call), without
    recursion (a tree may be as deep as a forward can run)."""
    got = memo.get(id(module))
    if got is not None:
        return got
    stack: list[tuple[nn.Module, bool]] = [(module, False)]
    while stack:
        m, children_done = stack.pop()
        if id(m) in memo:
            continue
        if not children_done:  # its children first, then itself again
            stack.append((m, True))
            stack.extend((c, False) for c in reversed(m._modules.values()) if c is not None and id(c) not in memo)
            continue
        params: dict[int, nn.Parameter] = {id(p): p for p in m._parameters.values() if p is not None}
        buffers: dict[int, torch.Tensor] = {id(b): b for b in m._buffers.values() if b is not None}
        for c in m._modules.values():
            sub = memo.get(id(c)) if c is not None else None
            if sub is not None:  # None: an ancestor (a module tree with a cycle)
                for k, p in sub[0].items():
                    params.setdefault(k, p)
                for k, b in sub[1].items():
                    buffers.setdefault(k, b)
        memo[id(m)] = (params, buffers)
    return memo[id(module)]


def _counts(
    module: nn.Module, memo: dict[int, tuple[dict[int, nn.Parameter], dict[int, torch.Tensor]]] | None = None
) -> tuple[list[nn.Parameter], tuple[int, int, int, int, int]]:
    """A module's parameters (recursively, each once) and (elements, trainable elements,
    bytes, buffer elements, buffer bytes); a leaf module is read directly (fast path)."""
    got = memo.get(id(module)) if memo is not None else None  # the root's walk made it
    if got is not None or module._modules:
        p_ids, b_ids = got if got is not None else _subtree(module, {} if memo is None else memo)
        params, buffers = list(p_ids.values()), list(b_ids.values())
    else:
        params = list({id(p): p for p in module._parameters.values() if p is not None}.values())
        buffers = list({id(b): b for b in module._buffers.values() if b is not None}.values())
    if any(map(is_lazy, params)) or any(map(is_lazy, buffers)):  # no shape before the first forward: 0
        params = [p for p in params if not is_lazy(p)]
        buffers = [b for b in buffers if not is_lazy(b)]
    n, trainable, nbytes, _, n_buffers, buffer_bytes = tensor_figures(params, buffers)
    return params, (n, trainable, nbytes, n_buffers, buffer_bytes)

"""Parameter accounting in one walk, for a module tree where nothing is shared.

In most models no module, parameter or buffer is reached twice when walking the tree
(by every name, as ``named_modules(remove_duplicate=False)``): then a module's figures,
each tensor once, are plain sums over its subtree, and nothing it holds is held outside
it.  :func:`plain_tree` finds them in one walk, or says the tree is not like that (tied
weights, a module under two names): :mod:`.params` then counts the general way.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn
from torch.nn.parameter import is_lazy

__all__ = ["figures_once", "plain_tree", "tensor_figures"]

_EAGER = (torch.Tensor, nn.Parameter)  # (types that are never lazy: ``is_lazy`` not asked)
_ZERO = [0] * 6
_NONE = [0] * 6  # the figures of every module without parameters, buffers or children (never changed)


def tensor_figures(params: Iterable[torch.Tensor], buffers: Iterable[torch.Tensor]) -> list[int]:
    """:func:`figures_once` of tensors given once each."""
    figures = figures_once(params, buffers, None)
    assert figures is not None  # (nothing is checked without ``seen``)
    return figures


def figures_once(
    params: Iterable[torch.Tensor | None],
    buffers: Iterable[torch.Tensor | None],
    seen: tuple[set[int], set[int]] | None,
) -> list[int] | None:
    """``[params, trainable, param bytes, trainable bytes, buffers, buffer bytes]`` of these
    tensors (Nones skipped), in elements and bytes (lazy ones, with no shape before the
    first forward, count 0).  ``seen``: the ids of the parameters and buffers met so far,
    added to; None (no figures) where one was met before."""
    n = trainable = nbytes = trainable_bytes = n_buffers = buffer_bytes = 0
    for p in params:
        if p is None:
            continue
        if seen is not None:
            i = id(p)
            if i in seen[0]:
                return None
            seen[0].add(i)
        if type(p) not in _EAGER and is_lazy(p):
            continue
        k = p.numel()
        b = k * p.element_size()
        n += k
        nbytes += b
        if p.requires_grad:
            trainable += k
            trainable_bytes += b
    for t in buffers:
        if t is None:
            continue
        if seen is not None:
            i = id(t)
            if i in seen[1]:
                return None
            seen[1].add(i)
        if type(t) not in _EAGER and is_lazy(t):
            continue
        k = t.numel()
        n_buffers += k
        buffer_bytes += k * t.element_size()
    return [n, trainable, nbytes, trainable_bytes, n_buffers, buffer_bytes]


def plain_tree(model: nn.Module) -> dict[int, tuple[str, list[int]]] | None:
    """``{id(module): (its path, figures of its subtree)}`` for every module of ``model``'s
    tree, the figures ``[params, trainable, param bytes, trainable bytes, buffers, buffer
    bytes]`` (lazy tensors count 0; read only), from one walk without recursion; None when a module,
    a parameter or a buffer is reached twice (shared, tied, under two names, in a cycle):
    then sums would count it twice."""
    seen: tuple[set[int], set[int]] = (set(), set())  # ids of the parameters and buffers met
    tree: dict[int, tuple[str, list[int]]] = {}
    order: list[tuple[list[int], list[int] | None]] = []  # (figures, its parent's), parents first
    stack: list[tuple[str, nn.Module, list[int] | None]] = [("", model, None)]
    pop, push = stack.pop, stack.append
    while stack:
        path, m, up = pop()
        key = id(m)
        if key in tree:
            return None
        own, held, children = m._parameters, m._buffers, m._modules
        if not (own or held or children):  # (an activation, a dropout...)
            tree[key] = (path, _NONE)
            continue
        figures = figures_once(own.values(), held.values(), seen)
        if figures is None:  # (a tensor met twice)
            return None
        tree[key] = (path, figures)
        order.append((figures, up))
        if children:
            prefix = path + "." if path else ""
            for name, c in children.items():
                if c is not None:
                    push((prefix + name, c, figures))
    for f, up in reversed(order):  # (every module after all of its subtree)
        if up is not None and f != _ZERO:
            up[0] += f[0]
            up[1] += f[1]
            up[2] += f[2]
            up[3] += f[3]
            up[4] += f[4]
            up[5] += f[5]
    return tree

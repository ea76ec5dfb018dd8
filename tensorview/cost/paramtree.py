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

__all__ = ["plain_tree", "tensor_figures"]

_EAGER = (torch.Tensor, nn.Parameter)  # (types that are never lazy: ``is_lazy`` not asked)
_ZERO = [0] * 6
_NONE = [0] * 6  # the figures of every module without parameters, buffers or children (never changed)


def tensor_figures(params: Iterable[torch.Tensor], buffers: Iterable[torch.Tensor]) -> list[int]:
    """``[params, trainable, param bytes, trainable bytes, buffers, buffer bytes]`` of these
    tensors, each given once, in elements and bytes (lazy ones, with no shape before the
    first forward, count 0)."""
    n = trainable = nbytes = trainable_bytes = n_buffers = buffer_bytes = 0
    for p in params:
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
    params: set[int] = set()
    buffers: set[int] = set()
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
        # (tensor_figures written out, with the check that each tensor is met once)
        n = trainable = nbytes = trainable_bytes = n_buffers = buffer_bytes = 0
        for p in own.values():
            if p is None:
                continue
            i = id(p)
            if i in params:
                return None
            params.add(i)
            if type(p) not in _EAGER and is_lazy(p):
                continue
            k = p.numel()
            b = k * p.element_size()
            n += k
            nbytes += b
            if p.requires_grad:
                trainable += k
                trainable_bytes += b
        for t in held.values():
            if t is None:
                continue
            i = id(t)
            if i in buffers:
                return None
            buffers.add(i)
            if type(t) not in _EAGER and is_lazy(t):
                continue
            k = t.numel()
            n_buffers += k
            buffer_bytes += k * t.element_size()
        figures = [n, trainable, nbytes, trainable_bytes, n_buffers, buffer_bytes]
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

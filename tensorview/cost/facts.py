"""Facts the summary table reads from the model's modules themselves, not from the
recording: kernel size, groups and the parameters a module holds directly (torchinfo's
``kernel_size``/``groups`` columns and ``verbose=2`` rows), and the parameter rows of a
model summarised without a forward pass (``tv.summary(model)``).

Read on the caller's model (never changed) by module path; a module registered under
two names has facts under both.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch import nn

from ..graph import Shape
from .params import module_params
from .row import Row

__all__ = ["ModuleFacts", "ParamFacts", "inner_rows", "module_facts", "static_rows"]


@dataclasses.dataclass(frozen=True)
class ParamFacts:
    """One parameter a module holds directly (its attribute name)."""

    name: str
    shape: Shape
    numel: int
    trainable: bool


@dataclasses.dataclass(frozen=True)
class ModuleFacts:
    """``kernel_size`` (an int or a tuple), ``groups`` (None where the module has none)
    and ``params`` (held directly, in registration order)."""

    kernel_size: Any
    groups: int | None
    params: tuple[ParamFacts, ...]


def _kernel(module: nn.Module) -> Any:
    k = getattr(module, "kernel_size", None)
    if isinstance(k, int) and not isinstance(k, bool):
        return k
    if isinstance(k, (tuple, list)) and all(isinstance(d, int) for d in k):
        return tuple(k)
    return None


def module_facts(model: nn.Module) -> dict[str, ModuleFacts]:
    """Facts of every module of ``model`` by path (every name of a shared module)."""
    out: dict[str, ModuleFacts] = {}
    for path, m in model.named_modules(remove_duplicate=False):
        if path in out:
            continue
        groups = getattr(m, "groups", None)
        params = tuple(
            ParamFacts(name, tuple(p.shape), p.numel(), p.requires_grad)
            for name, p in m._parameters.items()
            if p is not None and not isinstance(p, nn.parameter.UninitializedParameter)
        )
        out[path] = ModuleFacts(
            _kernel(m), groups if isinstance(groups, int) and not isinstance(groups, bool) else None, params
        )
    return out


def _class_name(m: nn.Module) -> str:
    """The class a TorchScript module was scripted from (``Linear``), else the class."""
    original = getattr(m, "original_name", None) if isinstance(m, torch.jit.ScriptModule) else None
    return original if isinstance(original, str) and original else type(m).__name__


def inner_rows(rows: list[Row], opaque: set[int], model: nn.Module) -> list[Row]:
    """``rows`` (recorded calls) with, after each call in ``opaque`` (ids of calls whose
    inside was not recorded: TorchScript), the modules under it from ``model``'s tree
    (:func:`static_rows`, negative ids), as torchinfo lists them."""
    if not opaque:
        return rows
    tree = static_rows(model)
    out: list[Row] = []
    for r in rows:
        out.append(r)
        if r.id in opaque:
            inside = [t for t in tree if t.path.startswith(r.path + ".") or (not r.path and t.path)]
            out.extend(dataclasses.replace(t, id=-1 - t.id) for t in inside)
    return out


def static_rows(model: nn.Module) -> list[Row]:
    """One :class:`Row` per module of ``model`` under each of its names, in registration
    order, as if each were called once (the parameter table; a module under a second
    name is ``repeat``).  Nothing ran: no shapes, FLOPs or bytes."""
    mods = list(model.named_modules(remove_duplicate=False))
    return [
        Row(
            id=i,
            path=path,
            cls=_class_name(m),
            depth=path.count(".") + 1 if path else 0,
            call_index=0,
            output_shapes=(),
            params=p.params,
            trainable_params=p.trainable,
            buffers=p.buffers,
            flops=0,
            uncounted=0,
            activation_bytes=0,
            saved_bytes=None,
            shared_params=p.shared_params,
            shared_with=p.shared_with,
            repeat=p.repeat,
            ran=False,
        )
        for i, ((path, m), p) in enumerate(zip(mods, module_params(model, mods)))
    ]

"""Copies of a model for a recording on another device (``meta``, fake tensors) made from
the module tree instead of ``copy.deepcopy``, and FSDP2 models drawn as the model they shard.

``copy.deepcopy`` is refused by some models: FSDP2 (``fully_shard``) forbids it, and a
module may hold an object that cannot be copied (a lock, a file, a generator).
``moved_tree`` makes the copy from ``tree_copy`` (copies.py: every module copied, its
other attributes shared) and gives each module of the copy ``convert(t)`` of its
parameters, buffers and tensor attributes (in new containers: the caller's are never
touched).

An FSDP2 model keeps each parameter as a shard (a ``DTensor``), and FSDP's forward hooks
all-gather the full parameters before each module runs and free them after.  Recorded as
they run, those hooks drew FSDP's buffers, copies and views (``all_gather_copy_in``,
``split_with_sizes_copy``, ``as_strided``...) in place of the parameters, and on ``meta``
or fake tensors they cannot run at all (their all-gathers read the shards' data).  So an
FSDP2 model is recorded, on every device, as the model it shards: a tree copy without
FSDP's hooks (the caller's model, its FSDP state and its shards are not touched) whose
FSDP parameters are full ones in their global shape and FSDP's compute dtype (gathered
with ``DTensor.full_tensor`` for real values; on ``meta`` and fake tensors made without
memory), each marked with the placement of its shard (``Shard(dim=0) on mesh (4,)``,
dtensors.py draws it).  FSDP's mixed-precision casts of inputs and outputs are kept (as
hooks of the copy).  Not covered: a 2-D mesh (FSDP over tensor parallel) and methods
other than ``forward`` registered with ``register_fsdp_forward_method``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .copies import HOOK_DICTS, tree_copy
from .dtensors import SHARD_PLACEMENT
from .optable import MODULE_ATTRS
from .tree import map_tensors


def moved_tree(
    model: nn.Module,
    convert: Callable[[torch.Tensor], torch.Tensor],
    given: dict[int, torch.Tensor] | None = None,
) -> nn.Module:
    """A ``tree_copy`` of ``model`` holding ``convert(t)`` for each of its parameters,
    buffers and plain tensor attributes (tied ones stay tied; parameters stay
    ``nn.Parameter``\\ s with their ``requires_grad``).  ``given``: ``id(tensor) ->`` its
    replacement, used as it is (FSDP's full parameters)."""
    clone = tree_copy(model)
    memo: dict[int, torch.Tensor] = dict(given or {})
    keep: list[Any] = [model]  # the originals stay alive while their ids are keys of ``memo``

    def moved(t: torch.Tensor) -> torch.Tensor:
        done = memo.get(id(t))
        if done is None:
            keep.append(t)
            with torch.no_grad():
                new = convert(t.detach())
            done = nn.Parameter(new, requires_grad=t.requires_grad) if isinstance(t, nn.Parameter) else new
            memo[id(t)] = done
        return done

    for m in clone.modules():
        if isinstance(m, torch.jit.ScriptModule):  # deep-copied by tree_copy: converted as a whole
            m._apply(lambda t: convert(t.detach()))
            continue
        registries: tuple[dict[str, Any], ...] = (m._parameters, m._buffers)
        for registry in registries:
            for k, t in registry.items():
                if t is not None:
                    registry[k] = moved(t)
        d = m.__dict__
        for k in d.keys() - MODULE_ATTRS:  # new containers (map_tensors): the caller's stay as they are
            if isinstance(d[k], (torch.Tensor, list, tuple, dict)):
                d[k] = map_tensors(d[k], moved)
    return clone


# -- FSDP2 ---------------------------------------------------------------------------------


def fsdp_states(model: nn.Module) -> dict[int, Any]:
    """``id(module) -> FSDPState`` for the modules of ``model`` that ``fully_shard`` was
    applied to (empty unless FSDP was imported)."""
    fsdp = sys.modules.get("torch.distributed.fsdp")
    kind = getattr(fsdp, "FSDPModule", None) if fsdp is not None else None
    if kind is None:
        return {}
    states: dict[int, Any] = {}
    for m in model.modules():
        if isinstance(m, kind):
            try:
                states[id(m)] = m._get_fsdp_state()
            except Exception:  # noqa: BLE001 - no state: nothing of FSDP's to undo on it
                continue
    return states


def full_parameters(
    states: dict[int, Any], gather: Callable[[Any, torch.dtype], torch.Tensor]
) -> tuple[dict[int, torch.Tensor], set[Any]]:
    """``id(sharded parameter) ->`` a full parameter standing for it (``gather(fsdp_param)``,
    marked with the shard's placement), for every parameter the FSDP ``states`` manage; and
    the ids of those states' forward hooks, which the copy must not run."""
    full: dict[int, torch.Tensor] = {}
    hooks: set[int] = set()
    for state in states.values():
        policy = getattr(getattr(state, "_mp_policy", None), "param_dtype", None)
        for name in ("_pre_forward_hook_handle", "_post_forward_hook_handle"):
            handle = getattr(state, name, None)  # one handle, or a group's (``handles``)
            hooks.update(h.id for h in (*getattr(handle, "handles", ()), handle) if hasattr(h, "id"))
        for group in getattr(state, "_fsdp_param_groups", ()):
            for fp in group.fsdp_params:
                shard = fp.sharded_param
                dtype = policy if policy is not None and shard.dtype.is_floating_point else shard.dtype
                with torch.no_grad():
                    p = nn.Parameter(gather(fp, dtype), requires_grad=shard.requires_grad)
                where = ", ".join(repr(x) for x in shard.placements)
                setattr(p, SHARD_PLACEMENT, f"{where} on mesh {tuple(shard.device_mesh.shape)}")
                full[id(shard)] = p
                info = fp._module_info  # a group left unsharded (the root's, after a forward)
                held = info.module._parameters.get(info.param_name)
                if held is not None:
                    full[id(held)] = p
    return full, hooks


def gathered(fp: Any, dtype: torch.dtype) -> torch.Tensor:
    """The full value of FSDP parameter ``fp`` (an all-gather, as FSDP's own forward makes),
    in FSDP's compute ``dtype``."""
    full = fp.sharded_param.detach().full_tensor()
    wait = getattr(full, "wait", None)  # an AsyncCollectiveTensor: its collective waited for
    return (wait() if callable(wait) else full).to(dtype)


def empty_like_full(device: torch.device | None) -> Callable[[Any, torch.dtype], torch.Tensor]:
    """Full FSDP parameters made without data: on ``device`` (``meta``), or on the shard's
    device (``None``: fake ones, made under a fake mode)."""

    def make(fp: Any, dtype: torch.dtype) -> torch.Tensor:
        where = device if device is not None else fp.sharded_param.device
        return torch.empty(fp.sharded_param.shape, dtype=dtype, device=where)

    return make


def unsharded_copy(
    model: nn.Module,
    states: dict[int, Any],
    gather: Callable[[Any, torch.dtype], torch.Tensor],
    convert: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> nn.Module:
    """A tree copy of FSDP2 model ``model`` (``states``: ``fsdp_states(model)``) without
    FSDP's hooks, holding full parameters made by ``gather`` in place of the shards (see
    the module docstring); its other tensors are ``convert(t)`` (shared as they are
    without ``convert``)."""
    full, hooks = full_parameters(states, gather)
    if convert is None:
        clone = tree_copy(model)
        for m in clone.modules():
            params: dict[str, Any] = m._parameters
            for k, p in params.items():
                if p is not None and id(p) in full:
                    params[k] = full[id(p)]
    else:
        clone = moved_tree(model, convert, full)
    for m in clone.modules():  # (the copy's own hook dicts, copies.py)
        for name in HOOK_DICTS:
            registry = m.__dict__.get(name)
            if isinstance(registry, dict):
                for k in hooks.intersection(registry):
                    del registry[k]
    originals = dict(model.named_modules(remove_duplicate=False))
    for name, c in clone.named_modules(remove_duplicate=False):
        state = states.get(id(originals.get(name)))
        if state is not None:
            _cast_hooks(c, state)
    return clone


def _cast_hooks(module: nn.Module, state: Any) -> None:
    """FSDP's mixed-precision casts of inputs and output (``MixedPrecisionPolicy``), as
    hooks of the copy (pure functions of the state's policy)."""
    policy = getattr(state, "_mp_policy", None)
    if policy is None:
        return
    if policy.cast_forward_inputs and policy.param_dtype is not None:
        module.register_forward_pre_hook(
            lambda _m, args, kwargs: state._cast_forward_inputs(args, kwargs), prepend=True, with_kwargs=True
        )
    if policy.output_dtype is not None:
        module.register_forward_hook(lambda _m, _args, out: state._cast_output_dtype(out))


__all__ = ["empty_like_full", "fsdp_states", "gathered", "moved_tree", "unsharded_copy"]

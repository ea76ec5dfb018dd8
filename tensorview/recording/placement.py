"""Model placement for ``draw_graph``: which device to record on, and running a model
there (``meta``) or in another mode without touching the caller's model (on a copy)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from ..errors import InvalidDeviceError, InvalidInputError
from .compiled import rebind_compiled_methods
from .copies import own_buffers, remember, tree_copy
from .inputs import summary
from .optable import MODULE_ATTRS
from .tree import flat_tensors, strip_in_place
from .unsharded import empty_like_full, fsdp_states, gathered, moved_tree, unsharded_copy


def model_device(model: nn.Module) -> torch.device:
    for t in _tensors(model):
        return t.device
    return torch.device("cpu")


def placed(model: nn.Module, device: torch.device | None, mode: str = "same") -> nn.Module:
    """The model to run on ``device`` in ``mode`` (``"eval"``, ``"train"`` or ``"same"``).

    The model itself when it already lives there and the mode changes nothing (no flag
    to flip, no module in training mode) and it has no buffer the forward could write
    (BatchNorm's statistics in training, a step counter, a static KV cache: on ``meta``
    writes change nothing); else a copy: on another device a deep copy whose parameters
    and buffers are there (on ``meta`` it costs no memory), on the same device a copy of
    the module tree sharing the parameters (copies.py) with its own copy of the buffers.
    The mode is set on the copy, and a module of the caller's model that the forward
    reaches other than through the tree (a closure) runs as its copy (copies.py,
    ``remember``).  The caller's model is never moved, and its buffers are
    never written (its parameters are shared: what a forward writes into them in place is
    put back when the recording ends, keep.py)."""
    states = fsdp_states(model)
    if states:  # FSDP2: recorded as the model it shards, on every device (unsharded.py)
        return _unsharded(model, states, device, mode)
    if device is not None and not all(t.device == device for t in _tensors(model)):
        clone = _moved(model, device)  # its buffers are its own already
        if mode != "same":
            clone.train(mode == "train")
        return remember(model, clone)
    unchanged = mode != "train" and not any(m.training for m in model.modules())
    if unchanged and (model_device(model).type == "meta" or next(model.buffers(), None) is None):
        return model
    clone = tree_copy(model)
    rebind_compiled_methods(model, clone)  # a compiled or bound method stored on a module
    if mode != "same":
        clone.train(mode == "train")
    own_buffers(clone)
    return remember(model, clone)


def _unsharded(model: nn.Module, states: dict[int, Any], device: torch.device | None, mode: str) -> nn.Module:
    """The copy of FSDP2 model ``model`` to record (unsharded.py) on ``device`` in ``mode``."""
    if device is not None and device.type == "meta":
        clone = unsharded_copy(model, states, empty_like_full(device), lambda t: t.to(device))
    elif device is not None and not all(t.device == device for t in _tensors(model)):
        clone = unsharded_copy(model, states, lambda fp, dtype: gathered(fp, dtype).to(device), lambda t: t.to(device))
    else:
        clone = unsharded_copy(model, states, gathered)
        own_buffers(clone)
    rebind_compiled_methods(model, clone)
    if mode != "same":
        clone.train(mode == "train")
    return remember(model, clone)


def _moved(model: nn.Module, device: torch.device) -> nn.Module:
    """A deep copy of ``model`` with its parameters and buffers on ``device`` (a copy of
    its module tree, unsharded.py, when it cannot be deep-copied)."""
    if device.type != "meta":
        meta = next((n for n, t in _named_tensors(model) if t.device.type == "meta"), None)
        if meta is not None:
            raise InvalidInputError(
                f"cannot record {type(model).__name__} on {device}: its parameters are on the meta "
                f"device and hold no data (e.g. {meta!r}), so they cannot be copied to {device}; "
                "record with device='meta' (shapes only, no memory), or give the model real "
                f"weights first (model.to_empty(device={str(device)!r}), then load_state_dict)"
            )
    memo: dict[int, Any] = {}
    for t in _tensors(model):
        if id(t) in memo:
            continue
        moved = t.detach().to(device)
        memo[id(t)] = nn.Parameter(moved, requires_grad=t.requires_grad) if isinstance(t, nn.Parameter) else moved
    for t in computed_attributes(model):
        memo[id(t)] = t.detach().to(device)
    try:  # children first: each module's copy finds its children's in ``memo`` (no recursion
        # through the tree, so a model nested as deep as its forward runs can be copied)
        for m in reversed(preorder(model)):
            copy.deepcopy(m, memo)
        clone = copy.deepcopy(model, memo)
    except Exception:  # noqa: BLE001 - refused (a lock, a generator...): the tree copied instead
        clone = moved_tree(model, lambda t: t.to(device))
        rebind_compiled_methods(model, clone)
        return clone
    rebind_compiled_methods(model, clone)  # m.forward = torch.compile(m.forward): run the copy
    # plain tensor attributes (not parameters or buffers) were deep-copied where they
    # were; on the copy, move them too, so `x * self.mask` works on the device
    for m in clone.modules():
        d = m.__dict__
        for k in d.keys() - MODULE_ATTRS:
            if isinstance(d[k], (torch.Tensor, list, tuple, dict)):
                d[k] = strip_in_place(d[k], lambda t: t.device != device, lambda t: t.to(device), objects=False)
    return clone


def preorder(model: nn.Module) -> list[nn.Module]:
    """The modules of ``model``'s tree, each once, parents before their children (a walk
    without recursion)."""
    seen: set[int] = set()
    order: list[nn.Module] = []
    stack = [model]
    while stack:
        m = stack.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        order.append(m)
        stack.extend(c for c in reversed(m._modules.values()) if c is not None)
    return order


def computed_attributes(model: nn.Module) -> Iterator[torch.Tensor]:
    """Tensors in modules' plain attributes that autograd computed (not leaves), which
    ``copy.deepcopy`` refuses to copy: ``prune``'s ``weight = weight_orig * mask`` and the
    old ``nn.utils.weight_norm``'s ``weight``, both recomputed by a forward pre-hook, or a
    value a model cached from its parameters.  A copy of the model gets them detached."""
    for m in model.modules():
        for k, v in m.__dict__.items():
            if k not in MODULE_ATTRS and isinstance(v, (torch.Tensor, list, tuple, dict)):
                yield from (t for t in flat_tensors(v) if t.grad_fn is not None)


def _tensors(model: nn.Module) -> Iterator[torch.Tensor]:
    yield from model.parameters()
    yield from model.buffers()


def _named_tensors(model: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    yield from model.named_parameters()
    yield from model.named_buffers()


def as_device(device: Any) -> torch.device | None:
    if device is None:
        return None
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise InvalidDeviceError(f"bad device {summary(device)}: {e}") from e
    _check_available(dev, device)
    return dev


def _check_available(dev: torch.device, given: Any) -> None:
    """An accelerator device must exist here (``cuda`` on a machine without a GPU, or a
    torch build without CUDA, is an error that says which devices there are)."""
    if dev.type in ("cpu", "meta"):
        return
    backend = getattr(torch, dev.type, None)
    is_available = getattr(backend, "is_available", None)
    if not callable(is_available):
        return
    if not is_available():
        raise InvalidDeviceError(
            f"device {summary(given)} is not available here (torch.{dev.type}.is_available() is False: "
            f"no {dev.type} device, or this torch build has no {dev.type} support); use device='cpu', "
            "or device='meta' (records shapes without memory, any model size)"
        )
    count = getattr(backend, "device_count", None)
    if dev.index is not None and callable(count) and dev.index >= count():
        raise InvalidDeviceError(
            f"device {summary(given)} does not exist: there are {count()} {dev.type} device(s), "
            f"indices 0..{count() - 1}"
        )


__all__ = ["as_device", "model_device", "placed", "preorder"]

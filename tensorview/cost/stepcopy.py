"""What ``tv.memory`` (step.py) runs: a copy of the model, its inputs, the optimizer, and
activation checkpointing applied to the copy.

On meta (``device=None`` here) the copy's parameters and buffers are fake tensors made
inside a ``FakeTensorMode``: a real tensor becomes a fake one of the same device, sizes,
strides and storage sharing (``from_tensor``); a tensor on ``meta`` (a model built under
``torch.device("meta")``) a fake tensor on the CPU, so that the step runs the CPU's
kernels (the fused attention the CPU picks, not the math path meta would).  On a real
device the copy has its own parameters and buffers there, since the optimizer step
writes them.  Either way the copy is a ``copy.deepcopy`` given the new tensors in its
memo: tied parameters stay tied, the caller's modules are not touched.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from ..errors import InvalidInputError, InvalidTypeError, choices_error
from ..recording.compiled import rebind_compiled_methods
from ..recording.inputs import summary
from ..recording.optable import MODULE_ATTRS
from ..recording.placement import computed_attributes
from ..recording.tree import flat_tensors, map_tensors, strip_in_place
from .memory import CPUAttentionOnMeta

#: the ``device`` values that predict on fake tensors
FAKE_DEVICES = ("meta", "fake")

#: optimizer names: class name in torch.optim and keyword arguments
OPTIMIZERS: dict[str, tuple[str, dict[str, Any]]] = {
    "adam": ("Adam", {}),
    "adamw": ("AdamW", {}),
    "sgd": ("SGD", {}),
    "sgd_momentum": ("SGD", {"momentum": 0.9}),
    "momentum": ("SGD", {"momentum": 0.9}),
    "rmsprop": ("RMSprop", {}),
    "adagrad": ("Adagrad", {}),
    "adafactor": ("Adafactor", {}),
}


class Copies:
    """Makes the copy of the model and of the inputs: ``where`` is ``"meta"`` (meta
    tensors, fused attention as the CPU runs it: ``CPUAttentionOnMeta``), ``"fake"``
    (``FakeTensorMode``) or a real device.  Modes are entered on ``stack``, the random
    number generators forked there too.  A tensor met twice is copied once."""

    def __init__(self, where: str | torch.device, stack: contextlib.ExitStack) -> None:
        self.dev = where if isinstance(where, torch.device) else None
        self.device_type = self.dev.type if self.dev is not None else "cpu"
        devices = [self.dev] if self.dev is not None and self.dev.type == "cuda" else []
        stack.enter_context(torch.random.fork_rng(devices=devices))
        self.fake_mode: Any = None
        self._made: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        if where == "fake":
            from torch._subclasses.fake_tensor import FakeTensorMode

            self.fake_mode = stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
        elif where == "meta":
            stack.enter_context(CPUAttentionOnMeta())

    def tensor(self, t: torch.Tensor) -> torch.Tensor:
        done = self._made.get(id(t))
        if done is None:
            done = self._made[id(t)] = (t, self._new(t))  # the original kept: its id stays its own
        return done[1]

    def _new(self, t: torch.Tensor) -> torch.Tensor:
        if self.dev is not None:
            return t.detach().to(self.dev, copy=True)
        if self.fake_mode is None:
            return torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device="meta")
        if t.device.type == "meta":
            return torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=self.device_type)
        self.device_type = t.device.type
        return self.fake_mode.from_tensor(t)

    def model(self, model: nn.Module) -> nn.Module:
        if self.dev is not None:
            meta = next((n for n, p in [*model.named_parameters(), *model.named_buffers()] if p.is_meta), None)
            if meta is not None and self.dev.type != "meta":
                raise InvalidInputError(
                    f"cannot measure {type(model).__name__} on {self.dev}: {meta!r} is on the meta "
                    "device and holds no data; use device='meta' to predict the step without memory"
                )
        memo: dict[int, Any] = {}
        for t in [*model.parameters(), *model.buffers()]:
            if id(t) not in memo:
                c = self.tensor(t)
                memo[id(t)] = nn.Parameter(c, requires_grad=t.requires_grad) if isinstance(t, nn.Parameter) else c
        for t in computed_attributes(model):  # deepcopy refuses them (placement.py)
            memo[id(t)] = self.tensor(t)
        try:
            clone = copy.deepcopy(model, memo)
        except Exception as e:  # noqa: BLE001 - any failure means we cannot copy safely
            raise InvalidInputError(
                f"tv.memory cannot copy {type(model).__name__} ({type(e).__name__}: {e}); the step runs on a "
                "copy so that your model is not changed"
            ) from e
        rebind_compiled_methods(model, clone)
        for m in clone.modules():  # plain tensor attributes (masks, caches) go with the copy
            d = m.__dict__
            for k in d.keys() - MODULE_ATTRS:
                if isinstance(d[k], (torch.Tensor, list, tuple, dict)):
                    d[k] = strip_in_place(d[k], self._foreign, self.tensor, objects=False)
        return clone

    def _foreign(self, t: torch.Tensor) -> bool:
        if self.dev is not None:
            return t.device != self.dev
        if self.fake_mode is None:
            return not t.is_meta
        from torch._subclasses.fake_tensor import FakeTensor

        return not isinstance(t, FakeTensor)

    def inputs(self, inputs: Any) -> Any:
        return inputs if self.dev is not None else map_tensors(inputs, self.tensor)


def make_optimizer(params: list[nn.Parameter] | None, spec: Any) -> torch.optim.Optimizer | None:
    """The optimizer ``spec`` names (step.py's docstring) over ``params``; ``params=None``
    only checks ``spec``.  No trainable parameter: no optimizer."""
    if spec is None:
        return None
    if isinstance(spec, str):
        key = spec.lower()
        if key not in OPTIMIZERS or getattr(torch.optim, OPTIMIZERS[key][0], None) is None:
            raise choices_error("optimizer", spec, [k for k, v in OPTIMIZERS.items() if hasattr(torch.optim, v[0])])
        name, kwargs = OPTIMIZERS[key]
        cls: Callable[..., Any] = getattr(torch.optim, name)
        factory: Callable[[list[nn.Parameter]], Any] = lambda ps: cls(ps, **kwargs)  # noqa: E731
    elif callable(spec):
        factory = spec
    else:
        raise InvalidTypeError(
            f"optimizer must be a name ({', '.join(OPTIMIZERS)}), a torch.optim.Optimizer class, a "
            f"callable taking the parameters, or None; got {summary(spec)}"
        )
    if not params:
        return None
    opt = factory(params)
    if not isinstance(opt, torch.optim.Optimizer):
        raise InvalidTypeError(f"optimizer {summary(spec)} returned {summary(opt)}, not a torch.optim.Optimizer")
    return opt


class ItemsOnMeta(TorchFunctionMode):
    """A meta or fake tensor read as a number (``t.item()``, ``float(t)``, ``int(t)``)
    gives 1 (``1.0``, ``True``) instead of failing: entered around the optimizer step,
    where such a number (Adafactor's parameter norm, a clipping factor) scales the update
    but never decides a size."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func in _NUMBER_READS and args and _no_data(args[0]):
            t = args[0]
            one = 1.0 if t.is_floating_point() else True if t.dtype == torch.bool else 1
            return _NUMBER_READS[func](one)
        return func(*args, **(kwargs or {}))


_NUMBER_READS: dict[Any, Callable[[Any], Any]] = {
    torch.Tensor.item: lambda x: x,
    torch.Tensor.__float__: float,
    torch.Tensor.__int__: int,
}


def _no_data(t: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, torch.Tensor) and (t.is_meta or isinstance(t, FakeTensor))


def apply_checkpointing(
    model: nn.Module, paths: Sequence[str], mode: Callable[[], Any] = contextlib.nullcontext
) -> None:
    """Run each module named in ``paths`` (each module of a named ``ModuleList`` or
    ``ModuleDict``) under ``torch.utils.checkpoint`` (non-reentrant), on the copy, its
    forward and its recomputation within ``mode()``: on meta the recomputation runs in
    autograd's thread for the meta device, where the caller's ``CPUAttentionOnMeta`` is
    not active (function modes are per thread) and attention would take the math path."""
    names = dict(model.named_modules())
    for path in paths:
        if path not in names:
            known = [n for n in names if n]
            close = difflib.get_close_matches(path, known, n=3) or difflib.get_close_matches(
                path.rsplit(".", 1)[-1], known, n=3
            )
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise InvalidInputError(f"checkpointing: {type(model).__name__} has no module {path!r}{hint}")
        target = names[path]
        if isinstance(target, (nn.ModuleList, nn.ModuleDict)):  # containers are not called
            for m in target.children():
                _checkpoint(m, mode)
        else:
            _checkpoint(target, mode)


def _checkpoint(m: nn.Module, mode: Callable[[], Any]) -> None:
    from torch.utils.checkpoint import checkpoint

    forward = m.forward

    def in_mode(*args: Any, **kwargs: Any) -> Any:
        with mode():
            return forward(*args, **kwargs)

    def checkpointed(*args: Any, **kwargs: Any) -> Any:
        return checkpoint(in_mode, *args, use_reentrant=False, **kwargs)

    m.forward = checkpointed  # type: ignore[method-assign]


def batch_of(inputs: Any) -> int | None:
    """The batch size of the inputs: the first dimension of the first tensor that has one."""
    return next((t.shape[0] for t in flat_tensors(inputs) if t.dim() >= 1), None)


def with_batch(inputs: Any, old: int, new: int) -> Any:
    """``inputs`` with every tensor whose first dimension is ``old`` made anew (on meta)
    with ``new`` there."""

    def resize(t: torch.Tensor) -> torch.Tensor:
        if t.dim() >= 1 and t.shape[0] == old:
            return torch.empty((new, *t.shape[1:]), dtype=t.dtype, device="meta")
        return t

    return map_tensors(inputs, resize)


__all__ = [
    "FAKE_DEVICES",
    "OPTIMIZERS",
    "Copies",
    "ItemsOnMeta",
    "apply_checkpointing",
    "batch_of",
    "make_optimizer",
    "with_batch",
]

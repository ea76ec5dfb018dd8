"""The training-memory estimate: what training holds at its peak, as far as the model
determines it.

:func:`training_memory` adds up parameters and buffers, one gradient per trainable
parameter, optimizer state (Adam/AdamW: two tensors per trainable parameter, SGD with
momentum: one, plain SGD: none; in the parameter's dtype unless ``state_dtype`` says
otherwise) and the activations autograd saves for backward (from
:class:`~tensorview.cost.memory.SavedTensors`).  It leaves out allocator fragmentation and
caching, temporary buffers of the backward pass and kernel workspaces, fp32 master weights
of mixed-precision recipes (unless given as ``state_dtype``/states), communication buffers
of distributed training, and the CUDA context.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch import nn

from ..errors import InvalidInputError, choices_error
from .params import ParamTotals, param_totals

__all__ = ["OPTIMIZER_STATES", "TrainingMemory", "training_memory", "training_memory_of"]


#: optimizer state tensors per trainable parameter
OPTIMIZER_STATES: dict[str, int] = {
    "adam": 2,
    "adamw": 2,
    "sgd": 0,
    "sgd_momentum": 1,
    "momentum": 1,
    "rmsprop": 1,
    "adagrad": 1,
    "none": 0,
}


@dataclasses.dataclass(frozen=True)
class TrainingMemory:
    """Bytes training holds at its peak, as estimated from the model (see module docs)."""

    params: int
    buffers: int
    grads: int
    optimizer_state: int
    activations: int
    optimizer: str = "adam"

    @property
    def total(self) -> int:
        return self.params + self.buffers + self.grads + self.optimizer_state + self.activations

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["total"] = self.total
        return d


def training_memory(
    model: nn.Module,
    *,
    activation_bytes: int = 0,
    optimizer: str | int = "adam",
    state_dtype: torch.dtype | None = None,
) -> TrainingMemory:
    """Parameters + buffers + gradients (trainable parameters) + optimizer state +
    ``activation_bytes`` (saved for backward, e.g. ``SavedTensors.total``).

    ``optimizer`` is a name in :data:`OPTIMIZER_STATES` or a number of state tensors per
    trainable parameter; ``state_dtype`` is the dtype of those states (default: each
    parameter's own dtype)."""
    return training_memory_of(
        param_totals(model), activation_bytes=activation_bytes, optimizer=optimizer, state_dtype=state_dtype
    )


def training_memory_of(
    totals: ParamTotals,
    *,
    activation_bytes: int = 0,
    optimizer: str | int = "adam",
    state_dtype: torch.dtype | None = None,
) -> TrainingMemory:
    """:func:`training_memory` from a model's :class:`ParamTotals` (no model needed)."""
    if isinstance(optimizer, str):
        try:
            states = OPTIMIZER_STATES[optimizer.lower()]
        except KeyError:
            raise choices_error("optimizer", optimizer, OPTIMIZER_STATES) from None
        name = optimizer.lower()
    elif isinstance(optimizer, int) and not isinstance(optimizer, bool) and optimizer >= 0:
        states, name = optimizer, f"{optimizer} states"
    else:
        raise InvalidInputError(
            f"bad optimizer {optimizer!r}: one of {sorted(OPTIMIZER_STATES)} or a number of state "
            "tensors per trainable parameter (an int >= 0)"
        )
    if state_dtype is None:
        state_bytes = totals.trainable_bytes
    else:
        state_bytes = totals.trainable_params * torch.empty((), dtype=state_dtype, device="meta").element_size()
    return TrainingMemory(
        params=totals.param_bytes,
        buffers=totals.buffer_bytes,
        grads=totals.trainable_bytes,
        optimizer_state=states * state_bytes,
        activations=int(activation_bytes),
        optimizer=name,
    )

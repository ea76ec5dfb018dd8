"""``tv.memory``: the memory of a training step, predicted on meta or measured on a device
(issue 23; docs/cost-model.md, "Will it fit?").

One step is: forward (and the loss: the model's ``loss`` if it returns one, else the sum
of its floating outputs), backward (the outputs and the loss are dropped after it), the
optimizer step and ``zero_grad``.  It runs on a copy of the model, under PyTorch's memory
tracker (tracker.py), which sees every storage the step makes and frees:

* ``device="meta"`` (or ``"fake"``): the copy and the inputs are fake tensors
  (``FakeTensorMode``): sizes, dtypes and the CPU's choice of kernels, no memory, any
  model size; a model on ``meta`` is fine;
* a real device (``"cpu"``, ``"cuda"``): a copy with its own parameters and buffers there
  (the optimizer writes them), real inputs; the numbers are measured.

The caller's model, its parameters and the random number generators are never touched.
stepcopy.py makes the copies and the optimizer; memreport.py holds the result.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ..errors import InvalidInputError, RecordingError, add_hint, choices_error, recording_error
from ..recording.inputs import check_forward_kwargs, check_model, make_inputs, summary, to_device
from ..recording.placement import as_device
from ..recording.tree import flat_tensors
from .memory import CPUAttentionOnMeta
from .memreport import Event, MemoryReport, module_rows
from .stepcopy import FAKE_DEVICES, Copies, ItemsOnMeta, apply_checkpointing, batch_of, make_optimizer, with_batch

MODES = ("train", "eval")


def memory(
    model: nn.Module,
    input_size: Any = None,
    input_data: Any = None,
    *,
    device: Any = "meta",
    mode: str = "train",
    optimizer: Any = "adam",
    dtypes: Any = None,
    autocast: torch.dtype | None = None,
    checkpointing: Sequence[str] | None = None,
    steps: int = 1,
    accumulate: int = 1,
    set_to_none: bool = True,
    **forward_kwargs: Any,
) -> MemoryReport:
    """The memory of one training step of ``model`` (forward, loss, backward, optimizer
    step, ``zero_grad(set_to_none=...)``), ``steps`` times; ``mode="eval"``: one forward
    without grad.  Inputs as for ``draw_graph``.  ``optimizer``: a name (``"adam"``,
    ``"adamw"``, ``"sgd"``, ``"sgd_momentum"``, ``"rmsprop"``, ``"adagrad"``,
    ``"adafactor"``), a ``torch.optim.Optimizer`` class, a callable taking the trainable
    parameters (``functools.partial(torch.optim.SGD, lr=0.1, momentum=0.9)``), or
    ``None`` (no optimizer step); ``accumulate``: forward and backward that many times
    (micro-batches, the gradients adding up) before each optimizer step.  ``autocast``: a
    dtype for ``torch.autocast`` around the forward; ``checkpointing``: module paths to
    run under ``torch.utils.checkpoint`` (a ``ModuleList`` path means each of its
    modules).  See docs/cost-model.md."""
    check_model(model, "memory")
    check_forward_kwargs(model, forward_kwargs, OPTION_NAMES)
    if mode not in MODES:
        raise choices_error("mode", mode, MODES)
    for name, n in (("steps", steps), ("accumulate", accumulate)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InvalidInputError(f"{name} must be an int of at least 1, got {summary(n)}")
    if autocast is not None and not (isinstance(autocast, torch.dtype) and autocast.is_floating_point):
        raise InvalidInputError(
            f"autocast must be a floating dtype (torch.bfloat16, torch.float16), got {summary(autocast)}"
        )
    if isinstance(checkpointing, str):
        checkpointing = [checkpointing]
    make_optimizer(None, optimizer)  # a bad optimizer fails here, before anything runs
    where: str | torch.device = device if isinstance(device, str) and device in FAKE_DEVICES else _device(device)
    dev = where if isinstance(where, torch.device) else None
    # on meta, shapes become meta tensors and given tensors stay as they are: the copies
    # are made of them (stepcopy.py), keeping which inputs are the same tensor
    made_on = dev if dev is not None else torch.device("meta") if input_data is None else None
    with torch.random.fork_rng(devices=[dev] if dev is not None and dev.type == "cuda" else []):
        args, kwargs = make_inputs(input_size, input_data, dtypes, made_on)  # randn: not from the caller's stream
    kwargs.update({k: to_device(v, dev, f"forward keyword argument {k!r}") for k, v in forward_kwargs.items()})
    plan = _Plan(
        mode, optimizer, autocast, tuple(checkpointing or ()), steps, accumulate if mode == "train" else 1, set_to_none
    )
    batch = batch_of((args, kwargs))
    rerun: Callable[[int], MemoryReport] | None = None
    if dev is None and batch is not None:

        def rerun(b: int) -> MemoryReport:
            return _predict(model, with_batch((args, kwargs), batch, b), where, plan, None)

    return _predict(model, (args, kwargs), where, plan, rerun, batch)


def _device(device: Any) -> torch.device:
    dev = as_device(device)
    if dev is None:
        raise InvalidInputError(f"device must be 'meta', 'fake' or a device such as 'cpu', got {summary(device)}")
    return dev


def _predict(
    model: nn.Module,
    inputs: tuple[tuple[Any, ...], dict[str, Any]],
    where: str | torch.device,
    plan: _Plan,
    rerun: Callable[[int], MemoryReport] | None,
    batch: int | None = None,
) -> MemoryReport:
    """The step on meta, or on fake tensors where an op has no meta kernel, or with
    autocast (which casts by the device of the tensors: meta ones are never cast)."""

    def measure(on: str | torch.device) -> MemoryReport:
        return _measure(model, inputs, on, plan, rerun, batch)

    if where == "meta" and plan.autocast is not None:
        where = "fake"
    if where != "meta":
        return measure(where)
    try:
        return measure("meta")
    except RecordingError as on_meta:
        meta_error = str(on_meta)
    try:
        return measure("fake")
    except RecordingError as e:
        same = str(e) == meta_error and not any(w in meta_error.lower() for w in ("meta", "fake"))
        if not e.hint and same:  # (an error about the devices themselves: a missing kernel, a value)
            add_hint(
                e,
                "the same error on meta and on fake tensors: it does not come from the values they lack, so "
                f"a real step of {_name(model)} raises it too (device='cpu' runs one)",
            )
        elif not e.hint:
            add_hint(e, f"it failed on meta and on fake tensors; device='cpu' measures a real step of {_name(model)}")
        raise


_WHERE = {"meta": "meta", "fake": "fake tensors (FakeTensorMode)"}
OPTION_NAMES = tuple(n for n in inspect.signature(memory).parameters if n not in ("model", "forward_kwargs"))


@dataclass(frozen=True)
class _Plan:
    mode: str
    optimizer: Any
    autocast: Any
    checkpointing: tuple[str, ...]
    steps: int
    accumulate: int
    set_to_none: bool

    def describe(self) -> str:
        parts = [self.mode]
        if self.mode == "train":
            opt = self.optimizer
            parts.append(f"optimizer {getattr(opt, '__name__', None) or opt!s}")
            if self.steps > 1:
                parts.append(f"{self.steps} steps")
            if self.accumulate > 1:
                parts.append(f"{self.accumulate} micro-batches a step")
            if not self.set_to_none:
                parts.append("zero_grad(set_to_none=False)")
        if self.autocast is not None:
            parts.append(f"autocast {str(self.autocast).removeprefix('torch.')}")
        if self.checkpointing:
            parts.append("checkpointing " + ", ".join(self.checkpointing))
        return ", ".join(parts)


def _measure(
    model: nn.Module,
    inputs: tuple[tuple[Any, ...], dict[str, Any]],
    where: str | torch.device,
    plan: _Plan,
    rerun: Callable[[int], MemoryReport] | None,
    batch: int | None = None,
) -> MemoryReport:
    """Copy ``model`` to ``where``, run the step under the tracker, report."""
    from .tracker import StepTracker  # torch.distributed: seconds to import, only when used

    tracker = StepTracker()
    with contextlib.ExitStack() as stack:
        copies = Copies(where, stack)
        runnable = copies.model(model)
        runnable.train(plan.mode == "train")
        apply_checkpointing(
            runnable, plan.checkpointing, CPUAttentionOnMeta if where == "meta" else contextlib.nullcontext
        )
        args, kwargs = copies.inputs(inputs)
        train = plan.mode == "train"
        opt = make_optimizer([p for p in runnable.parameters() if p.requires_grad], plan.optimizer) if train else None
        tracker.track_external(runnable, args, kwargs)
        with tracker:
            for step in range(plan.steps):
                tracker.step = step
                _one_step(runnable, args, kwargs, tracker, plan, opt, copies.device_type)
        tracker.close_calls()
    events = tuple(
        Event(i, kind, delta, live, tracker.categories[block], phase, module, step, block)
        for i, (kind, delta, live, block, phase, module, step) in enumerate(tracker.rows)
    )
    return MemoryReport(
        type(model).__name__,
        _WHERE.get(str(where), str(where)),
        plan.describe(),
        events,
        module_rows(tracker.calls, events),
        rerun,
        batch,
    )


def _one_step(model: nn.Module, args: Any, kwargs: Any, tracker: Any, plan: _Plan, opt: Any, device_type: str) -> None:
    train = plan.mode == "train"
    amp = torch.autocast(device_type, dtype=plan.autocast) if plan.autocast is not None else contextlib.nullcontext()
    try:
        for _ in range(plan.accumulate):  # gradient accumulation: backward adds into .grad
            tracker.phase = "forward"
            with torch.set_grad_enabled(train), amp:
                out = model(*args, **kwargs)
                loss = _loss(out, type(model).__name__) if train else None
            if loss is not None:
                tracker.phase = "backward"
                loss.backward()
            del out, loss
            tracker.reset_mod_stats()  # the next root call is not "a second iteration"
        if opt is not None:
            tracker.phase = "optimizer"
            with ItemsOnMeta():  # a real tensor's .item() is its value
                opt.step()
            opt.zero_grad(set_to_none=plan.set_to_none)
    except InvalidInputError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure of the user's step, with its phase
        raise recording_error(e, f"tv.memory: the {tracker.phase} of {type(model).__name__} failed: {e}") from e


def _name(model: nn.Module) -> str:
    return type(model).__name__


def _loss(out: Any, name: str) -> torch.Tensor:
    """The model's ``loss`` (a Hugging Face output given labels), else the sum of its
    floating outputs that need grad."""
    loss = out.get("loss") if isinstance(out, dict) else getattr(out, "loss", None)
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        return loss
    parts = [t for t in flat_tensors(out) if t.is_floating_point() and t.requires_grad]
    if not parts:
        raise InvalidInputError(
            f"tv.memory: {name} returned no floating tensor that needs grad, so there is nothing to "
            "backpropagate (every parameter frozen, or outputs detached); use mode='eval' for inference"
        )
    total = parts[0].sum()
    for t in parts[1:]:
        total = total + t.sum()
    return total


__all__ = ["MODES", "memory"]

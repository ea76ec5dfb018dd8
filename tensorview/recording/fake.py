"""``device="fake"``: recording under ``FakeTensorMode`` with a ``ShapeEnv``, for models
whose forward needs tensor values that ``meta`` tensors do not have.

Like ``meta``, fake tensors hold no data (any model size, no memory), but an op whose
result size depends on values (``nonzero``, boolean-mask indexing, ``unique``) gets a
symbolic size (``u0``), ``.item()`` gives a symbolic number, and libraries that test for
fake tensors (transformers' mask helpers, via ``is_tracing``) take their tracing path.
What no fake tensor can decide is a Python branch on a value (``if x.sum() > 0:``): that
is an error saying so.  Fake tensors keep the model's device labels (``cpu``; a model on
``meta`` records ``meta``).  Recording costs more than on ``meta`` (no shape replay; see
docs/models.md).

The model is recorded on a copy whose parameters, buffers and tensor attributes are fake
(the caller's model is not touched); inputs are made or converted inside the mode.  The
FakeTensor machinery (and sympy) is imported only when ``device="fake"`` is used.

``failure_hint`` adds what to do to the error of a forward that failed for want of values
on ``meta`` (or of a decidable branch on ``fake``).
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from .compiled import rebind_compiled_methods
from .copies import remember
from .optable import MODULE_ATTRS
from .placement import computed_attributes
from .tree import map_tensors, strip_in_place
from .unsharded import empty_like_full, fsdp_states, moved_tree, unsharded_copy

#: the ``device`` value that asks for fake tensors
FAKE = "fake"


def is_fake(device: Any) -> bool:
    return isinstance(device, str) and device == FAKE


@contextlib.contextmanager
def fake_placed(model: nn.Module, mode: str = "same") -> Iterator[tuple[nn.Module, Callable[[Any], Any]]]:
    """Enter a ``FakeTensorMode`` (with a ``ShapeEnv``) and yield a copy of ``model`` with
    fake parameters, buffers and tensor attributes, in ``mode`` (``"eval"``, ``"train"``
    or ``"same"``), and a function converting a nested value's tensors to fake ones
    (static shapes: the input sizes stay numbers)."""
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    # allow_non_fake_inputs: a real tensor met in forward (a global constant) is converted
    fake_mode = _fake_mode_type()(shape_env=ShapeEnv(), allow_non_fake_inputs=True)

    def fake(t: torch.Tensor) -> torch.Tensor:
        return fake_mode.from_tensor(t, static_shapes=True)

    clone = remember(model, _fake_copy(model, fake, fake_mode))  # calls of model's modules run clone's
    rebind_compiled_methods(model, clone)
    if mode != "same":
        clone.train(mode == "train")
    for m in clone.modules():  # plain tensor attributes (not parameters or buffers)
        d = m.__dict__
        for k in d.keys() - MODULE_ATTRS:
            if isinstance(d[k], (torch.Tensor, list, tuple, dict)):
                d[k] = strip_in_place(d[k], lambda t: not _is_fake_tensor(t), fake, objects=False)

    def convert(value: Any) -> Any:
        return map_tensors(value, lambda t: t if _is_fake_tensor(t) else fake(t))

    log = logging.getLogger("torch._subclasses.fake_tensor")
    quiet = _FilledRefusals()
    log.addFilter(quiet)
    try:
        with fake_mode:
            yield clone, convert
    finally:
        log.removeFilter(quiet)


def _fake_copy(model: nn.Module, fake: Callable[[torch.Tensor], torch.Tensor], fake_mode: Any) -> nn.Module:
    """A deep copy of ``model`` with fake tensors; a copy of its module tree when it cannot
    be deep-copied, or is an FSDP2 model (unsharded.py: the model it shards, whose full
    parameters are made in ``fake_mode``, on the shards' device)."""
    states = fsdp_states(model)
    if states:
        blank = empty_like_full(None)

        def full(fp: Any, dtype: torch.dtype) -> torch.Tensor:
            with fake_mode:
                return blank(fp, dtype)

        return unsharded_copy(model, states, full, fake)
    memo: dict[int, Any] = {}
    for t in [*model.parameters(), *model.buffers()]:
        if id(t) not in memo:
            f = fake(t.detach())
            memo[id(t)] = nn.Parameter(f, requires_grad=t.requires_grad) if isinstance(t, nn.Parameter) else f
    for t in computed_attributes(model):  # deepcopy refuses them (placement.py)
        memo[id(t)] = fake(t.detach())
    try:
        return copy.deepcopy(model, memo)
    except Exception:  # noqa: BLE001 - refused (a lock, a generator...): the tree copied instead
        return moved_tree(model, fake)


class _FilledRefusals(logging.Filter):
    """Drops FakeTensorMode's log (a traceback) of a meta kernel refusing an op that
    metafills.py fills in: the op is recorded all the same, and where the fill does not
    apply the recording's own error says what failed."""

    def filter(self, record: logging.LogRecord) -> bool:
        from .metafills import FILLED_ATEN

        args = record.args
        op = args[0] if isinstance(args, tuple) and args else None
        return getattr(op, "overloadpacket", None) not in FILLED_ATEN


_MODE_TYPE: list[type] = []


def _fake_mode_type() -> type:
    """``FakeTensorMode`` whose own Python code runs with torch functions disabled: ops it
    makes to compute results (``is_conj()``...) are its internals, not the model's ops, even
    when it is reached outside our op handler (a TorchScript module's body)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    if not _MODE_TYPE:

        class QuietFakeTensorMode(FakeTensorMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                with torch._C.DisableTorchFunction():
                    return super().__torch_dispatch__(func, types, args, kwargs)

        _MODE_TYPE.append(QuietFakeTensorMode)
    quiet = _MODE_TYPE[0]
    # A higher-order op (torch.cond, while_loop, map, scan, flex_attention...) looks up its
    # rule for a mode by the mode's exact type (``python_key_table[type(mode)]``), so the
    # rules torch registered for FakeTensorMode must be ours too; HOPs are registered at
    # import time, so ones imported since the last recording are picked up here.
    from torch._ops import _higher_order_ops

    for hop in list(_higher_order_ops.values()):
        table = hop.python_key_table
        rule = table.get(FakeTensorMode)
        if rule is not None and quiet not in table:
            table[quiet] = rule
    return quiet


def _is_fake_tensor(t: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)


#: messages of torch's meta kernels for ops that need values
_META_NEEDS_VALUES = (
    "cannot be called on meta tensors",  # Tensor.item(), bool(t), int(t)...
    "register_meta function for torch.nonzero",  # nonzero, masks, torch.where(cond)
    "Cannot copy out of meta tensor",  # tolist(), numpy()
    "meta device type tensor to numpy",
    "data-dependent",  # other ops without a data-independent meta kernel
)


#: messages of torch and Python when a value-dependent size (``.item()``, ``.tolist()`` of
#: a fake tensor: an unbacked symbol) reaches code that takes concrete integers only: a C++
#: op without symbolic sizes (``F.pad`` by ``n - t.sum().item()``), a hash (a dict key)
_SYMBOL_NEEDS_NUMBER = (
    "SymIntArrayRef expected to contain only concrete integers",
    "unhashable type: non-nested SymInt",
)


def script_hint(model: nn.Module, path: str, cause: str) -> str:
    """What to do when a TorchScript submodule (``torch.jit.script``/``trace``) failed on
    the meta device ("" otherwise): its compiled code runs as one opaque call."""
    module = model
    try:  # (not ``get_submodule``: a scripted model has none)
        for part in filter(None, path.split(".")):
            module = getattr(module, part)
    except AttributeError:
        return ""
    if not isinstance(module, torch.jit.ScriptModule) or "meta" not in cause:
        return ""
    return (
        f"{f'module {path!r}' if path else 'the model'} is a TorchScript module: its compiled code runs as one call "
        "tensorview cannot see into, and it does not run on the meta device. Record with "
        "real tensors (device='cpu'), or draw the eager module, before torch.jit.script/trace"
    )


def failure_hint(exc: BaseException, op: str, model: nn.Module) -> str:
    """What to do about a forward that failed for want of tensor values ("" if the failure
    is of another kind).  ``op`` is the op that raised ("" for ``.item()``-like queries)."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - an exception whose __str__ raises has no hint
        return ""
    if name in ("GuardOnDataDependentSymNode", "DataDependentOutputException") or ("guard on data-dependent" in text):
        return (
            "the forward branches in Python on a tensor value (`if`, `bool()`, a size "
            "computed from values), which fake tensors cannot decide: record with real "
            "values (device='cpu')"
        )
    if any(s in text for s in _SYMBOL_NEEDS_NUMBER):
        return (
            "a size computed from tensor values (a symbol such as u0 with device='fake') "
            "reached code that needs a plain number (an op without symbolic sizes, a dict "
            "key): record with real values (device='cpu')"
        )
    if "lengths' argument should be a 1D CPU int64 tensor" in text:  # pack_padded_sequence
        if "meta" in text:  # (its batch sizes are read back as values too: a list does not help)
            return "packed sequences need the values of their lengths: record with real values (device='cpu')"
        return "pack_padded_sequence takes its lengths on the CPU: pass them as a list of ints"
    if not any(s in text for s in _META_NEEDS_VALUES):
        return ""
    what = f"op {op!r}" if op else "reading a tensor value (.item(), bool(), .tolist())"
    hint = (
        f"{what} cannot run on the meta device: meta tensors have shapes but no values. "
        "Record with real values (device='cpu'), or with device='fake' (FakeTensorMode: "
        "value-dependent sizes such as nonzero's become symbols like u0; Python branches "
        "on values still need real ones)"
    )
    if type(model).__module__.startswith("transformers."):
        hint += (
            ", or choose a model option that avoids the value check (Hugging Face "
            "transformers: use_cache=True, or attn_implementation='eager')"
        )
    return hint


__all__ = ["FAKE", "failure_hint", "fake_placed", "is_fake"]

"""Calls recorded as what they stand for (``SPECIAL``): iterating a tensor, as ``unbind``;
structured control flow (``torch.cond``), as the Python ``if`` it stands for.  And what
torch does not show a ``TorchFunctionMode`` at all: tensors changed unseen (``Tensor.set_``).

In eager mode ``torch.cond(pred, true_fn, false_fn, operands)`` is
``true_fn(*operands) if pred else false_fn(*operands)``.  Torch runs it through Dynamo,
which a recording keeps from tracing (the ``force_eager`` stance, compiled.py); the
operator itself then traces both branches with fake tensors for autograd, and with grad on
fails on a parameter a branch reads (a real tensor among fakes: "Please convert all
Tensors to FakeTensors first"), where the plain forward runs.

So while recording, a ``cond`` whose predicate has a value (also on meta, computed from
inputs given with data: values.py) runs the branch it picks, and
the branch's ops, module calls and the parameters it reads are recorded where they run, as
for a Python ``if``.  A predicate without a value (meta, or a symbol on ``device="fake"``)
leaves the operator to torch: one ``cond`` node, as before.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from torch.overrides import _get_current_function_mode_stack

from .optable import DATA_ACCESS, FACTORIES, QUERIES
from .values import value_of

#: ``run_cond``'s answer when the operator is left to torch
LEFT_TO_TORCH = object()


def cond_operator() -> Any:
    """The ``cond`` higher-order operator, None where this torch has none."""
    try:
        from torch._higher_order_ops.cond import cond_op
    except ImportError:  # pragma: no cover - torch without torch.cond
        return None
    return cond_op


def _value(pred: Any) -> bool | None:
    """``pred`` as a bool, None when it has no value here (meta, fake, symbolic)."""
    if isinstance(pred, (bool, int, float)):
        return bool(pred)
    if not isinstance(pred, torch.Tensor):
        return None  # a SymBool: the operator decides
    with torch._C.DisableTorchFunction():
        if pred.device.type == "meta":  # a value known from inputs given with data (values.py)
            known = value_of(pred)
            return None if known is None else bool(known)
        if torch._subclasses.fake_tensor.is_fake(pred):
            return None
        try:
            return bool(pred)
        except Exception:  # no data (a functional or other wrapper subclass)
            return None


def run_cond(mode: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run ``cond_op(pred, true_fn, false_fn, operands)`` as the branch it picks, under the
    recording's TorchFunctionMode ``mode`` (a mode is off while its handler runs), or
    ``LEFT_TO_TORCH``."""
    params = dict(zip(("pred", "true_fn", "false_fn", "operands"), args, strict=False), **kwargs)
    if set(params) - {"pred", "true_fn", "false_fn", "operands"} or len(params) < 3:
        return LEFT_TO_TORCH
    taken = _value(params["pred"])
    if taken is None:
        return LEFT_TO_TORCH
    branch = params["true_fn"] if taken else params["false_fn"]
    operands = params.get("operands", ())
    active = any(m is mode for m in _get_current_function_mode_stack())
    with contextlib.nullcontext() if active else mode:
        return branch(*operands)


def _cond(ops: Any, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    out = run_cond(ops.mode, args, kwargs)
    return ops._op(func, args, kwargs) if out is LEFT_TO_TORCH else out


def _iterate(ops: Any, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``for row in x``: the rows are recorded, as ``unbind``'s results."""
    return iter(ops._op(torch.Tensor.unbind, (args[0], 0), {}))


def _data_access(ops: Any, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``p.data`` and ``p.data = x``: recorded as writes of ``p`` (ops.py)."""
    return ops.data_access(func, args, kwargs)


#: torch function -> how the session records it: ``(ops, func, args, kwargs) -> result`` (ops.py)
HANDLERS: dict[Any, Any] = {torch.Tensor.__iter__: _iterate, **dict.fromkeys(DATA_ACCESS, _data_access)}
if cond_operator() is not None:
    HANDLERS[cond_operator()] = _cond

#: what ``Ops.handle`` does first with a function that is no op to record: a query, one of
#: ``HANDLERS`` or a factory (in that order of precedence), in one look-up
QUERY, SPECIAL, FACTORY = "query", "special", "factory"
ROUTES: dict[Any, str] = {
    **dict.fromkeys(FACTORIES, FACTORY),
    **dict.fromkeys(HANDLERS, SPECIAL),
    **dict.fromkeys(QUERIES, QUERY),
}


def unseen_change(path: str) -> str:
    """The warning for a tensor whose version counter moved with no recorded op to explain
    it: ``Tensor.set_`` (which never reaches ``__torch_function__``) or a kernel that runs
    no torch functions (a TorchScript module), inside the call at ``path``."""
    where = f"in {path!r}" if path else "in the root module"
    return (
        f"a tensor {where} changed where tensorview cannot see (Tensor.set_, or a kernel that "
        "calls no torch functions): the graph does not show where its new value came from"
    )


def unseen_result(path: str, cls_name: str) -> str:
    """The warning for a module call that returned a tensor made where no torch function
    ran (a C++ extension, code under ``DisableTorchFunction``)."""
    where = f"{cls_name} at {path!r}" if path else f"the root module ({cls_name})"
    return (
        f"{where} returned a tensor made where tensorview cannot see (code that calls no torch "
        "functions, such as a C++ extension): the ops that made it are not drawn"
    )

"""``tv.summary``'s body: check torchinfo's arguments, record one forward with the cost
probe (the recording function is ``api._record``, handed in) or, without inputs, read
the parameter table, and print the table where ``verbose`` says so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..errors import InvalidInputError, RecordingError, TensorviewError, add_hint, describe
from ..recording.placement import as_device, model_device
from .columns import table_options
from .compat import check_cache, check_inputs, default_verbose, has_lazy, input_sizes, materialised, with_batch_dim
from .facts import inner_rows, module_facts
from .layers import STATS
from .summary import TRAIN_MODE_HINT, Summary, check_options

__all__ = ["summarize"]


#: ``tv.summary``'s default device: meta where the forward can run there, else the model's
AUTO = "auto"


def _recorded(
    record: Callable[..., Any], model: nn.Module, inputs: Any, device: Any, mode: str
) -> tuple[nn.Module, Any, str]:
    """``(model run, graph, why not on meta)``.  With ``device="auto"``, meta first; where
    meta cannot run the model (TorchScript, lazy modules, a forward reading tensor
    values: ``.item()``, data-dependent shapes) the model's own device, as torchinfo."""
    auto = isinstance(device, str) and device == AUTO
    first = "meta" if auto else device
    own = model_device(model)
    why = ""
    if auto and own.type != "meta":
        if any(isinstance(m, torch.jit.ScriptModule) for m in model.modules()):
            first, why = None, "a TorchScript module cannot be moved to meta"
        elif has_lazy(model):
            first, why = None, "lazy modules are materialised by a forward with values"
    runnable = materialised(model, inputs, first)
    try:
        return runnable, record(runnable, inputs, first, mode, STATS, False), why
    except RecordingError as e:
        if not auto or first is None or own.type == "meta":
            raise
        failed = e
    why = f"on meta, {describe(failed.__cause__ or failed).splitlines()[0][:160]}"
    try:
        runnable = materialised(model, inputs, None)
        return runnable, record(runnable, inputs, None, mode, STATS, False), why
    except TensorviewError:  # the model's device cannot run it either: meta's error says what to do
        raise failed from failed.__cause__


def _in_mode(
    record: Callable[..., Any], model: nn.Module, inputs: Any, device: Any, mode: str | None
) -> tuple[nn.Module, Any, str, str]:
    """``_recorded`` in ``mode``, and why it fell back to eval mode ("" where it did not).
    ``None``: training mode, or eval mode where only the training-mode forward fails
    (BatchNorm given one value per channel, a detection model without its targets), as
    torchinfo records by default."""
    try:
        return (*_recorded(record, model, inputs, device, mode or "train"), "")
    except RecordingError as e:
        if mode is not None:
            if mode == "train" and not model.training and not e.hint:  # failed in a mode not asked for
                add_hint(e, TRAIN_MODE_HINT)
            raise
        failed = e
    try:
        runnable, graph, fallback = _recorded(record, model, inputs, device, "eval")
    except TensorviewError:  # eval mode fails too: the training mode's error is the one asked about
        raise failed from failed.__cause__
    return runnable, graph, fallback, describe(failed.__cause__ or failed).splitlines()[0][:160]


def summarize(
    record: Callable[..., Any],
    model: nn.Module,
    inputs: tuple[Any, Any, Any, Any, dict[str, Any]],
    table: tuple[Any, Any, Any, Any, Any],
    cache_forward_pass: Any,
    depth: Any,
    device: Any,
    mode: str | None,
    optimizer: Any,
    state_dtype: Any,
) -> Summary:
    """``inputs``: ``(input_size, input_data, batch_dim, dtypes, forward_kwargs)``;
    ``table``: ``(col_names, col_width, row_settings, verbose, fold)``; ``record(model,
    (input_size, input_data, dtypes, forward_kwargs), device, mode, stats, source)``
    returns a graph with its costs."""
    input_size, input_data, batch_dim, dtypes, forward_kwargs = inputs
    col_names, col_width, row_settings, verbose, fold = table
    check_options(depth, optimizer, state_dtype)
    check_cache(cache_forward_pass)
    dtypes = check_inputs(input_size, input_data, dtypes)
    given = input_sizes(input_size, input_data)
    input_size = with_batch_dim(input_size, batch_dim)
    forward = input_size is not None or input_data is not None
    options = table_options(col_names, col_width, row_settings, default_verbose(verbose), fold, forward=forward)
    kw: dict[str, Any] = {"depth": depth, "optimizer": optimizer, "state_dtype": state_dtype, "options": options}
    inputs_ = (input_size, input_data, dtypes, forward_kwargs)
    if not forward:
        if not (isinstance(device, str) and device in (AUTO, "fake")):
            as_device(device)  # checked as where it runs, though nothing does
        if forward_kwargs:
            raise InvalidInputError(
                f"forward arguments {sorted(forward_kwargs)} given without input_size or input_data: "
                "pass the inputs too, or neither for the parameter table"
            )
        s = Summary.of_model(model, **kw)
    else:
        model, graph, fallback, mode_fallback = _in_mode(record, model, inputs_, device, mode)
        s = Summary(graph, graph.cost, facts=module_facts(model), **kw)
        s.mode, s.mode_fallback = ("eval" if mode_fallback else mode or "train"), mode_fallback
        scripted = {p for p, m in model.named_modules() if isinstance(m, torch.jit.ScriptModule)}
        opaque = {m.id for m in graph.graph.modules() if (m.opaque or m.path in scripted) and m.end >= 0}
        s.rows = inner_rows(s.rows, opaque, model)
        s.fallback = fallback
    s.input_size = given
    if options.verbose:
        print(s)
    return s

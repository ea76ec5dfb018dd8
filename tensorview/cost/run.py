"""``tv.summary``'s body: check torchinfo's arguments, record one forward with the cost
probe (the recording function is ``api._record``, handed in) or, without inputs, read
the parameter table, and print the table where ``verbose`` says so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from ..errors import InvalidInputError, RecordingError, add_hint
from .columns import table_options
from .compat import check_cache, default_verbose, materialised, with_batch_dim
from .facts import module_facts
from .layers import STATS
from .summary import TRAIN_MODE_HINT, Summary, check_options

__all__ = ["summarize"]


def summarize(
    record: Callable[..., Any],
    model: nn.Module,
    inputs: tuple[Any, Any, Any, Any, dict[str, Any]],
    table: tuple[Any, Any, Any, Any, Any],
    cache_forward_pass: Any,
    depth: Any,
    device: Any,
    mode: str,
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
    input_size = with_batch_dim(input_size, batch_dim)
    forward = input_size is not None or input_data is not None
    options = table_options(col_names, col_width, row_settings, default_verbose(verbose), fold, forward=forward)
    kw: dict[str, Any] = {"depth": depth, "optimizer": optimizer, "state_dtype": state_dtype, "options": options}
    inputs_ = (input_size, input_data, dtypes, forward_kwargs)
    model = materialised(model, inputs_ if forward else None, device)
    if not forward:
        if forward_kwargs:
            raise InvalidInputError(
                f"forward arguments {sorted(forward_kwargs)} given without input_size or input_data: "
                "pass the inputs too, or neither for the parameter table"
            )
        s = Summary.of_model(model, **kw)
    else:
        try:
            graph = record(model, inputs_, device, mode, STATS, False)
        except RecordingError as e:
            if mode == "train" and not model.training and not e.hint:  # failed in a mode not asked for
                add_hint(e, TRAIN_MODE_HINT)
            raise
        s = Summary(graph, graph.cost, facts=module_facts(model), **kw)
    if options.verbose:
        print(s)
    return s

"""``Summary``: what a model costs, per module call and in total (``tv.summary(...)``,
``graph.summary()``).

Built from a recorded graph and the :class:`~.record.CostRecord` the cost probe measured
during that recording.  Every number is an exact ``int``; ``str(summary)`` is the table
(see :mod:`.table`), ``to_dict()`` the same data as strict JSON.  docs/cost-model.md says
what each number includes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from ..errors import InvalidInputError, InvalidTypeError, shown
from ..graph import Graph, ir_of
from .columns import TableOptions
from .facts import ModuleFacts, module_facts, static_rows
from .layers import activation_bytes
from .params import ParamTotals, param_totals
from .record import CostRecord
from .row import Row
from .training import TrainingMemory, training_memory_of

__all__ = ["Row", "Summary", "check_options"]

SCHEMA = "tensorview.summary"
SCHEMA_VERSION = 1
_SAME: Any = object()


def _state_dtype(value: Any) -> torch.dtype | None:
    if value is None or isinstance(value, torch.dtype):
        return value
    if isinstance(value, str):
        dt = getattr(torch, value.replace("torch.", ""), None)
        if isinstance(dt, torch.dtype):
            return dt
        raise InvalidInputError(f"unknown state_dtype {value!r}: a torch dtype such as torch.float32 or 'bfloat16'")
    raise InvalidTypeError(f"state_dtype must be a torch.dtype, a dtype name or None, got {shown(value)}")


def _leaves(rows: list[Row]) -> list[Row]:
    """Rows of calls that called no submodule (no deeper row follows them)."""
    return [r for i, r in enumerate(rows) if i + 1 == len(rows) or rows[i + 1].depth <= r.depth]


def _depth(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"depth must be an int or None, got {shown(value)}")
    if value < 0:
        raise InvalidInputError(f"depth must be >= 0, got {value!r}")
    return value


#: added to the error of a summary whose forward failed in training mode, the model being in eval
TRAIN_MODE_HINT = (
    "tv.summary records in training mode by default (what backward needs is part of the cost); "
    "the model is in eval mode: if its forward fails only in training mode (BatchNorm with a batch "
    "of 1, a training-only input), pass mode='eval'"
)


def check_options(depth: Any, optimizer: Any, state_dtype: Any) -> None:
    """Fail before recording on a bad ``depth``, ``optimizer`` or ``state_dtype``."""
    _depth(depth)
    training_memory_of(ParamTotals(0, 0, 0, 0, 0, 0), optimizer=optimizer, state_dtype=_state_dtype(state_dtype))


class Summary:
    """Parameters, FLOPs and memory of one recorded forward, per module call (``rows``)
    and in total.  ``depth``: how deep the table goes (None: every call);
    ``optimizer``/``state_dtype``: what the training-memory estimate assumes (Adam: two
    states per trainable parameter; the states' dtype, default the parameters');
    ``options``: the table's columns and rows (:func:`.columns.table_options`);
    ``facts``: kernel sizes, groups and parameters by module path (:mod:`.facts`).
    ``graph`` None with ``rows``: the parameter table of a model no forward ran for
    (:meth:`of_model`)."""

    def __init__(
        self,
        graph: Any,
        record: CostRecord,
        *,
        depth: int | None = 3,
        optimizer: str | int = "adam",
        state_dtype: torch.dtype | str | None = None,
        options: TableOptions | None = None,
        facts: Mapping[str, ModuleFacts] | None = None,
        rows: list[Row] | None = None,
    ) -> None:
        #: the recorded graph (a drawable ``ComputationGraph`` from ``tv.summary``; None
        #: when no forward ran)
        self.graph = graph
        self.record = record
        self.depth = _depth(depth)
        self.state_dtype = _state_dtype(state_dtype)
        self.options = options if options is not None else TableOptions()
        self.facts: dict[str, ModuleFacts] = dict(facts or {})
        #: whether a forward ran (False: ``tv.summary(model)`` without inputs)
        self.forward = graph is not None
        r = record
        self.total_params = r.totals.total_params
        self.trainable_params = r.totals.trainable_params
        self.frozen_params = r.totals.frozen_params
        self.buffers = r.totals.buffers
        self.param_bytes = r.totals.param_bytes
        self.buffer_bytes = r.totals.buffer_bytes
        self.total_flops = r.total_flops
        #: multiply-adds (torchinfo's name): half the FLOPs, every op with a formula
        self.total_mult_adds = r.total_flops // 2
        #: ``{aten op: calls}`` of the ops torch has no FLOP formula for, most called first
        self.uncounted = dict(r.total_uncounted)
        self.uncounted_calls = r.uncounted_calls
        #: activations saved for backward over the whole forward (None: not measured)
        self.saved_bytes = r.total_saved_bytes if r.saved_measured else None
        self.training_memory: TrainingMemory = training_memory_of(
            r.totals, activation_bytes=self.saved_bytes or 0, optimizer=optimizer, state_dtype=self.state_dtype
        )
        g = ir_of(graph, "Summary") if graph is not None else None
        self.rows = self._rows(g) if g is not None else list(rows or [])
        #: the shapes given, or the sizes of the tensors in ``input_data`` (torchinfo's)
        self.input_size: Any = []
        #: bytes of the input tensors (torchinfo's ``total_input``), 0 without a forward
        self.total_input = sum(activation_bytes(g, i) for i in g.inputs) if g is not None else 0
        #: parameters and buffers of lazy modules not materialised yet (counted as 0)
        self.uninitialised = 0
        #: why ``device="auto"`` recorded on the model's device instead of meta ("" where it did not)
        self.fallback = ""
        #: the mode the forward was recorded in: ``"train"``, ``"eval"`` or ``"same"``
        self.mode = "train"
        #: why a summary with no ``mode`` given was recorded in eval mode: the error of the
        #: training-mode forward ("" where it was not)
        self.mode_fallback = ""
        #: torchinfo's "Forward/backward pass size": twice the output bytes of every call
        #: of a module with parameters and no submodule calls (``saved_bytes`` is measured)
        self.total_output_bytes = 2 * sum(r.activation_bytes for r in _leaves(self.rows) if r.params)

    @classmethod
    def of_model(
        cls,
        model: nn.Module,
        *,
        depth: int | None = 3,
        optimizer: str | int = "adam",
        state_dtype: torch.dtype | str | None = None,
        options: TableOptions | None = None,
    ) -> Summary:
        """The parameter table of ``model``, no forward run: every module under each of
        its names, in registration order, with its parameters (recursively, each once),
        trainable ones and sharing (:func:`.facts.static_rows`)."""
        rows = static_rows(model)
        record = CostRecord({}, {}, {}, {}, param_totals(model), 0, {}, 0, 0, False)
        facts = module_facts(model)
        lazy = sum(1 for t in (*model.parameters(), *model.buffers()) if is_lazy(t))
        s = cls(
            None,
            record,
            depth=depth,
            optimizer=optimizer,
            state_dtype=state_dtype,
            options=options,
            facts=facts,
            rows=rows,
        )
        s.uninitialised = lazy
        return s

    @property
    def summary_list(self) -> list[Row]:
        """torchinfo's name for ``rows``."""
        return self.rows

    @property
    def total_param_bytes(self) -> int:
        """torchinfo's name for ``param_bytes``."""
        return self.param_bytes

    @property
    def training_memory_bytes(self) -> int:
        """Parameters + buffers + gradients + optimizer state + activations saved for
        backward (see ``training_memory`` for the parts, docs/cost-model.md for what the
        estimate leaves out)."""
        return self.training_memory.total

    def _rows(self, g: Graph) -> list[Row]:
        r = self.record
        rows = []
        for m in g.modules():
            p = r.params.get(m.id)
            if p is None:  # a call the probe did not see (it cannot happen in one recording)
                continue
            rows.append(
                Row(
                    id=m.id,
                    path=m.path,
                    cls=m.cls_name,
                    depth=m.depth,
                    call_index=m.call_index,
                    output_shapes=tuple(g.shapes(g.output_tensors(m.id))),
                    params=p.params,
                    trainable_params=p.trainable,
                    buffers=p.buffers,
                    flops=r.flops.get(m.id, 0),
                    uncounted=sum(r.uncounted.get(m.id, {}).values()),
                    activation_bytes=activation_bytes(g, m.id),
                    saved_bytes=r.saved_bytes.get(m.id, 0) if r.saved_measured else None,
                    shared_params=p.shared_params,
                    shared_with=p.shared_with,
                    repeat=p.repeat,
                    input_shapes=tuple(g.shapes(g.input_tensors(m.id))),
                )
            )
        return rows

    # -- output ----------------------------------------------------------------------------
    def table(self, depth: Any = _SAME, *, fold: Any = _SAME) -> str:
        """The table down to ``depth`` (default: the summary's ``depth``; None: every call);
        ``fold=False`` lists every call of repeated blocks (default: the summary's)."""
        from .table import render

        opts = self.options
        if fold is not _SAME:
            if not isinstance(fold, bool):
                raise InvalidTypeError(f"fold must be True or False, got {fold!r:.80}")
            opts = dataclasses.replace(opts, fold=fold)
        return render(self, self.depth if depth is _SAME else _depth(depth), opts)

    def __str__(self) -> str:
        return self.table()

    __repr__ = __str__

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-ready (strict JSON: ints, strings, lists, null)."""
        tm = self.training_memory.to_dict()
        tm["state_dtype"] = None if self.state_dtype is None else str(self.state_dtype).replace("torch.", "")
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "totals": {
                "params": self.total_params,
                "trainable_params": self.trainable_params,
                "frozen_params": self.frozen_params,
                "buffers": self.buffers,
                "param_bytes": self.param_bytes,
                "buffer_bytes": self.buffer_bytes,
                "flops": self.total_flops if self.forward else None,
                "mult_adds": self.total_mult_adds if self.forward else None,
                "uncounted_calls": self.uncounted_calls,
                "saved_bytes": self.saved_bytes,
                "saved_param_bytes": self.record.saved_param_bytes if self.saved_bytes is not None else None,
            },
            "uncounted": dict(self.uncounted),
            "training_memory": tm,
            "rows": [row.to_dict() for row in self.rows],
        }

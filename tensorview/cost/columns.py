"""What the summary table shows: its columns (torchinfo's ``col_names`` and ours), row
settings, the column width and verbosity, checked once into a :class:`TableOptions`.

Every column is one entry of :data:`COLUMNS`: a header, whether it is a number (aligned
right), whether it needs a forward pass, and the cell of a row.  torchinfo's names mean
what they mean there (``mult_adds`` is multiply-adds, shown as MACs, with our FLOPs
beside it); ours add FLOPs and memory.  A cell reads a :class:`~.summary.Row` and the
:class:`~.facts.ModuleFacts` of its module (kernel size, groups; ``None`` when the
summary was made from a graph without its model).

>>> [c for c in COLUMNS if COLUMNS[c].torchinfo]
['input_size', 'output_size', 'num_params', 'params_percent', 'kernel_size', 'groups', 'mult_adds', 'trainable']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError, InvalidTypeError, choices_error
from ..graph import Shape
from ..graph.listing import fmt_shape
from .fmt import fmt_bytes, fmt_count, fmt_flops

if TYPE_CHECKING:
    from .facts import ModuleFacts
    from .summary import Row

__all__ = [
    "COLUMNS",
    "DEFAULT_COLUMNS",
    "PARAM_COLUMNS",
    "ROW_SETTINGS",
    "Column",
    "TableOptions",
    "table_options",
]

#: what a row cell shows where a module call ran no op with a FLOP formula but some without
UNCOUNTED = "—"
#: where a column has nothing for a row (torchinfo's ``--``)
NOTHING = "--"
#: at most this many shapes per cell, then "+N"
MAX_SHAPES = 2


def _shapes(shapes: tuple[Shape, ...]) -> str:
    out = [fmt_shape(s) for s in shapes[:MAX_SHAPES]]
    if len(shapes) > MAX_SHAPES:
        out.append(f"+{len(shapes) - MAX_SHAPES}")
    return ", ".join(out) or NOTHING


def _params(row: Row, total: int, facts: ModuleFacts | None) -> str:
    text = fmt_count(row.params)
    if row.repeat:
        text = f"({text})"
    return text + (" *" if row.shared_with else "  ")


def _percent(row: Row, total: int, facts: ModuleFacts | None) -> str:
    if not row.params or row.repeat or not total:
        return NOTHING
    return f"{100 * row.params / total:.2f}%"


def _flops(row: Row, unit: str, per: int) -> str:
    if not row.flops and row.uncounted:
        return UNCOUNTED  # no formula for what ran: not 0
    return fmt_flops(row.flops // per, unit)


def _trainable(row: Row, total: int, facts: ModuleFacts | None) -> str:
    if not row.params:
        return NOTHING
    if row.trainable_params == row.params:
        return "True"
    return "False" if not row.trainable_params else "Partial"


def _kernel(row: Row, total: int, facts: ModuleFacts | None) -> str:
    k = None if facts is None else facts.kernel_size
    return NOTHING if k is None else str(list(k) if isinstance(k, tuple) else k)


def _groups(row: Row, total: int, facts: ModuleFacts | None) -> str:
    return NOTHING if facts is None or facts.groups is None else str(facts.groups)


def _bytes(value: int | None) -> str:
    return "–" if value is None else fmt_bytes(value)


Cell = Callable[["Row", int, "ModuleFacts | None"], str]


@dataclasses.dataclass(frozen=True)
class Column:
    """One column: ``header``, ``cell(row, total_params, facts)``, numbers aligned right,
    whether it needs a forward pass (shapes, FLOPs, memory), whether torchinfo has it."""

    header: str
    cell: Cell
    right: bool = True
    needs_forward: bool = True
    torchinfo: bool = False


COLUMNS: dict[str, Column] = {
    "input_size": Column("Input shape", lambda r, t, f: _shapes(r.input_shapes), False, torchinfo=True),
    "output_size": Column("Output shape", lambda r, t, f: _shapes(r.output_shapes), False, torchinfo=True),
    "num_params": Column("Params", _params, needs_forward=False, torchinfo=True),
    "params_percent": Column("Params %", _percent, needs_forward=False, torchinfo=True),
    "kernel_size": Column("Kernel shape", _kernel, False, needs_forward=False, torchinfo=True),
    "groups": Column("Groups", _groups, needs_forward=False, torchinfo=True),
    "mult_adds": Column("MACs", lambda r, t, f: _flops(r, "MACs", 2), torchinfo=True),
    "trainable": Column("Trainable", _trainable, False, needs_forward=False, torchinfo=True),
    "flops": Column("FLOPs", lambda r, t, f: _flops(r, "FLOPs", 1)),
    "activation_bytes": Column("Activations", lambda r, t, f: fmt_bytes(r.activation_bytes)),
    "saved_bytes": Column("Saved for bwd", lambda r, t, f: _bytes(r.saved_bytes)),
}
#: the columns of a summary with a forward pass, unless ``col_names`` says otherwise
DEFAULT_COLUMNS = ("output_size", "num_params", "flops", "activation_bytes", "saved_bytes")
#: the columns of a summary without inputs (no forward: the parameter table)
PARAM_COLUMNS = ("num_params", "trainable")
#: torchinfo's row settings; ``var_names`` and ``depth`` only add to what rows show
ROW_SETTINGS = ("depth", "var_names", "ascii_only", "hide_recursive_layers")
VERBOSE = (0, 1, 2)


@dataclasses.dataclass(frozen=True)
class TableOptions:
    """How the table looks (see :func:`table_options`)."""

    columns: tuple[str, ...] = DEFAULT_COLUMNS
    col_width: int | None = None
    row_settings: frozenset[str] = frozenset()
    verbose: int = 0
    fold: bool = True


def _names(value: Any, what: str, allowed: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    try:
        names = tuple(str(getattr(v, "value", v)) for v in value)  # torchinfo's enums are str enums
    except TypeError:
        raise InvalidTypeError(f"{what} must be a list of names, got {value!r:.80}") from None
    allowed = tuple(allowed)
    for n in names:
        if n not in allowed:
            raise choices_error(what[:-1] if what.endswith("s") else what, n, allowed)
    return tuple(dict.fromkeys(names))


def table_options(
    col_names: Any = None,
    col_width: Any = None,
    row_settings: Any = None,
    verbose: Any = 0,
    fold: Any = True,
    *,
    forward: bool = True,
) -> TableOptions:
    """Check the options of ``tv.summary`` (torchinfo's meanings) into :class:`TableOptions`.

    ``col_names``: names of :data:`COLUMNS` (default: :data:`DEFAULT_COLUMNS`, or
    :data:`PARAM_COLUMNS` without a ``forward``, where columns that need one are an error);
    ``mult_adds`` brings ``flops`` beside it.  ``col_width``: the least width of each
    column (an int > 0; None: as wide as the cells).  ``row_settings``: of
    :data:`ROW_SETTINGS`.  ``verbose``: 0, 1 or 2 (2 adds a row per parameter)."""
    columns: tuple[str, ...]
    if col_names is None:
        columns = DEFAULT_COLUMNS if forward else PARAM_COLUMNS
    else:
        columns = _names(col_names, "col_names", COLUMNS)
        if "mult_adds" in columns and "flops" not in columns:
            i = columns.index("mult_adds") + 1
            columns = (*columns[:i], "flops", *columns[i:])
        if not forward:
            need = [c for c in columns if COLUMNS[c].needs_forward]
            if need:
                raise InvalidInputError(
                    f"columns {need} need a forward pass: pass input_size or input_data, "
                    f"or ask only for {[c for c in COLUMNS if not COLUMNS[c].needs_forward]}"
                )
    if col_width is not None and (isinstance(col_width, bool) or not isinstance(col_width, int) or col_width <= 0):
        raise InvalidInputError(f"col_width must be an int > 0 or None, got {col_width!r:.80}")
    rows = frozenset(_names(row_settings, "row_settings", ROW_SETTINGS)) if row_settings is not None else frozenset()
    if verbose not in VERBOSE or isinstance(verbose, bool):
        raise InvalidInputError(
            f"verbose must be 0 (quiet), 1 (print the table) or 2 (also parameters), got {verbose!r}"
        )
    if not isinstance(fold, bool):
        raise InvalidTypeError(f"fold must be True or False, got {fold!r:.80}")
    return TableOptions(columns, col_width, rows, int(verbose), fold)

"""The text table of a :class:`~.summary.Summary`: one row per module call down to a
depth, totals below (human units; the exact integers are the summary's attributes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..graph import ir_of
from ..graph.listing import fmt_shape, one_line
from .fmt import fmt_bytes, fmt_count, fmt_flops

if TYPE_CHECKING:
    from .summary import Row, Summary

HEADER = ("Module", "Class", "Output shape", "Params", "FLOPs", "Activations", "Saved for bwd")
#: columns aligned right (numbers)
RIGHT = frozenset({3, 4, 5, 6})
#: at most this many output shapes per row, then "+N"
MAX_SHAPES = 2
#: at most this many lines naming shared parameters and uncounted ops
MAX_NOTES = 8


def _shapes(row: Row) -> str:
    shapes = [fmt_shape(s) for s in row.output_shapes[:MAX_SHAPES]]
    if len(row.output_shapes) > MAX_SHAPES:
        shapes.append(f"+{len(row.output_shapes) - MAX_SHAPES}")
    return ", ".join(shapes)


def _params(row: Row) -> str:
    text = fmt_count(row.params)
    if row.repeat:
        text = f"({text})"
    return text + (" *" if row.shared_with else "  ")


def _cells(s: Summary, rows: list[Row]) -> list[tuple[str, ...]]:
    g = ir_of(s.graph, "Summary")
    out: list[tuple[str, ...]] = []
    for r in rows:
        node = g.nodes[r.id]
        if node.parent is None:
            name = node.name
        else:
            outer = g.nodes[node.parent].path
            name = r.path[len(outer) + 1 :] if outer and r.path.startswith(outer + ".") else r.path
        if r.call_index:
            name += f" #{r.call_index + 1}"
        out.append(
            (
                "  " * r.depth + one_line(name),
                one_line(r.cls),
                _shapes(r),
                _params(r),
                fmt_flops(r.flops),
                fmt_bytes(r.activation_bytes),
                "–" if r.saved_bytes is None else fmt_bytes(r.saved_bytes),
            )
        )
    return out


def _grid(cells: list[tuple[str, ...]]) -> list[str]:
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(HEADER)]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) if i in RIGHT else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    return [line(HEADER), "  ".join("-" * w for w in widths), *(line(c) for c in cells)]


def _listed(items: list[str], limit: int = MAX_NOTES) -> str:
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f", … {more} more" if more > 0 else "")


def _shared_groups(rows: list[Row]) -> list[tuple[str, ...]]:
    """The modules holding the same parameters, innermost ones only (``transformer``
    shares because ``transformer.wte`` does), each group once."""
    sharing = [r for r in rows if r.shared_with and not r.repeat]
    groups: dict[frozenset[str], None] = {}
    for r in sharing:
        inner = any(
            o.path.startswith(r.path + ".") and set(r.shared_with) <= set(o.shared_with) for o in sharing if o is not r
        )
        if not inner and r.path:
            groups[frozenset((r.path, *r.shared_with))] = None
    return [tuple(sorted(g)) for g in groups]


def _totals(s: Summary, shown: int, depth: int | None) -> list[str]:
    lines = ["", f"Parameters: {fmt_count(s.total_params)} ({s.total_params:,}), each counted once"]
    lines[-1] += f"; trainable {fmt_count(s.trainable_params)}, frozen {fmt_count(s.frozen_params)}"
    lines[-1] += f"; {fmt_bytes(s.param_bytes)}"
    if s.buffers:
        lines[-1] += f"; buffers {fmt_count(s.buffers)} ({fmt_bytes(s.buffer_bytes)})"
    groups = _shared_groups(s.rows)
    if groups:
        pairs = [" ↔ ".join(one_line(p) for p in group) for group in groups]
        lines.append(f"  * parameters shared between modules (counted once): {_listed(pairs)}")
    if any(r.repeat for r in s.rows):
        lines.append("  (...) a module called again: its parameters are counted at its first call")
    flops = f"FLOPs (forward): {fmt_flops(s.total_flops)} ({s.total_flops:,}), 2 per multiply-add"
    if s.uncounted_calls:
        ops = [f"{name.removeprefix('aten.')} ×{n}" for name, n in s.uncounted.items()]
        flops += f"; {s.uncounted_calls:,} op calls not counted (no FLOP formula in torch): {_listed(ops)}"
    else:
        flops += "; every op counted"
    lines.append(flops)
    tm = s.training_memory
    if s.saved_bytes is None:
        lines.append("Saved for backward: not measured (the forward was recorded without grad)")
    else:
        lines.append(f"Saved for backward: {fmt_bytes(s.saved_bytes)} of activations")
    states = "" if s.state_dtype is None else f", {str(s.state_dtype).replace('torch.', '')} states"
    lines.append(
        f"Training memory ({tm.optimizer}{states}): {fmt_bytes(tm.total)} = params {fmt_bytes(tm.params)}"
        f" + grads {fmt_bytes(tm.grads)} + optimizer {fmt_bytes(tm.optimizer_state)}"
        f" + saved activations {fmt_bytes(tm.activations)}"
        + (f" + buffers {fmt_bytes(tm.buffers)}" if tm.buffers else "")
    )
    if shown < len(s.rows):
        lines.append(f"{shown} of {len(s.rows)} module calls shown (depth {depth}); all are in .rows")
    return lines


def render(s: Summary, depth: int | None) -> str:
    rows = [r for r in s.rows if depth is None or r.depth <= depth]
    return "\n".join(_grid(_cells(s, rows)) + _totals(s, len(rows), depth))

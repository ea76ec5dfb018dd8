"""The text table of a :class:`~.summary.Summary`: one row per module call down to a
depth, the columns of its :class:`~.columns.TableOptions`, totals below (human units;
the exact integers are the summary's attributes).

Repeated blocks fold as in the graph (:func:`tensorview.transform.fold.runs`, the same
detection): a run of sibling calls doing the same computation, each fed by the one
before (the 80 decoder layers of a Llama), is one row ``layers.0–79 ×80`` with the
numbers of one call, and the inner rows of its first call; ``fold=False`` lists every call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..graph import Graph, ir_of
from ..graph.listing import fmt_shape, one_line
from ..transform.fold import call_end, runs
from ..transform.scope import children
from .columns import COLUMNS, NOTHING, TableOptions
from .fmt import fmt_bytes, fmt_count, fmt_flops

if TYPE_CHECKING:
    from .summary import Row, Summary

#: at most this many lines naming shared parameters and uncounted ops
MAX_NOTES = 8
#: what ``ascii_only`` writes for the table's own non-ASCII characters
ASCII = {"–": "-", "—": "--", "…": "...", "↔": "<->", "×": "x", "└─": "'-"}


def folds(g: Graph) -> tuple[dict[int, list[int]], set[int]]:
    """``(heads, hidden)``: the first call of each position of a repeated group, with the
    ids of the calls it stands for; the other calls of the runs."""
    heads: dict[int, list[int]] = {}
    hidden: set[int] = set()
    for kids in children(g).values():
        for run, period in runs(g, kids):
            n = len(run) // period
            for j in range(period):
                members = run[j::period][:n]
                heads[members[0]] = members
                hidden.update(members[1:])
    return heads, hidden


def _span_name(names: list[str]) -> str:
    """``h.0–11`` for ``h.0 ... h.11`` numbered one by one, else ``a … b``."""
    first, last = names[0], names[-1]
    stem, _, a = first.rpartition(".")
    stem_b, _, b = last.rpartition(".")
    if stem == stem_b and a.isdigit() and b.isdigit() and int(b) - int(a) == len(names) - 1:
        return f"{first}–{b}"
    return f"{first} … {last}"


def _fold_name(g: Graph, members: list[int], outer: str) -> str:
    """``layers.0–79 ×80``; one module called again and again: ``fc #2–4 ×3``."""
    calls = [g.module(k) for k in members]
    first, last = calls[0], calls[-1]
    if all(c.path == first.path for c in calls):
        return f"{_relative(first.path, outer)} #{first.call_index + 1}–{last.call_index + 1} ×{len(calls)}"
    name = _span_name([_relative(c.path, outer) for c in calls])
    return name + (f" #{first.call_index + 1}" if first.call_index else "") + f" ×{len(calls)}"


def _relative(path: str, outer: str) -> str:
    return path[len(outer) + 1 :] if outer and path.startswith(outer + ".") else path


def _shown(s: Summary, depth: int | None, opts: TableOptions) -> list[tuple[Row, str]]:
    """The rows the table shows, each with its name (relative to the row above it in
    the call tree; folded runs named by their span and count)."""
    g = ir_of(s.graph, "Summary") if s.graph is not None else None
    heads, hidden = folds(g) if g is not None and opts.fold else ({}, set())
    out: list[tuple[Row, str]] = []
    skip_until = -1
    skipping = False
    below: int | None = None  # rows deeper than this are inside a hidden second call
    stack: list[str] = []  # paths of the enclosing rows, by depth
    for r in s.rows:
        del stack[r.depth :]
        outer = stack[-1] if stack else ""
        stack.append(r.path)
        if below is not None and r.depth > below:
            continue
        below = None
        if r.id >= 0:  # a recorded call; rows listed from the module tree (id < 0) follow theirs
            skipping = r.id < skip_until
        if skipping:
            continue
        if r.id in hidden and g is not None:
            skip_until = call_end(g, g.module(r.id))
            continue
        if "hide_recursive_layers" in opts.row_settings and r.repeat:
            below = r.depth  # with what it called
            continue
        if depth is not None and r.depth > depth:
            continue
        if not r.depth:
            name = g.nodes[r.id].name if g is not None else "model"
        elif r.id in heads and g is not None:
            name = _fold_name(g, heads[r.id], outer)
        else:
            name = _relative(r.path, outer) + (f" #{r.call_index + 1}" if r.call_index else "")
        out.append((r, name))
    return out


def _param_rows(s: Summary, r: Row, opts: TableOptions) -> list[tuple[str, ...]]:
    """``verbose=2``: one row per parameter the module holds directly."""
    facts = s.facts.get(r.path)
    if facts is None or r.repeat:
        return []
    cells = {"num_params": lambda p: fmt_count(p.numel) + "  ", "trainable": lambda p: str(p.trainable)}
    cells["output_size"] = lambda p: fmt_shape(p.shape)
    return [
        ("  " * (r.depth + 1) + "└─" + one_line(p.name), "Parameter")
        + tuple(cells[c](p) if c in cells else "" for c in opts.columns)
        for p in facts.params
    ]


def _cells(s: Summary, shown: list[tuple[Row, str]], opts: TableOptions) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    index: dict[int, int] = {}
    for r, name in shown:
        cls = one_line(r.cls)
        if "depth" in opts.row_settings and r.depth:  # torchinfo's depth-index: 1-1, 2-3...
            index[r.depth] = index.get(r.depth, 0) + 1
            cls += f": {r.depth}-{index[r.depth]}"
        facts = s.facts.get(r.path)
        cols = tuple(
            COLUMNS[c].cell(r, s.total_params, facts) if r.ran or not COLUMNS[c].needs_forward else NOTHING
            for c in opts.columns
        )
        out.append(("  " * r.depth + one_line(name), cls, *cols))
        if opts.verbose >= 2:
            out.extend(_param_rows(s, r, opts))
    return out


def _grid(header: tuple[str, ...], right: set[int], cells: list[tuple[str, ...]], least: int | None) -> list[str]:
    widths = [max([len(h), least or 0] + [len(c[i]) for c in cells]) for i, h in enumerate(header)]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    return [line(header), "  ".join("-" * w for w in widths), *(line(c) for c in cells)]


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


def _params(s: Summary) -> list[str]:
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
    return lines


def _totals(s: Summary) -> list[str]:
    lines = _params(s)
    if s.uninitialised:
        lines.append(
            f"  {s.uninitialised} parameters or buffers of lazy modules are not initialised yet: counted as 0 "
            "(a forward gives them their shapes)"
        )
    if not s.forward:
        return lines + ["No forward ran: pass input_size or input_data for shapes, FLOPs and memory"]
    if s.fallback:
        lines.append(f"Recorded on the model's device, not meta: {one_line(s.fallback)}")
    if s.mode_fallback:
        lines.append(
            f"Recorded in eval mode, not training mode, where the forward raised {one_line(s.mode_fallback)} "
            "(saved bytes are eval mode's; mode='train' raises it)"
        )
    flops = f"FLOPs (forward): {fmt_flops(s.total_flops)} ({s.total_flops:,}), 2 per multiply-add"
    flops += f" ({fmt_flops(s.total_mult_adds, 'MACs')})"
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
    return lines


def _ascii(text: str) -> str:
    for k, v in ASCII.items():
        text = text.replace(k, v)
    return text.encode("ascii", "backslashreplace").decode("ascii")


def render(s: Summary, depth: int | None, opts: TableOptions) -> str:
    shown = _shown(s, depth, opts)
    cells = _cells(s, shown, opts)
    header = ("Module", "Class", *(COLUMNS[c].header for c in opts.columns))
    right = {i + 2 for i, c in enumerate(opts.columns) if COLUMNS[c].right}
    lines = _grid(header, right, cells, opts.col_width) + _totals(s)
    if len(shown) < len(s.rows):
        how = [f"depth {depth}"] if depth is not None else []
        if opts.fold and any("×" in c[0] for c in cells):
            how.append("repeated blocks folded, table(fold=False) lists them")
        lines.append(f"{len(shown)} of {len(s.rows)} module calls shown ({'; '.join(how)}); all are in .rows")
    text = "\n".join(lines)
    return _ascii(text) if "ascii_only" in opts.row_settings else text

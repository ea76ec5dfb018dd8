"""What ``tv.memory`` returns: the memory of a training step, at its peak, per phase, per
module call and as a timeline (docs/cost-model.md, "Will it fit?").

Every number is built from the rows PyTorch's memory tracker saw (tracker.py): a row is
one storage made, freed or resized, with the bytes live after it.  ``peak_bytes`` is the
largest of those; a phase's ``peak_bytes`` the largest within it and its ``end_bytes``
what is live when it ends; a module call's ``peak_bytes`` the largest while it ran (or
its backward ran), ``added_bytes`` that less what was live when it began, and
``held_at_peak`` the bytes made during the call that are still live at the step's peak.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..errors import InvalidInputError
from ..graph.listing import one_line
from .fmt import fmt_bytes

#: the categories, in the order tables and plots stack them
CATEGORIES = ("parameter", "buffer", "gradient", "optimizer state", "input", "activation", "temporary")
#: the phases of a training step, in order
PHASES = ("forward", "backward", "optimizer")
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9, "t": 10**12}
_UNITS.update({"tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40})


@dataclass(frozen=True, slots=True)
class Event:
    """One change of the live bytes: a storage made (``alloc``), freed or resized."""

    index: int
    kind: str
    bytes: int  # the change: negative for a free
    live: int  # bytes live after it
    category: str
    phase: str  # setup, forward, backward, optimizer
    module: str | None  # the innermost module running ("" the root, None outside the model)
    step: int
    block: int  # which storage (the same number for its alloc and its free)


@dataclass(frozen=True, slots=True)
class PhaseMemory:
    peak_bytes: int
    end_bytes: int


@dataclass(frozen=True, slots=True)
class ModuleMemory:
    """One module call: its forward, its backward, or its recomputation (checkpointing)."""

    path: str
    phase: str
    step: int
    bytes_before: int
    peak_bytes: int
    held_at_peak: int

    @property
    def added_bytes(self) -> int:
        return self.peak_bytes - self.bytes_before


@dataclass(frozen=True)
class MemoryReport:
    """The memory of one training step (or of inference with ``mode="eval"``)."""

    model: str
    device: str
    settings: str
    timeline: tuple[Event, ...]
    by_module: tuple[ModuleMemory, ...]
    rerun: Callable[[int], MemoryReport] | None = field(default=None, repr=False, compare=False)
    batch: int | None = None

    @cached_property
    def peak_index(self) -> int:
        """The event at the peak (the first, if the peak is reached again)."""
        best = -1
        for e in self.timeline:
            if best < 0 or e.live > self.timeline[best].live:
                best = e.index
        return best

    @property
    def peak_bytes(self) -> int:
        i = self.peak_index
        return self.timeline[i].live if i >= 0 else 0

    @property
    def peak_phase(self) -> str:
        i = self.peak_index
        return self.timeline[i].phase if i >= 0 else "setup"

    @property
    def peak_module(self) -> str | None:
        i = self.peak_index
        return self.timeline[i].module if i >= 0 else None

    @property
    def phases(self) -> dict[str, PhaseMemory]:
        out: dict[str, PhaseMemory] = {}
        for phase in PHASES:
            rows = [e.live for e in self.timeline if e.phase == phase]
            if rows:
                out[phase] = PhaseMemory(max(rows), rows[-1])
        return out

    def live_at(self, index: int) -> dict[str, int]:
        """Bytes live after event ``index``, by category."""
        out = dict.fromkeys(CATEGORIES, 0)
        for e in self.timeline[: index + 1]:
            out[e.category] += e.bytes
        return out

    @property
    def at_peak(self) -> dict[str, int]:
        """Bytes live at the peak, by category (they add up to ``peak_bytes``)."""
        return self.live_at(self.peak_index)

    def max_batch_size(self, budget: int | str, *, limit: int = 2**20) -> int:
        """The largest batch (first dimension of the inputs) whose step fits in ``budget``
        bytes (an int or ``"80GiB"``, ``"24 GB"``), searched by recording steps on meta:
        doubling, then bisection (memory grows with the batch).  0 if a batch of one
        does not fit."""
        if self.rerun is None or self.batch is None:
            raise InvalidInputError(
                "max_batch_size needs a report of tv.memory on meta whose inputs have a batch "
                "dimension (input_size, or input_data tensors of the same first dimension)"
            )
        cap = parse_bytes(budget)
        rerun = self.rerun

        def fits(b: int) -> bool:
            return rerun(b).peak_bytes <= cap

        if not fits(1):
            return 0
        low, high = 1, 2
        while high <= limit and fits(high):
            low, high = high, high * 2
        if high > limit:
            return low
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (mid, high) if fits(mid) else (low, mid)
        return low

    @staticmethod
    def parse_budget(value: int | str) -> int:
        """What ``max_batch_size`` takes as a budget, in bytes (``"80GiB"`` is 80 * 2**30)."""
        return parse_bytes(value)

    def table(self, depth: int = 2) -> str:
        """The text of ``str(report)``: peak, phases, categories at the peak, and the
        module calls down to ``depth`` with what each adds at its own peak."""
        peak = self.peak_bytes
        where = f", in module {one_line(self.peak_module or '(model)')}" if self.peak_module is not None else ""
        lines = [
            f"Memory of {one_line(self.model)} on {self.device} ({one_line(self.settings)})",
            f"Peak: {fmt_bytes(peak)} ({peak:,} B) in {self.peak_phase}{where}",
            "At the peak: " + ", ".join(f"{k} {fmt_bytes(v)}" for k, v in self.at_peak.items() if v),
            "",
            _columns(
                ["Phase", "Peak", "End"],
                [[p, fmt_bytes(m.peak_bytes), fmt_bytes(m.end_bytes)] for p, m in self.phases.items()],
            ),
        ]
        rows = [m for m in self.by_module if _depth(m.path) <= depth]
        if rows:
            body = [
                [_label(m.path), m.phase, fmt_bytes(m.peak_bytes), fmt_bytes(m.added_bytes), fmt_bytes(m.held_at_peak)]
                for m in rows
            ]
            lines += ["", _columns(["Module", "Phase", "Peak", "Added", "Held at peak"], body, left=2)]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def save(self, path: Any) -> None:
        """``report.save("mem.svg")``: the timeline, stacked by category (memsvg.py);
        ``"mem.html"``: the same, interactive (memhtml.py: hover, zoom), one offline page."""
        import os

        name = os.fsdecode(path)
        kind = name.lower().rpartition(".")[2]
        if kind == "svg":
            from .memsvg import timeline_svg as write
        elif kind in ("html", "htm"):
            from .memhtml import timeline_html as write
        else:
            raise InvalidInputError(
                f"cannot save a memory report as {name!r}: the formats are SVG and HTML (a name ending .svg or .html)"
            )
        with open(name, "w", encoding="utf-8") as f:
            f.write(write(self))


def parse_bytes(value: int | str) -> int:
    """``80GiB``, ``24 GB``, ``1.5e9`` or an int, as bytes."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    m = (
        re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?(?:e[0-9]+)?)\s*([a-zA-Z]*)\s*", value)
        if isinstance(value, str)
        else None
    )
    if m is None or m.group(2).lower() not in _UNITS:
        raise InvalidInputError(
            f"bad memory budget {value!r}: give bytes as an int, or a number with a unit "
            "(B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. '80GiB'"
        )
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def module_rows(
    calls: list[tuple[str, str, int, int, int, int, int]], events: tuple[Event, ...]
) -> tuple[ModuleMemory, ...]:
    """The module calls (tracker.py's ``calls``) as ``ModuleMemory``, in the order they began."""
    lives = [e.live for e in events]
    peak = max(range(len(lives)), key=lives.__getitem__) if lives else -1
    freed = {e.block: e.index for e in events if e.kind == "free"}
    held = [0] * (len(events) + 1)  # prefix sums of bytes made and alive at the peak
    for e in events:
        keep = e.kind == "alloc" and e.index <= peak and freed.get(e.block, len(events)) > peak
        held[e.index + 1] = held[e.index] + (e.bytes if keep else 0)
    rows = []
    for path, phase, step, start, end, before, _ in sorted(calls, key=lambda c: c[6]):
        top = max(lives[start:end], default=before)
        rows.append(ModuleMemory(path, phase, step, before, max(before, top), held[end] - held[start]))
    return tuple(rows)


def _depth(path: str) -> int:
    return 0 if path == "" else path.count(".") + 1


def _label(path: str) -> str:
    return "  " * _depth(path) + one_line(path or "(model)")


def _columns(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    """A text table; the first ``left`` columns flush left, the numbers flush right."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [header, ["-" * w for w in widths], *rows]
    return "\n".join(
        "  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in lines
    )


__all__ = ["CATEGORIES", "PHASES", "Event", "MemoryReport", "ModuleMemory", "PhaseMemory", "module_rows", "parse_bytes"]

"""``GraphDiff``: what ``tv.diff`` found, as data, as a short text report and as JSON.

The text report lists differences in data-flow order (the order of the first graph's
forward), one line each, with repeats folded: lines that differ only in the numbers of
their module path (``layers.0`` ... ``layers.31``) become one line, ``layers.0–31: each
adds q_norm (RMSNorm)``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .index import Tree

#: kinds of differences between two matched calls; ``names`` stands for renames
KINDS = ("class", "shape", "dtype", "params", "flops", "saved_bytes", "ops", "flow", "order", "wrap", "names")
LEVELS = ("module", "op")
#: how a picture puts the two graphs: one merged graph, or side by side
LAYOUTS = ("merged", "side", "viewer")


@dataclass(frozen=True, slots=True)
class Difference:
    """One way two matched calls differ: ``kind`` (one of ``KINDS``) and what changed."""

    kind: str
    detail: str


@dataclass(frozen=True, slots=True)
class Change:
    """A call found in both graphs (``a``/``b``: its paths there) that differs."""

    a: str
    b: str
    cls: str
    differences: tuple[Difference, ...]
    order: int = field(default=0, compare=False)
    #: the call's node ids in a and b
    nodes: tuple[int, int] = field(default=(-1, -1), compare=False)

    @property
    def kinds(self) -> set[str]:
        return {d.kind for d in self.differences}


@dataclass(frozen=True, slots=True)
class Edit:
    """A call found in one graph only: its path there, class, and the call holding it."""

    path: str
    cls: str
    parent: str
    name: str  # relative to ``parent``
    calls: int  # module calls in it, itself included
    order: float = field(default=0.0, compare=False)
    #: the call's node id (in b for an added call, in a for a removed one)
    node: int = field(default=-1, compare=False)


@dataclass(eq=False)
class GraphDiff:
    """The differences between graph ``a`` and graph ``b`` (``tv.diff(a, b)``).

    ``added``/``removed``: paths of calls found only in b / only in a (the outermost of
    each added or removed subtree); ``renamed``: ``(path in a, path in b)`` of matched calls
    whose name changed; ``changed``: ``Change``s of matched calls that differ, each with
    its ``differences``.  ``identical``: nothing of that; ``same_structure``: at most renames.
    """

    level: str
    names: tuple[str, str]
    added_calls: list[Edit] = field(default_factory=list)
    removed_calls: list[Edit] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)
    ignore: tuple[str, ...] = ()
    #: the whole models' costs that differ, ``{layer: (a, b)}`` (flops, saved_bytes:
    #: compared where both recordings carry them)
    totals: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: matched call ids (a -> b), for pictures
    matched: dict[int, int] = field(default_factory=dict, repr=False)
    #: matched op ids (a -> b) inside matched calls whose structures differ (ops of calls
    #: with equal signatures pair in order: ``op_pairs()``)
    matched_ops: dict[int, int] = field(default_factory=dict, repr=False)
    #: a wrapped (or unwrapped) call and its counterpart inside the wrapper (a id -> b id)
    wrapped: dict[int, int] = field(default_factory=dict, repr=False)
    trees: tuple[Tree, Tree] | None = field(default=None, repr=False)
    _rename_order: dict[tuple[str, str], int] = field(default_factory=dict, repr=False)

    @property
    def added(self) -> list[str]:
        return [e.path for e in self.added_calls]

    @property
    def removed(self) -> list[str]:
        return [e.path for e in self.removed_calls]

    @property
    def same_structure(self) -> bool:
        return not (self.added_calls or self.removed_calls or self.changed or self.totals)

    @property
    def identical(self) -> bool:
        return self.same_structure and not self.renamed

    def __bool__(self) -> bool:
        """True when there is a difference (as a non-empty list)."""
        return not self.identical

    # -- text ------------------------------------------------------------------------
    def lines(self) -> list[str]:
        """The report's lines, first difference (in a's data-flow order) first, repeats folded."""
        items: list[tuple[float, str, str, str]] = []  # order, prefix, subject, phrase
        for e in self.removed_calls:
            items.append((e.order, "", _shown(e.parent), f"removes {e.name} ({e.cls}{_inside(e.calls)})"))
        for e in self.added_calls:
            items.append((e.order, "", _shown(e.parent), f"adds {e.name} ({e.cls}{_inside(e.calls)})"))
        for a, b in self.renamed:
            items.append((self._rename_order.get((a, b), 0), "renamed ", f"{_shown(a)} -> {_shown(b)}", ""))
        for c in self.changed:
            phrase = "; ".join(d.detail if d.kind == "wrap" else f"{d.kind} {d.detail}" for d in c.differences)
            items.append((c.order, "", _shown(c.a), phrase))
        items.sort(key=lambda x: x[0])
        return fold((p, s, ph) for _, p, s, ph in items)

    def __str__(self) -> str:
        a, b = self.names
        head = f"{a} vs {b} ({self.level} level)"
        if self.identical:
            return f"{head}: identical"
        counts = [
            f"{len(v)} {k}"
            for k, v in (
                ("added", self.added_calls),
                ("removed", self.removed_calls),
                ("changed", self.changed),
                ("renamed", self.renamed),
            )
            if v
        ]
        totals = [f"  total {k} {a:,} -> {b:,}" for k, (a, b) in self.totals.items()]
        if not counts:
            counts = ["costs differ"]
        return "\n".join([f"{head}: {', '.join(counts)}", *(f"  {line}" for line in self.lines()), *totals])

    def __repr__(self) -> str:
        state = "identical" if self.identical else f"{len(self.lines())} lines"
        return f"<GraphDiff {self.names[0]} vs {self.names[1]}: {state}>"

    # -- JSON ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain data: every difference, unfolded, plus the folded report lines."""
        return {
            "schema": "tensorview.diff",
            "schema_version": 1,
            "a": self.names[0],
            "b": self.names[1],
            "level": self.level,
            "ignore": list(self.ignore),
            "identical": self.identical,
            "same_structure": self.same_structure,
            "added": [_edit(e) for e in self.added_calls],
            "removed": [_edit(e) for e in self.removed_calls],
            "renamed": [{"a": a, "b": b} for a, b in self.renamed],
            "changed": [
                {
                    "a": c.a,
                    "b": c.b,
                    "class": c.cls,
                    "differences": [{"kind": d.kind, "detail": d.detail} for d in c.differences],
                }
                for c in self.changed
            ],
            "totals": {k: {"a": a, "b": b} for k, (a, b) in self.totals.items()},
            "report": self.lines(),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def save(self, path: str, *, depth: int | None = None, layout: str | None = None) -> str:
        """Write the diff to ``path``: ``.json`` (``to_json``), ``.txt`` (the report),
        ``.html`` (a page with the list of differences to step through), or a picture
        (``.svg``, ``.gv``, ``.png``, ``.pdf``): added green, removed red, changed amber.
        ``layout``: ``"viewer"``, the page's default: both graphs in the interactive
        viewer, side by side, opening, closing and selection kept in step (live.py);
        ``"merged"``, one graph, the union of both (merged.py, the default of pictures);
        ``"side"``, both side by side in one static picture (picture.py).  ``depth``: the
        deepest module level drawn (the viewers' first depth)."""
        from .picture import save

        return save(self, path, depth=depth, layout=layout)


def _edit(e: Edit) -> dict[str, Any]:
    return {"path": e.path, "class": e.cls, "parent": e.parent, "calls": e.calls}


def _shown(path: str) -> str:
    return path or "(root)"


def _inside(calls: int) -> str:
    return f", {calls - 1} calls inside" if calls > 1 else ""


_NUMBER = re.compile(r"(?<![\w])(\d+)(?![\w])")


def fold(items: Iterable[tuple[str, str, str]]) -> list[str]:
    """``(prefix, subject, phrase)`` lines, those differing only in the numbers of their
    subject's path folded into one: ``layers.0–31: each adds q_norm (RMSNorm)``.

    >>> fold([("", "h.0.attn", "adds q_norm"), ("", "h.1.attn", "adds q_norm"), ("", "h.2", "x")])
    ['h.0–1.attn: each adds q_norm', 'h.2: x']
    """
    groups: dict[tuple[str, tuple[str, ...], str], list[list[int]]] = {}
    for prefix, subject, phrase in items:
        parts = _NUMBER.split(subject)
        key = (prefix, tuple(parts[0::2]), phrase)
        groups.setdefault(key, []).append([int(x) for x in parts[1::2]])
    out: list[str] = []
    for (prefix, texts, phrase), numbers in groups.items():
        spans = [_span([n[k] for n in numbers]) for k in range(len(texts) - 1)]
        if None in spans:  # not runs of consecutive numbers: one line each
            out.extend(_line(prefix, texts, [str(x) for x in n], phrase, False) for n in numbers)
        else:
            out.append(_line(prefix, texts, [s for s in spans if s is not None], phrase, len(numbers) > 1))
    return out


def _line(prefix: str, texts: tuple[str, ...], numbers: list[str], phrase: str, each: bool) -> str:
    subject = "".join(t + (numbers[k] if k < len(numbers) else "") for k, t in enumerate(texts))
    if not phrase:
        return f"{prefix}{subject}"
    return f"{prefix}{subject}: {'each ' if each else ''}{phrase}"


def _span(values: list[int]) -> str | None:
    """``[0, 1, 2, 3]`` -> ``0–3``; ``[1, 1]`` -> ``1``; ``None`` for anything else."""
    if all(v == values[0] for v in values):
        return str(values[0])
    if values == list(range(values[0], values[0] + len(values))):
        return f"{values[0]}–{values[-1]}"
    return None

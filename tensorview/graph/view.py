"""The view: what a renderer draws.  Plain data computed from a ``Graph`` by
``tensorview.transform.build_view`` as ``ViewOptions`` ask; every node and edge carries
its execution order.  It lives beside the IR so that renderers depend on the data, never
on the transform that computes it."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import operator
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import GraphLintError, InvalidInputError, InvalidTypeError, choices_error
from .graph import Graph
from .nodes import ModuleNode, Node

FOLDS = (True, False, "auto")
#: the depth ``float("inf")`` stands for (every depth; an int, so views and JSON stay ints)
DEPTH_ALL = 2**31 - 1
Fold = bool | Literal["auto"]


@dataclass(frozen=True)
class ViewOptions:
    """What a view shows, with torchview's meanings where torchview has the option.

    ``depth``: module calls at this depth are boxes, shallower ones are opened, deeper
    ones hidden (0: the whole model is one box; a float is rounded down, ``float("inf")``
    opens every depth and is kept as ``DEPTH_ALL``).  ``expand_nested``: draw a dashed box
    around the contents of every opened module.  ``hide_inner_tensors``: show only the
    graph's input/output tensors, tensors made in forward, and parameters when shown.
    ``hide_module_functions``: never open ``torch.nn`` leaf modules (``Conv2d``, ``Linear``;
    containers still open).  ``roll``: merge repeated calls of one module path.
    ``show_shapes``: shapes on the nodes.  ``show_params``: parameter and buffer nodes.
    ``fold``: fold runs of identical consecutive sibling calls into one box
    (``True``/``False``/``"auto"``: runs of at least ``FOLD_AUTO_REPEATS`` repeats, and
    every run when more than ``FOLD_AUTO_THRESHOLD`` nodes would still be visible).
    ``open_folds``: draw each fold as a box around one of its repeats, opened (``True``:
    the first; an int ``i``: the ``i``-th, negative from the end), instead of a closed box.
    How the view is drawn (direction, name, layout) is a ``RenderOptions`` of the renderer.
    """

    depth: int = 3
    expand_nested: bool = False
    hide_inner_tensors: bool = True
    hide_module_functions: bool = True
    roll: bool = False
    show_shapes: bool = True
    show_params: bool = False
    fold: Fold = "auto"
    open_folds: bool | int = False

    def __post_init__(self) -> None:
        if not isinstance(self.depth, (bool, int)) and hasattr(type(self.depth), "__index__"):
            with contextlib.suppress(TypeError):  # numpy integers; anything else is named below
                object.__setattr__(self, "depth", operator.index(self.depth))
        if isinstance(self.depth, (int, float)) and not isinstance(self.depth, bool) and self.depth < 0:
            raise InvalidInputError(f"depth must be >= 0, got {self.depth!r}")
        if isinstance(self.depth, float) and self.depth >= 0:  # torchview: float("inf") = all
            object.__setattr__(self, "depth", DEPTH_ALL if self.depth > DEPTH_ALL else math.floor(self.depth))
        if isinstance(self.depth, bool) or not isinstance(self.depth, int):
            raise InvalidTypeError(f"depth must be an int or float('inf') (every depth), got {self.depth!r}")
        for name in (
            "expand_nested",
            "hide_inner_tensors",
            "hide_module_functions",
            "roll",
            "show_shapes",
            "show_params",
        ):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise InvalidTypeError(f"{name} must be True or False, got {value!r}")
        if not any(self.fold is f or (isinstance(f, str) and self.fold == f) for f in FOLDS):
            raise InvalidInputError(f"unknown fold: {self.fold!r} (must be one of [True, False, 'auto'])")
        if not isinstance(self.open_folds, int) and hasattr(type(self.open_folds), "__index__"):
            with contextlib.suppress(TypeError):
                object.__setattr__(self, "open_folds", operator.index(self.open_folds))
        if not isinstance(self.open_folds, int):
            raise InvalidTypeError(
                f"open_folds must be True, False or the index of the repeat to open, got {self.open_folds!r}"
            )

    @property
    def open_repeat(self) -> int | None:
        """Which repeat of a fold is drawn opened (``None``: folds are closed boxes)."""
        if self.open_folds is False:
            return None
        return 0 if self.open_folds is True else int(self.open_folds)

    def replace(self, **changes: Any) -> ViewOptions:
        """A copy with ``changes``; an unknown option name is an ``InvalidInputError``."""
        unknown = sorted(set(changes) - VIEW_OPTION_NAMES)
        if unknown:
            raise choices_error("view option", unknown[0], VIEW_OPTION_NAMES)
        return dataclasses.replace(self, **changes)


VIEW_OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(ViewOptions))


class ViewNode:
    """One drawn node, standing for the IR node ``ir`` (a tensor, an op, or a module call
    drawn as a box).  ``id`` is the IR node's id, so it is unique within a view.

    ``calls``: how many calls were rolled into this node (``roll=True``); ``members``:
    the module calls folded into this box (``fold``), first to last, else empty;
    ``period``: how many calls make one repeated group of the fold.
    ``cluster``: id of the innermost cluster drawn around it (an opened module with
    ``expand_nested``, an opened fold with ``open_folds``).
    ``index``: position in the view's execution order (0-based).
    ``group``: for a node standing for several outputs of one field of the returned value
    (``past_key_values``: 80 × 2 tensors), their tensor ids in return order, else empty.
    """

    __slots__ = (
        "id",
        "ir",
        "kind",
        "order",
        "index",
        "cluster",
        "calls",
        "members",
        "period",
        "group",
        "is_input",
        "is_output",
    )

    def __init__(self, ir: Node, cluster: int | None = None) -> None:
        self.id = ir.id
        self.ir = ir
        self.kind = ir.kind
        self.order = ir.id
        self.index = 0
        self.cluster = cluster
        self.calls = 1
        self.members: tuple[int, ...] = ()
        self.period = 1  # calls per repeated group of a fold (2 for Linear, ReLU, Linear, ReLU...)
        self.group: tuple[int, ...] = ()
        self.is_input = False
        self.is_output = False

    @property
    def name(self) -> str:
        return self.ir.name

    @property
    def folded(self) -> int:
        """How many repeats this box stands for (1 unless folded)."""
        return len(self.members) // self.period or 1

    def __repr__(self) -> str:
        extra = f" ×{self.folded}" if self.members else ""
        extra += f" calls={self.calls}" if self.calls > 1 else ""
        return f"<ViewNode {self.kind} {self.name!r}{extra}>"


class ViewEdge:
    """Data flowing from ``src`` to ``dst`` (view node ids) ``count`` times; ``order`` is
    the position of its first use in the forward (an index into ``Graph.edges``)."""

    __slots__ = ("src", "dst", "count", "order")

    def __init__(self, src: int, dst: int, count: int, order: int) -> None:
        self.src, self.dst, self.count, self.order = src, dst, count, order

    def __repr__(self) -> str:
        return f"<ViewEdge {self.src}->{self.dst} ×{self.count}>"


class Cluster:
    """An opened module call drawn as a dashed box around its contents, or an opened fold
    (``open_folds``): a box around one repeat of the fold, drawn opened, that stands for
    all of them.  For a fold, ``ir`` is the first call of the repeat drawn, ``members``
    the calls folded (first to last), ``period`` the calls per repeat and ``shown`` the
    index of the repeat drawn; ``members`` is empty for a plain opened module."""

    __slots__ = ("id", "ir", "parent", "order", "members", "period", "shown", "graph")

    def __init__(
        self,
        ir: ModuleNode,
        parent: int | None,
        members: tuple[int, ...] = (),
        period: int = 1,
        shown: int = 0,
        graph: Graph | None = None,
    ) -> None:
        self.id = ir.id
        self.ir = ir
        self.parent = parent  # enclosing cluster id, None at top level
        self.order = ir.id
        self.members = members
        self.period = period
        self.shown = shown
        self.graph = graph  # the recording, for a fold's member paths

    @property
    def folded(self) -> int:
        """How many repeats this cluster stands for (1 unless it is a fold)."""
        return len(self.members) // self.period or 1

    @property
    def label(self) -> str:
        if self.members and self.graph is not None:
            return fold_title(self.graph, self.members, self.period)
        return f"{self.ir.call_name}: {self.ir.cls_name}"


def fold_title(g: Graph, members: tuple[int, ...], period: int) -> str:
    """``layers.0–79: LlamaDecoderLayer ×80`` (``0–11: Linear, ReLU ×6`` for a group)."""
    paths = [g.module(m).call_name for m in members]
    cls = ", ".join(g.module(m).cls_name for m in members[:period])
    return f"{span(paths)}: {cls} ×{len(members) // period or 1}"


def span(paths: list[str]) -> str:
    """``layers.0–79`` for ``layers.0`` ... ``layers.79``; ``a–b`` otherwise."""
    first, last = paths[0], paths[-1]
    head, _, a = first.rpartition(".")
    head2, _, b = last.rpartition(".")
    if head == head2 and a.isdigit() and b.isdigit():
        return f"{head}.{a}–{b}" if head else f"{a}–{b}"
    return f"{first}–{last}"


class View:
    """Nodes (in execution order), aggregated edges (in order of first use) and clusters."""

    def __init__(
        self,
        graph: Graph,
        options: ViewOptions,
        nodes: list[ViewNode],
        edges: list[ViewEdge],
        clusters: list[Cluster],
        folded: bool,
    ) -> None:
        self.graph = graph
        self.options = options
        self.nodes = nodes
        self.edges = edges
        self.clusters = clusters
        #: whether fold was applied (``fold=True``, or ``"auto"`` on a big graph)
        self.folded = folded
        self.by_id = {n.id: n for n in nodes}

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[ViewNode]:
        return iter(self.nodes)

    def __getitem__(self, node_id: int) -> ViewNode:
        return self.by_id[node_id]

    def node(self, name: str) -> ViewNode:
        """The view node standing for the IR node called ``name``."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def names(self) -> list[str]:
        return [n.name for n in self.nodes]

    def edge_names(self) -> list[tuple[str, str, int]]:
        """``(src name, dst name, count)`` per edge, in order of first use."""
        by = self.by_id
        return [(by[e.src].name, by[e.dst].name, e.count) for e in self.edges]

    def lint(self) -> None:
        """No dangling edges, no self-loops (unless rolled), no duplicate edges, clusters nest."""
        by = self.by_id
        seen: set[tuple[int, int]] = set()
        for e in self.edges:
            if e.src not in by or e.dst not in by:
                raise GraphLintError(f"view edge {e!r} names a node that is not in the view")
            if e.src == e.dst and not self.options.roll:
                raise GraphLintError(f"view edge {e!r} is a self-loop")
            if e.count < 1:
                raise GraphLintError(f"view edge {e!r} has count {e.count}")
            if (e.src, e.dst) in seen:
                raise GraphLintError(f"view edge {e!r} is listed twice")
            seen.add((e.src, e.dst))
        clusters = {c.id for c in self.clusters}
        for c in self.clusters:
            if c.parent is not None and c.parent not in clusters:
                raise GraphLintError(f"cluster {c.label!r} has a missing parent {c.parent}")
        for n in self.nodes:
            if n.cluster is not None and n.cluster not in clusters:
                raise GraphLintError(f"{n!r} lies in a missing cluster {n.cluster}")
        orders = [n.order for n in self.nodes]
        if orders != sorted(orders):
            raise GraphLintError("view nodes are not in execution order")

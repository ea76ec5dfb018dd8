"""Which module calls are boxes, which are opened, and what is hidden inside a box.

One pass over the nodes in execution order (a parent always comes before its children):
a call is a box when it reaches ``depth``, has nothing recorded inside (opaque), or is a
``torch.nn`` builtin with ``hide_module_functions``; shallower calls are opened; anything
inside a box is hidden in it.  With fold, runs of identical sibling calls (or of a
repeated group of up to four calls, such as ``Linear, ReLU``) found when their parent is
opened become one box (the first member stands for the run).  With ``open_folds``, one
repeat of each fold is opened instead (whatever ``depth`` says of the repeat itself) and
drawn inside a cluster standing for the fold; the other repeats are *ghosts*: decided
like the one shown, never drawn, their nodes mapped onto the shown repeat's (roll.py).
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import InvalidInputError
from ..graph import FunctionNode, Graph, ModuleNode, TensorNode, ViewOptions
from .fold import call_end, runs

#: ``fold="auto"`` folds every run of at least this many repeats, whatever the view's size
FOLD_AUTO_REPEATS = 3

#: which runs fold: ``None`` none, else a test of ``(calls, period)``
Select = Callable[[list[int], int], bool] | None


def fold_all(run: list[int], period: int) -> bool:
    return True


def auto_select(g: Graph) -> Select:
    """``fold="auto"``'s test: at least ``FOLD_AUTO_REPEATS`` repeats, of different module
    paths (repeated calls of one module are a loop, which ``roll`` draws)."""

    def select(run: list[int], period: int) -> bool:
        return len(run) // period >= FOLD_AUTO_REPEATS and len({g.nodes[m].path for m in run}) == len(run)

    return select


class Scope:
    """``box_of[i]``: id of the box node ``i`` is drawn in (``i`` itself for a box), or -1
    when ``i`` is drawn on its own (or is an opened call).  ``opened[i]`` is 1 for opened
    calls.  ``region[m]`` (modules): the innermost opened call containing ``m`` or ``m``
    itself when opened, -1 for the top level; a box in the shown repeat of an opened fold
    has the fold's cluster as region.  ``members``: fold head -> the run's calls.
    ``visible``: how many functions and boxes are drawn.

    Opened folds: ``open``: fold cluster id (the shown repeat's first call) -> fold head;
    ``fregion[m]``: the innermost fold cluster containing module ``m`` (or ``m`` itself
    when it is one), -1 outside; ``ghost[i]``: 1 inside a repeat that is not drawn;
    ``shadow``: each ghost repeat's call -> the shown call it maps onto; ``ghost_top[i]``:
    the outermost ghost call containing node ``i`` (-1 outside ghosts); ``span``: ghost
    call -> ``(first id, end, parent call)`` of all its fold's calls."""

    __slots__ = (
        "box_of",
        "opened",
        "region",
        "members",
        "period",
        "visible",
        "open",
        "fregion",
        "ghost",
        "shadow",
        "ghost_top",
        "span",
    )

    def __init__(self, n: int) -> None:
        self.box_of = [-1] * n
        self.opened = bytearray(n)
        self.region = [-1] * n
        self.members: dict[int, tuple[int, ...]] = {}
        self.period: dict[int, int] = {}  # fold head -> calls per repeated group
        self.visible = 0
        self.open: dict[int, int] = {}
        self.fregion = [-1] * n
        self.ghost = bytearray(n)
        self.shadow: dict[int, int] = {}
        self.ghost_top = [-1] * n
        self.span: dict[int, tuple[int, int, int]] = {}


def children(g: Graph) -> dict[int, list[int]]:
    """Direct function/module children of every module call, in execution order."""
    kids: dict[int, list[int]] = {}
    for n in g.nodes:
        if n.parent is not None and type(n) is not TensorNode:
            kids.setdefault(n.parent, []).append(n.id)
    return kids


def _is_leaf(g: Graph, m: ModuleNode, opts: ViewOptions, has_calls: bytearray) -> bool:
    # a torch.nn builtin that calls no submodule (Conv2d, not Sequential) stays closed
    return (
        m.opaque
        or call_end(g, m) == m.id + 1
        or (opts.hide_module_functions and m.is_torch_builtin and not has_calls[m.id])
    )


class _Folds:
    """Fold membership found so far: closed runs' members point at their head; opened
    runs' shown calls at their cluster, ghost calls at the shown call they map onto."""

    def __init__(self, g: Graph, s: Scope, select: Select, repeat: int | None) -> None:
        self.g, self.s, self.repeat = g, s, repeat
        self.kids = children(g) if select is not None else {}
        self.select = select
        self.head_of: dict[int, int] = {}  # closed fold member -> its run's first call
        self.shown: dict[int, int] = {}  # shown call of an opened fold -> the fold's cluster
        self.head: dict[int, int] = {}  # call of an opened fold -> the fold's head
        self.fits = False  # whether some fold has the repeat asked for
        self.longest = 0

    def find(self, m: int) -> None:
        """Record the runs among the children of the opened call ``m``."""
        if self.select is None:
            return
        s = self.s
        for run, period in runs(self.g, self.kids.get(m, [])):
            if not self.select(run, period):
                continue
            head = run[0]
            s.members[head] = tuple(run)
            s.period[head] = period
            if self.repeat is None:
                for k in run[1:]:
                    self.head_of[k] = head
                continue
            n = len(run) // period
            k = self.repeat
            if -n <= k < n:
                self.fits = True
            k = min(max(k, -n), n - 1) % n  # a shorter fold shows its nearest end
            self.longest = max(self.longest, n)
            shown = run[k * period : (k + 1) * period]
            s.open[shown[0]] = head
            span = (head, call_end(self.g, self.g.module(run[-1])), m)
            for j, call in enumerate(run):
                self.head[call] = head
                if k * period <= j < (k + 1) * period:
                    self.shown[call] = shown[0]
                else:
                    s.shadow[call] = shown[j % period]
                    s.span[call] = span


def scope(g: Graph, opts: ViewOptions, select: Select) -> Scope:
    s = Scope(len(g.nodes))
    box_of, opened, region, fregion, ghost, ghost_top = s.box_of, s.opened, s.region, s.fregion, s.ghost, s.ghost_top
    folds = _Folds(g, s, select, opts.open_repeat)
    head_of, shown, heads = folds.head_of, folds.shown, folds.head
    has_calls = bytearray(len(g.nodes))  # 1 for calls that call a submodule
    for node in g.nodes:
        if type(node) is ModuleNode and node.parent is not None:
            has_calls[node.parent] = 1
    for node in g.nodes:
        i = node.id
        p = node.parent
        if p is None:
            if type(node) is not ModuleNode:
                continue
            if opts.depth == 0 or call_end(g, node) == i + 1 or node.opaque:
                box_of[i] = i
                s.visible += 1
            else:
                opened[i] = 1
                folds.find(i)
            continue
        ghost[i] = ghost[p]
        ghost_top[i] = ghost_top[p]
        b = box_of[p]
        if b >= 0:
            box_of[i] = b
            if type(node) is ModuleNode:
                region[i] = region[p]
                fregion[i] = fregion[p]
            continue
        if type(node) is FunctionNode:
            s.visible += not ghost[i]
        elif type(node) is ModuleNode:
            region[i] = p if g.nodes[p].parent is not None else -1
            fregion[i] = fregion[p]
            head = head_of.get(i)
            if head is not None:
                box_of[i] = head
                continue
            cluster = -1
            if i in heads:  # a call of an opened fold: opened whatever the depth
                if i in s.shadow:
                    ghost[i] = 1
                    if ghost_top[i] < 0:
                        ghost_top[i] = i
                else:
                    cluster = fregion[i] = shown[i]
                is_box = _is_leaf(g, node, opts, has_calls)
            else:
                is_box = i in s.members or node.depth >= opts.depth or _is_leaf(g, node, opts, has_calls)
            if is_box:
                box_of[i] = i
                s.visible += not ghost[i]
                if cluster >= 0:
                    region[i] = cluster
            else:
                opened[i] = 1
                region[i] = i
                folds.find(i)
    if s.open and not folds.fits:
        n = folds.longest
        raise InvalidInputError(
            f"open_folds={opts.open_folds!r}: no fold of this view has that repeat (the longest has {n}: "
            f"allowed are True, or an index from {-n} to {n - 1})"
        )
    return s

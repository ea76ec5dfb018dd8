"""Which module calls are boxes, which are opened, and what is hidden inside a box.

One pass over the nodes in execution order (a parent always comes before its children):
a call is a box when it reaches ``depth``, has nothing recorded inside (opaque), or is a
``torch.nn`` builtin with ``hide_module_functions``; shallower calls are opened; anything
inside a box is hidden in it.  With fold, runs of identical sibling calls (or of a
repeated group of up to four calls, such as ``Linear, ReLU``) found when their parent is
opened become one box (the first member stands for the run).
"""

from __future__ import annotations

from ..graph import FunctionNode, Graph, ModuleNode, TensorNode, ViewOptions
from .fold import call_end, runs


class Scope:
    """``box_of[i]``: id of the box node ``i`` is drawn in (``i`` itself for a box), or -1
    when ``i`` is drawn on its own (or is an opened call).  ``opened[i]`` is 1 for opened
    calls.  ``region[m]`` (modules): the innermost opened call containing ``m`` or ``m``
    itself when opened, -1 for the top level.  ``members``: fold head -> the run's calls.
    ``visible``: how many functions and boxes are drawn."""

    __slots__ = ("box_of", "opened", "region", "members", "period", "visible")

    def __init__(self, n: int) -> None:
        self.box_of = [-1] * n
        self.opened = bytearray(n)
        self.region = [-1] * n
        self.members: dict[int, tuple[int, ...]] = {}
        self.period: dict[int, int] = {}  # fold head -> calls per repeated group
        self.visible = 0


def children(g: Graph) -> dict[int, list[int]]:
    """Direct function/module children of every module call, in execution order."""
    kids: dict[int, list[int]] = {}
    for n in g.nodes:
        if n.parent is not None and type(n) is not TensorNode:
            kids.setdefault(n.parent, []).append(n.id)
    return kids


def _is_box(g: Graph, m: ModuleNode, opts: ViewOptions, has_calls: bytearray) -> bool:
    # a torch.nn builtin that calls no submodule (Conv2d, not Sequential) stays closed
    return (
        m.depth >= opts.depth
        or m.opaque
        or call_end(g, m) == m.id + 1
        or (opts.hide_module_functions and m.is_torch_builtin and not has_calls[m.id])
    )


def scope(g: Graph, opts: ViewOptions, fold: bool) -> Scope:
    s = Scope(len(g.nodes))
    box_of, opened, region = s.box_of, s.opened, s.region
    head_of: dict[int, int] = {}  # fold member -> its run's first call
    kids = children(g) if fold else {}
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
                _fold_children(g, s, kids, i, head_of)
            continue
        b = box_of[p]
        if b >= 0:
            box_of[i] = b
            if type(node) is ModuleNode:
                region[i] = region[p]
            continue
        if type(node) is FunctionNode:
            s.visible += 1
        elif type(node) is ModuleNode:
            region[i] = p if g.nodes[p].parent is not None else -1
            head = head_of.get(i)
            if head is not None:
                box_of[i] = head
            elif i in s.members or _is_box(g, node, opts, has_calls):
                box_of[i] = i
                s.visible += 1
            else:
                opened[i] = 1
                region[i] = i
                _fold_children(g, s, kids, i, head_of)
    return s


def _fold_children(g: Graph, s: Scope, kids: dict[int, list[int]], m: int, head_of: dict[int, int]) -> None:
    for run, period in runs(g, kids.get(m, [])) if kids else ():
        s.members[run[0]] = tuple(run)
        s.period[run[0]] = period
        for k in run[1:]:
            head_of[k] = run[0]

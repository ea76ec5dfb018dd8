"""Which tensors are drawn.

Graph inputs and outputs always; parameters and buffers only with ``show_params`` (as
sources feeding whatever uses them); a tensor made inside a box only when something
outside that box uses it (it is then that box's result); other tensors when a drawn node
produces or uses them.  A pass-through alias (``copy_of``) whose producing call is opened
is merged into the tensor it copies.  ``hide_inner_tensors`` marks every drawn tensor but
inputs, outputs, parameters and tensors made in forward (``created``/``constant``
sources, drawn wherever a drawn node uses them) as contracted: its edges are joined
producer -> consumer.

Outputs that came back in one field of the returned value (the 160 tensors of a KV
cache in ``past_key_values``) are *grouped*: one drawn node (the first of them) stands
for all, each producer feeds it, and their other uses are contracted like hidden
tensors (a layer's cache tensor feeding its own attention does not pass through the
group node).
"""

from __future__ import annotations

from ..graph import PARAM_ROLES, FunctionNode, Graph, TensorNode, ViewOptions
from .scope import Scope

NONE, CONTRACTED, DRAWN = 0, 1, 2
#: sources made inside forward (``torch.arange``, ``torch.tensor``): drawn where used
MADE_IN_FORWARD = frozenset({"created", "constant"})


class Tensors:
    """``target[t]``: the tensor ``t`` is drawn as (itself, its rolled counterpart, or the
    tensor an alias copies); ``state[target]``: NONE, CONTRACTED or DRAWN; ``home[t]``: the
    box ``t`` was made in (-1 outside boxes), whose own uses of ``t`` are not edges;
    ``merged[t]``: 1 for an alias merged into the tensor it copies.  ``group``: grouped
    output -> the output drawn for its group; ``groups``: that one -> the group, in order.
    ``kept``: outputs made in a ghost repeat of an opened fold, drawn as themselves (not
    as their counterpart in the repeat drawn), outside the fold."""

    __slots__ = ("target", "state", "home", "merged", "group", "groups", "kept")

    def __init__(self, n: int) -> None:
        self.target = list(range(n))
        self.state = bytearray(n)
        self.home = [-1] * n
        self.merged = bytearray(n)
        self.group: dict[int, int] = {}
        self.groups: dict[int, tuple[int, ...]] = {}
        self.kept: set[int] = set()


def output_groups(g: Graph) -> dict[str, list[int]]:
    """The graph's outputs per field of the returned value, for fields with several."""
    fields: dict[str, list[int]] = {}
    for i in g.outputs:
        t = g.nodes[i]
        if type(t) is TensorNode and t.field is not None and t.copy_of is None:
            fields.setdefault(t.field, []).append(i)
    return {f: ids for f, ids in fields.items() if len(ids) > 1}


def node_map(g: Graph, s: Scope, canon: list[int]) -> list[int]:
    """For functions and module calls: the view node they are drawn in, -1 for opened calls."""
    vn = [-1] * len(g.nodes)
    box_of = s.box_of
    for node in g.nodes:
        if type(node) is TensorNode:
            continue
        i = node.id
        b = box_of[i]
        v = b if b >= 0 else (i if type(node) is FunctionNode else -1)
        vn[i] = canon[v] if v >= 0 else -1
    return vn


def tensors(g: Graph, opts: ViewOptions, s: Scope, canon: list[int], vn: list[int]) -> Tensors:
    nodes = g.nodes
    r = Tensors(len(nodes))
    target, state, home, merged = r.target, r.state, r.home, r.merged
    box_of, ghost = s.box_of, s.ghost
    io = set(g.inputs) | set(g.outputs)
    inputs = set(g.inputs)
    hide = opts.hide_inner_tensors
    succ, pred = g.adjacency()
    group = r.group
    for ids in output_groups(g).values():
        r.groups[ids[0]] = tuple(ids)
        for i in ids:
            group[i] = ids[0]
    for t in nodes:
        if type(t) is not TensorNode:
            continue
        i = t.id
        role = t.role
        is_param = role in PARAM_ROLES
        if is_param and not opts.show_params and i not in io:
            continue
        b = box_of[t.parent] if t.parent is not None else -1
        h = b if b >= 0 and not is_param and i not in inputs else -1
        home[i] = h
        if i in group:  # drawn as its group's node, its uses contracted (edges.py)
            state[i] = DRAWN if group[i] == i else CONTRACTED
            continue
        if ghost[i] and i in io:  # the last layer's result: itself, not the first layer's tensor
            state[i] = DRAWN
            r.kept.add(i)
            continue
        made = [vn[p] for p in pred[i]]
        c = t.copy_of
        if c is not None and made and all(v < 0 for v in made):
            tgt = target[c]  # an alias returned by an opened call: the tensor it copies
            target[i] = tgt
            merged[i] = 1
            if i in io:
                state[tgt] = DRAWN
            elif state[tgt] == NONE and any(vn[d] >= 0 for d in succ[i]):
                # a source the call returned unread (a parameter ``forward`` returns) is
                # drawn where the alias is used, as a source is drawn where it is used
                src = nodes[tgt]
                if type(src) is TensorNode and (src.role in MADE_IN_FORWARD or (src.is_param and opts.show_params)):
                    state[tgt] = DRAWN
            continue
        used = any(vn[d] >= 0 and (h < 0 or box_of[d] != h) for d in succ[i])
        if i in io:
            st = DRAWN
        elif is_param or role in MADE_IN_FORWARD:
            st = DRAWN if used else NONE  # sources stay visible, like the inputs
        elif used or (h < 0 and any(v >= 0 for v in made)):
            st = CONTRACTED if hide else DRAWN
        else:
            st = NONE
        k = canon[i]
        if k != i:
            target[i] = target[k]
        tgt = target[i]
        if st > state[tgt]:
            state[tgt] = st
    return r

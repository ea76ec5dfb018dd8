"""The diff of two indexed graphs: match calls top-down (align.py), and for each matched
pair say how it differs: class, input/output shapes and dtypes, own parameters, own ops
(an edit script), the data flow among its parts, and children that moved.

Flow differences are flow.py's.  A call wrapped in another (``q_proj`` becoming a
``Sequential`` holding it, a LoRA layer around a ``Linear``) is one ``wrap`` difference:
the wrapped call is compared with the original, the wrapper's other children are added.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .align import align_ops, match_children, out_of_order
from .flow import best_op_pairs, flow_differences
from .index import COSTS, Call, Meta, Tree
from .report import Change, Difference, Edit, GraphDiff


def compare(ta: Tree, tb: Tree, level: str, ignore: Sequence[str]) -> GraphDiff:
    d = GraphDiff(level, (ta.name, tb.name), ignore=tuple(ignore), trees=(ta, tb))
    skip = set(ignore)
    queue = [(ta.root, tb.root)]
    d.matched[ta.root.id] = tb.root.id
    while queue:
        a, b = queue.pop()
        if a.sig == b.sig and len(a.children) == len(b.children):
            # the same structure all the way down: only names can differ
            pairs = list(zip(a.children, b.children, strict=True))
            _renames(d, ta, tb, pairs, skip)
            d.matched.update(pairs)
            queue.extend((ta.calls[x], tb.calls[y]) for x, y in reversed(pairs))
            continue
        wrap = _wrap(ta, a, tb, b)
        if wrap is not None:
            queue.append(_record_wrap(d, ta, a, tb, b, *wrap))
            continue
        pairs = match_children(ta, a, tb, b)
        for x, y in pairs:
            d.matched[x] = y
        paired_a = {x for x, _ in pairs}
        paired_b = {y for _, y in pairs}
        for x in a.children:
            if x not in paired_a:
                d.removed_calls.append(_edit(ta, ta.calls[x], a))
        for y in b.children:
            if y not in paired_b:
                d.added_calls.append(_edit(tb, tb.calls[y], a, after=_order_in_a(a, y, pairs)))
        _renames(d, ta, tb, pairs, skip)
        diffs = _differences(ta, a, tb, b, pairs, level, skip, d.matched_ops)
        if diffs:
            d.changed.append(Change(a.path, b.path, a.cls, tuple(diffs), a.id, (a.id, b.id)))
        queue.extend((ta.calls[x], tb.calls[y]) for x, y in reversed(pairs))
    for lst in (d.added_calls, d.removed_calls):
        lst.sort(key=lambda e: e.order)
    d.changed.sort(key=lambda c: c.order)
    for layer in COSTS:
        ca, cb = ta.total_cost(layer), tb.total_cost(layer)
        if layer not in skip and ca is not None and cb is not None and ca != cb:
            d.totals[layer] = (ca, cb)
    d.renamed.sort(key=lambda r: d._rename_order[r])
    return d


def _renames(d: GraphDiff, ta: Tree, tb: Tree, pairs: list[tuple[int, int]], skip: set[str]) -> None:
    if "names" in skip:
        return
    for x, y in pairs:
        cx, cy = ta.calls[x], tb.calls[y]
        if cx.key[0] != cy.key[0]:
            d.renamed.append((cx.path, cy.path))
            d._rename_order[(cx.path, cy.path)] = x


def _wrap(ta: Tree, a: Call, tb: Tree, b: Call) -> tuple[str, Call] | None:
    """``("b", c)`` when b is a wrapper of another class around ``c``, a's counterpart;
    ``("a", c)`` when a was the wrapper; ``None`` otherwise."""
    if a.cls == b.cls:
        return None
    for side, outer, inner, tree in (("b", b, a, tb), ("a", a, b, ta)):
        for cid in outer.children:
            c = tree.calls[cid]
            if c.cls == inner.cls and (c.sig == inner.sig or (c.params and c.params == inner.params)):
                return side, c
    return None


def _record_wrap(d: GraphDiff, ta: Tree, a: Call, tb: Tree, b: Call, side: str, c: Call) -> tuple[Call, Call]:
    """Report the wrap and the wrapper's other children; the pair to compare next."""
    if side == "b":
        detail = f"wrapped in {b.cls} (as {c.key[0]})"
        d.added_calls.extend(_edit(tb, tb.calls[y], a, after=a.id + 0.5) for y in b.children if y != c.id)
    else:
        detail = f"unwrapped from {a.cls} (was {c.key[0]})"
        d.removed_calls.extend(_edit(ta, ta.calls[x], a) for x in a.children if x != c.id)
    d.changed.append(Change(a.path, b.path, a.cls, (Difference("wrap", detail),), a.id, (a.id, b.id)))
    pair = (a, c) if side == "b" else (c, b)
    d.wrapped[pair[0].id] = pair[1].id
    return pair


def _edit(t: Tree, c: Call, parent_in_a: Call, after: float | None = None) -> Edit:
    n = t.graph.nodes[c.id]
    end = getattr(n, "end", c.id + 1)
    calls = sum(1 for i in range(c.id, end) if i in t.calls)
    parent = t.calls[c.parent].path if c.parent is not None else ""
    return Edit(c.path, c.cls, parent, c.key[0], calls, c.id if after is None else after, c.id)


def _order_in_a(a: Call, y: int, pairs: list[tuple[int, int]]) -> float:
    """Where an added call of b sits in a's order: just after a's counterpart of the
    matched sibling before it (or just after the parent's start)."""
    before = [x for x, j in pairs if j < y]
    return (max(before) if before else a.id) + 0.5


def _differences(
    ta: Tree,
    a: Call,
    tb: Tree,
    b: Call,
    pairs: list[tuple[int, int]],
    level: str,
    skip: set[str],
    op_pairs: dict[int, int],
) -> list[Difference]:
    """How two matched calls differ; their op pairing is added to ``op_pairs``."""
    out: list[Difference] = []
    if "class" not in skip and a.cls != b.cls:
        out.append(Difference("class", f"{a.cls} -> {b.cls}"))
    elif "class" not in skip and a.mod != b.mod and "torch" in (a.mod.split(".")[0], b.mod.split(".")[0]):
        # a torch class is known by its module too: torch.nn's Linear is not the quantized one
        out.append(Difference("class", f"{a.cls} ({a.mod}) -> {b.cls} ({b.mod})"))
    for what, x, y in (("inputs", a.ins, b.ins), ("outputs", a.outs, b.outs)):
        perm = _permutation(x, y)
        if perm is not None:  # the same tensors in another order (Mistral's decoder layer's arguments)
            if "order" not in skip:
                out.append(Difference("order", f"{what} as a's {', '.join(map(str, perm))}"))
            continue
        if "shape" not in skip and _shapes(x) != _shapes(y):
            out.append(
                Difference("shape", _changes(what, [_fmt(s) for s in _shapes(x)], [_fmt(s) for s in _shapes(y)]))
            )
        if "dtype" not in skip and _dtypes(x) != _dtypes(y):
            out.append(Difference("dtype", _changes(what, _dtypes(x), _dtypes(y))))
    if a.key[1] == 0 and b.key[1] == 0:
        out.extend(_param_differences(a, b, skip))
    for layer in COSTS:
        if layer not in skip and layer in ta.costs and layer in tb.costs:
            own_a, own_b = ta.own_cost(layer, a), tb.own_cost(layer, b)
            if own_a != own_b:
                out.append(Difference(layer, f"{own_a:,} -> {own_b:,}"))
    moved = out_of_order(pairs)
    moved_ids = {x for x, _ in moved} | {y for _, y in moved}
    ops = {x: y for x, y in align_ops(ta, a, tb, b) if x is not None and y is not None}
    if "flow" not in skip:
        ops = best_op_pairs(ta, a, tb, b, dict(pairs), ops, moved_ids)
    op_pairs.update(ops)
    if "ops" not in skip:
        paired_b = set(ops.values())
        script: list[tuple[int | None, int | None]] = [(x, ops.get(x)) for x in a.ops]
        script += [(None, y) for y in b.ops if y not in paired_b]
        out.extend(_op_differences(ta, tb, script, level, skip))
    if moved and "order" not in skip:
        names = ", ".join(f"{ta.calls[x].key[0]} ({ta.calls[x].cls})" for x, _ in moved)
        out.append(Difference("order", f"moved: {names}"))
    if "flow" not in skip:
        out.extend(flow_differences(ta, a, tb, b, {**dict(pairs), **ops}, moved_ids))
    return out


def _permutation(x: tuple[Meta, ...], y: tuple[Meta, ...]) -> list[int] | None:
    """For each of ``y``'s positions, the position in ``x`` of the same metadata, when ``y``
    is ``x`` in another order (``None`` otherwise, and when they are equal)."""
    if x == y or sorted(x, key=repr) != sorted(y, key=repr):
        return None
    free: dict[Meta, list[int]] = {}
    for i, m in enumerate(x):
        free.setdefault(m, []).append(i)
    return [free[m].pop(0) for m in y]


def _shapes(ms: tuple[Meta, ...]) -> list[tuple[int | str, ...]]:
    return [s for s, _ in ms]


def _dtypes(ms: tuple[Meta, ...]) -> list[str]:
    return [d for _, d in ms]


def _changes(what: str, xs: list[str], ys: list[str], most: int = 3) -> str:
    """``outputs[1] (1, 2) -> (1, 4)`` for the positions that differ (all when counts differ)."""
    if len(xs) != len(ys):
        return f"{what} {', '.join(xs) or 'none'} -> {', '.join(ys) or 'none'}"
    diffs = [
        f"{what}[{i}] {x} -> {y}" if len(xs) > 1 else f"{what} {x} -> {y}"
        for i, (x, y) in enumerate(zip(xs, ys))
        if x != y
    ]
    more = f" (+{len(diffs) - most} more)" if len(diffs) > most else ""
    return ", ".join(diffs[:most]) + more


def _fmt(shape: tuple[int | str, ...]) -> str:
    return "(" + ", ".join(str(x) for x in shape) + ")"


def fmt_shapes(ms: tuple[Meta, ...]) -> str:
    return ", ".join("(" + ", ".join(str(x) for x in s) + ")" for s, _ in ms) or "()"


def _param_differences(a: Call, b: Call, skip: set[str]) -> list[Difference]:
    out = []
    pa, pb = a.params, b.params
    if "params" not in skip and Counter(s for s, _ in pa.values()) != Counter(s for s, _ in pb.values()):
        parts = []
        for name in sorted(set(pa) | set(pb)):
            x, y = pa.get(name), pb.get(name)
            if x is None or y is None or x[0] != y[0]:
                parts.append(f"{name} {_one(x)} -> {_one(y)}")
        out.append(Difference("params", f"{'; '.join(parts)} ({_count(pa):,} -> {_count(pb):,} parameters)"))
    if "dtype" not in skip:
        da = sorted({d for _, d in pa.values()})
        db = sorted({d for _, d in pb.values()})
        if pa and pb and da != db:
            out.append(Difference("dtype", f"parameters {', '.join(da)} -> {', '.join(db)}"))
    return out


def _one(m: Meta | None) -> str:
    return "absent" if m is None else "(" + ", ".join(str(x) for x in m[0]) + ")"


def _count(params: dict[str, Meta]) -> int:
    total = 0
    for shape, _ in params.values():
        n = 1
        for x in shape:
            n *= x if isinstance(x, int) else 1
        total += n
    return total


def _op_differences(
    ta: Tree, tb: Tree, script: list[tuple[int | None, int | None]], level: str, skip: set[str]
) -> list[Difference]:
    edits: list[str] = []
    added: Counter[str] = Counter()
    removed: Counter[str] = Counter()
    changed: list[str] = []
    for x, y in script:
        if y is None and x is not None:
            removed[ta.ops[x].name] += 1
            edits.append(f"removes {ta.ops[x].name} {fmt_shapes(ta.ops[x].outs)}")
        elif x is None and y is not None:
            added[tb.ops[y].name] += 1
            edits.append(f"adds {tb.ops[y].name} {fmt_shapes(tb.ops[y].outs)}")
        elif x is not None and y is not None:
            ox, oy = ta.ops[x], tb.ops[y]
            same_shapes = "shape" in skip or (_shapes(ox.ins), _shapes(ox.outs)) == (_shapes(oy.ins), _shapes(oy.outs))
            same_dtypes = "dtype" in skip or (_dtypes(ox.ins), _dtypes(ox.outs)) == (_dtypes(oy.ins), _dtypes(oy.outs))
            if ox.name != oy.name:
                changed.append(f"{ox.name} -> {oy.name}")
                edits.append(f"{ox.name} -> {oy.name}")
            elif not (same_shapes and same_dtypes):
                changed.append(ox.name)
                edits.append(f"{ox.name} {_io(ox.ins, ox.outs)} -> {_io(oy.ins, oy.outs)}")
    if not edits:
        return []
    if level == "op":
        return [Difference("ops", e) for e in edits]
    summary = [f"+{n} {k}" for k, n in added.items()] + [f"-{n} {k}" for k, n in removed.items()]
    if changed:
        summary.append(f"{len(changed)} changed ({', '.join(dict.fromkeys(changed))})")
    return [Difference("ops", ", ".join(summary))]


def _io(ins: tuple[Meta, ...], outs: tuple[Meta, ...]) -> str:
    dt = sorted({d for _, d in ins + outs})
    return f"{fmt_shapes(ins)} => {fmt_shapes(outs)} {'/'.join(dt)}"

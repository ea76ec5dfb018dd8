"""Alignment: which call of one graph is which call of the other, and which op is which.

Calls are matched top-down, one level at a time, among the children of two matched
calls, in passes from the surest evidence to the weakest (a tree alignment; names are
only one kind of evidence):

1. same relative name and call index, same class (``layers.0`` and ``layers.0``);
2. same structure: equal signatures (index.py: class, shapes, parameters, ops, children
   and flow, no names), in order: ``h.0.attn`` and ``layers.0.self_attn`` when they
   compute the same thing;
3. same relative name, another class (an activation swapped);
4. same class, in order (renamed and changed);
5. similar content: parameter shapes, child classes and ops as multisets, Jaccard
   similarity at least ``SIMILAR``;
6. a substitution: the one call of a left between two matched neighbours and the one
   call of b left between their partners, with the same input and output metadata (a
   ported ``gelu: GELU`` and ``act: NewGELUActivation``): changed and renamed, not
   removed and added.

Ops inside a matched pair of calls are aligned as sequences of op names (difflib's
edit script); a replaced run is paired position by position as changed ops.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Hashable
from difflib import SequenceMatcher

from .index import Call, Tree

#: the least Jaccard similarity of content for pairing calls that share no name or class
SIMILAR = 0.5


def match_children(ta: Tree, a: Call, tb: Tree, b: Call) -> list[tuple[int, int]]:
    """Pairs ``(a child id, b child id)`` of the children of two matched calls, in a's order."""
    ca = [ta.calls[i] for i in a.children]
    cb = [tb.calls[i] for i in b.children]
    pairs: dict[int, int] = {}
    used: set[int] = set()

    def by(key: Callable[[Call], Hashable]) -> None:
        free: defaultdict[Hashable, deque[int]] = defaultdict(deque)
        for y in cb:
            if y.id not in used:
                free[key(y)].append(y.id)
        for x in ca:
            if x.id in pairs:
                continue
            queue = free.get(key(x))
            if queue:
                j = queue.popleft()
                pairs[x.id] = j
                used.add(j)

    by(lambda c: (c.key, c.cls))
    by(lambda c: c.sig)
    by(lambda c: c.key)
    by(lambda c: c.cls)
    rest_b = [y for y in cb if y.id not in used]
    for x in ca:
        if x.id in pairs or not rest_b:
            continue
        fx = _features(ta, x)
        score, best = max(((_jaccard(fx, _features(tb, y)), k) for k, y in enumerate(rest_b)), default=(0.0, -1))
        if score >= SIMILAR:
            y = rest_b.pop(best)
            pairs[x.id] = y.id
            used.add(y.id)
    _substitutions(ca, cb, pairs, used)
    return sorted(pairs.items())


def _substitutions(ca: list[Call], cb: list[Call], pairs: dict[int, int], used: set[int]) -> None:
    """Pass 6: pair the sole unmatched call of a gap between matched neighbours with the
    sole unmatched call of b's gap between their partners when their inputs and outputs
    agree (nothing when matched children run in another order)."""
    pos_b = {c.id: k for k, c in enumerate(cb)}
    anchors = [-1]  # b positions of a's matched children, in a's order
    free: defaultdict[int, list[Call]] = defaultdict(list)
    for x in ca:
        if x.id in pairs:
            if pos_b[pairs[x.id]] < anchors[-1]:
                return
            anchors.append(pos_b[pairs[x.id]])
        else:
            free[len(anchors) - 1].append(x)
    anchors.append(len(cb))
    for gap, xs in free.items():
        ys = [y for y in cb[anchors[gap] + 1 : anchors[gap + 1]] if y.id not in used]
        if len(xs) == 1 and len(ys) == 1 and (xs[0].ins or xs[0].outs):
            x, y = xs[0], ys[0]
            if (x.ins, x.outs) == (y.ins, y.outs):
                pairs[x.id] = y.id
                used.add(y.id)


def _features(t: Tree, c: Call) -> Counter[Hashable]:
    f: Counter[Hashable] = Counter(("param", m) for m in c.params.values())
    f.update(("child", t.calls[i].cls) for i in c.children)
    f.update(("op", t.ops[i].name) for i in c.ops)
    f.update(("io", c.ins, c.outs) for _ in range(1))
    return f


def _jaccard(x: Counter[Hashable], y: Counter[Hashable]) -> float:
    union = sum((x | y).values())
    return sum((x & y).values()) / union if union else 1.0


def align_ops(ta: Tree, a: Call, tb: Tree, b: Call) -> list[tuple[int | None, int | None]]:
    """The edit script of two calls' own ops: ``(a op, b op)`` pairs, ``None`` on the side
    where an op was added or removed; paired ops may still differ (name or metadata)."""
    xs, ys = a.ops, b.ops
    names_a = [ta.ops[i].name for i in xs]
    names_b = [tb.ops[i].name for i in ys]
    if names_a == names_b:
        return list(zip(xs, ys, strict=True))
    script: list[tuple[int | None, int | None]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, names_a, names_b, autojunk=False).get_opcodes():
        if tag == "equal":
            script.extend(zip(xs[i1:i2], ys[j1:j2], strict=True))
            continue
        n = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        script.extend(zip(xs[i1 : i1 + n], ys[j1 : j1 + n], strict=True))
        script.extend((x, None) for x in xs[i1 + n : i2])
        script.extend((None, y) for y in ys[j1 + n : j2])
    return script


def out_of_order(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The pairs (given in a's order) outside a longest run in b's order too: what moved."""
    if not pairs:
        return []
    seq = [j for _, j in pairs]
    # longest increasing subsequence, O(n log n), remembering predecessors
    tails: list[int] = []
    tail_at: list[int] = []
    prev = [-1] * len(seq)
    for k, v in enumerate(seq):
        pos = bisect.bisect_left(tails, v)
        if pos == len(tails):
            tails.append(v)
            tail_at.append(k)
        else:
            tails[pos] = v
            tail_at[pos] = k
        prev[k] = tail_at[pos - 1] if pos else -1
    keep = set()
    k = tail_at[-1]
    while k >= 0:
        keep.add(k)
        k = prev[k]
    return [p for k, p in enumerate(pairs) if k not in keep]

"""Data flow inside a matched pair of calls: the edges among its parts (index.py) found
in one graph only that no added or removed part explains, and the pairing of same-named
ops that leaves the fewest of them.

An edge is explained when one of its ends is unmatched (that part is reported as added or
removed), or when the other graph connects its ends through unmatched parts only (a norm
inserted between two calls replaces their edge).
"""

from __future__ import annotations

from .index import IN, OUT, Call, Tree
from .report import Difference

#: calls with more own ops than this keep difflib's op pairing (no search for a better one)
MAX_OPS = 200
#: pairings tried per call at most (each costs one flow comparison)
MAX_TRIES = 500


def best_op_pairs(
    ta: Tree, a: Call, tb: Tree, b: Call, calls: dict[int, int], ops: dict[int, int], moved: set[int]
) -> dict[int, int]:
    """Ops of one name that were added or removed leave a choice: which of a's two ``add``s
    is b's one ``add``?  Take the pairing that leaves the fewest unexplained flow edges
    (a removed residual is the ``add`` whose inputs are gone, not the first one): moves of
    one pair at a time while one helps (calls of up to ``MAX_OPS`` ops, ``MAX_TRIES``
    pairings tried)."""
    if len(a.ops) + len(b.ops) > MAX_OPS or (len(ops) == len(a.ops) == len(b.ops)):
        return ops

    def cost(m: dict[int, int]) -> int:
        return len(flow_differences(ta, a, tb, b, {**calls, **m}, moved))

    best, best_cost = ops, cost(ops)
    tries = 0
    while best_cost and tries < MAX_TRIES:
        for m in _neighbours(ta, a, tb, b, best)[: MAX_TRIES - tries]:
            tries += 1
            c = cost(m)
            if c < best_cost:
                best, best_cost = m, c
                break
        else:
            break
    return best


def _neighbours(ta: Tree, a: Call, tb: Tree, b: Call, ops: dict[int, int]) -> list[dict[int, int]]:
    """Pairings one move away: an unpaired op takes the partner of a paired op of its name."""
    out = []
    paired_b = set(ops.values())
    for x in a.ops:
        if x not in ops:
            for x2 in ops:
                if ta.ops[x2].name == ta.ops[x].name:
                    m = dict(ops)
                    m[x] = m.pop(x2)
                    out.append(m)
    for y in b.ops:
        if y not in paired_b:
            for x2, y2 in ops.items():
                if tb.ops[y2].name == tb.ops[y].name:
                    out.append({**ops, x2: y})
    return out


def flow_differences(
    ta: Tree, a: Call, tb: Tree, b: Call, mapping: dict[int, int], moved: set[int]
) -> list[Difference]:
    """Flow edges of one side that the other lacks and no added/removed part explains."""
    pos_a, pos_b = ta.pos(a), tb.pos(b)
    to_b = {pos_a[x]: pos_b[y] for x, y in mapping.items()}
    to_b[IN], to_b[OUT] = IN, OUT
    to_a = {v: k for k, v in to_b.items()}
    moved_pos = {pos_a[x] for x in moved if x in pos_a} | {pos_b[y] for y in moved if y in pos_b}
    out = []
    for side, t, call, edges, other, m in (
        ("a", ta, a, a.flow, b.flow, to_b),
        ("b", tb, b, b.flow, a.flow, to_a),
    ):
        matched_other = set(m.values())
        for u, v in sorted(edges):
            if u not in m or v not in m or u in moved_pos or v in moved_pos:
                continue
            mu, mv = m[u], m[v]
            if (mu, mv) in other or _through_unmatched(other, mu, mv, matched_other):
                continue
            out.append(Difference("flow", f"{_part(t, call, u)} -> {_part(t, call, v)} only in {side}"))
    return out


def _through_unmatched(edges: set[tuple[int, int]], u: int, v: int, matched: set[int]) -> bool:
    succ: dict[int, list[int]] = {}
    for s, d in edges:
        succ.setdefault(s, []).append(d)
    seen, stack = {u}, [u]
    while stack:
        for n in succ.get(stack.pop(), ()):
            if n == v:
                return True
            if n not in seen and n not in matched:
                seen.add(n)
                stack.append(n)
    return False


def _part(t: Tree, call: Call, p: int) -> str:
    if p == IN:
        return "input"
    if p == OUT:
        return "output"
    pid = call.parts[p]
    return t.calls[pid].key[0] if pid in t.calls else t.ops[pid].name

"""Recording cost grows linearly with the number of ops, counted (never timed).

* nodes and edges: N blocks and 2N blocks give exactly twice the per-block growth;
* work: the number of Python (and builtin) function calls made while recording grows by the
  same amount for every added block, so nothing is rebuilt or rescanned per op;
* memory: the recorded graph holds no tensor, its size grows linearly, and recording again
  and again does not grow the process's traced memory.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc
import types
from pathlib import Path
from typing import Any

import torch
from torch import nn

from tensorview import Recorder
from tensorview.graph import Graph


def mlp(blocks: int, width: int = 4) -> nn.Module:
    layers: list[nn.Module] = []
    for _ in range(blocks):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers).eval()


def record(model: nn.Module, x: torch.Tensor) -> Graph:
    with Recorder(model) as rec:
        model(x)
    assert rec._session is not None
    return rec._session.graph


def counted_calls(model: nn.Module, x: torch.Tensor) -> int:
    """Python and builtin calls made while recording one forward (deterministic)."""
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call" or event == "c_call":
            count += 1

    record(model, x)  # warm caches (names, dtype strings) so both counts start alike
    # no collection while counting: one would run the finalizers and weakref callbacks of
    # whatever earlier tests left behind (in a full run, 1-2% more calls at 400 blocks)
    gc.collect()
    gc.disable()
    sys.setprofile(profile)
    try:
        record(model, x)
    finally:
        sys.setprofile(None)
        gc.enable()
    return count


def test_nodes_and_edges_grow_exactly_linearly() -> None:
    x = torch.randn(1, 4)
    sizes = {n: record(mlp(n), x) for n in (50, 100, 200)}
    nodes = {n: len(g.nodes) for n, g in sizes.items()}
    edges = {n: len(g.edges) for n, g in sizes.items()}
    # f(n) = a + b*n exactly: each block adds the same nodes and edges
    assert nodes[200] - nodes[100] == 2 * (nodes[100] - nodes[50])
    assert edges[200] - edges[100] == 2 * (edges[100] - edges[50])
    # and the per-block cost is what a Linear + ReLU block should cost: 2 module nodes,
    # 2 function nodes, 2 results (+ their module aliases, at most), 2 parameters
    per_block = (nodes[100] - nodes[50]) / 50
    assert 6 <= per_block <= 12, per_block
    assert abs(2 * nodes[50] - nodes[100]) < 10  # 2N blocks: 2x the nodes, up to a constant


def test_recording_work_is_linear_in_ops() -> None:
    x = torch.randn(1, 4)
    calls = {n: counted_calls(mlp(n), x) for n in (100, 200, 400)}
    step_small = calls[200] - calls[100]
    step_large = calls[400] - calls[200]
    # linear: doubling again adds twice as much work (a quadratic term would add 4x)
    assert step_large <= 2 * step_small * 1.02 + 50, calls
    assert calls[400] < 5 * calls[100], calls


def _tensors_reachable(root: Any) -> list[str]:
    """Paths to every torch.Tensor reachable from ``root`` through attributes and containers
    (types, modules and functions are not followed: they are shared with the whole process)."""
    found: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[Any, str]] = [(root, "graph")]
    skip = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)
    while stack:
        obj, path = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            found.append(path)
            continue
        if isinstance(obj, (*skip, str, bytes, int, float, bool, type(None))):
            continue
        if isinstance(obj, dict):
            stack.extend((v, f"{path}[{k!r}]") for k, v in obj.items())
            stack.extend((k, f"{path}.key") for k in obj)
            continue
        if isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(obj))
            continue
        for cls in type(obj).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if hasattr(obj, slot):
                    stack.append((getattr(obj, slot), f"{path}.{slot}"))
        d = getattr(obj, "__dict__", None)
        if isinstance(d, dict):
            stack.extend((v, f"{path}.{k}") for k, v in d.items())
        # anything else C-level: ask the garbage collector what it refers to
        if d is None and not getattr(type(obj), "__slots__", None):
            stack.extend((r, f"{path}.<ref>") for r in gc.get_referents(obj))
    return found


class _WithState(nn.Module):
    """Parameters, a buffer, a constant and a created tensor: every kind of source node."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("scale", torch.full((4,), 2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x) * self.scale + torch.tensor(1.0)
        y = y + torch.zeros(4)
        y.relu_()
        return y[:, :2]


def test_recorded_graph_holds_no_tensor() -> None:
    for model, x in ((mlp(20), torch.randn(2, 4)), (_WithState().eval(), torch.randn(3, 4))):
        g = record(model, x)
        assert len(g.nodes) > 10
        assert _tensors_reachable(g) == []


def _traced_size(make: Any) -> tuple[int, Any]:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = make()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return after - before, kept


def test_graph_memory_grows_linearly() -> None:
    x = torch.randn(1, 4)
    models = {n: mlp(n) for n in (200, 400)}
    sizes = {}
    for n, model in models.items():
        record(model, x)  # warm up
        sizes[n], g = _traced_size(lambda model=model: record(model, x))
        assert len(g.nodes) > 4 * n
    per_op_small = sizes[200] / 200
    per_op_large = sizes[400] / 400
    assert 0.8 < per_op_large / per_op_small < 1.25, sizes


_REPEAT = """
import gc, tracemalloc, torch
from tests.test_scaling import mlp, record
model, x = mlp(500), torch.randn(1, 4)
for _ in range(5):
    record(model, x)
gc.collect()
tracemalloc.start()
gc.collect()
start = tracemalloc.get_traced_memory()[0]
g = record(model, x)
one = tracemalloc.get_traced_memory()[0] - start
del g
gc.collect()
start = tracemalloc.get_traced_memory()[0]
for _ in range(20):
    record(model, x)
gc.collect()
print(one, tracemalloc.get_traced_memory()[0] - start)
"""


def test_repeated_recording_does_not_grow_memory() -> None:
    # in a fresh process: the autouse lint fixture keeps every graph a test records
    out = subprocess.run(
        [sys.executable, "-c", _REPEAT],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    one_graph, growth = map(int, out.stdout.split())
    assert one_graph > 500_000  # the measurement sees a graph...
    assert growth < one_graph / 4, (one_graph, growth)  # ...and 20 recordings keep none

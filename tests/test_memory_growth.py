"""Recording again and again does not grow memory (issue 21 B3): every entry point, 60
calls after a warm-up, with tracemalloc; and no RecorderTensor outlives its recording.

(``tv.summary`` leaked one or two RecorderTensors per call, about 7 KiB each: a saved
output held by its own grad_fn through the cost model's saved-tensor hook.)"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

import pytest
import torch
from torch import nn

import tensorview as tv

CALLS = 60
#: the growth allowed over CALLS calls: torch's and Python's caches filling up (about 50 KiB
#: whatever the number of calls); the leak was about 420 KiB for 60 calls
BOUND = 160 * 1024


def _model() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


def _recorder(model: nn.Module) -> None:
    with tv.Recorder(model):
        model(torch.randn(2, 8))


ENTRY_POINTS: dict[str, Callable[[nn.Module], object]] = {
    "summary": lambda m: tv.summary(m, input_size=(2, 8)),
    "draw_graph": lambda m: tv.draw_graph(m, input_size=(2, 8)),
    "draw_graph_stats": lambda m: tv.draw_graph(m, input_size=(2, 8), stats=["flops", "activation_bytes"]),
    "recorder": _recorder,
}


def _recorder_tensors() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is tv.RecorderTensor)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_calls_do_not_grow_memory(entry: str) -> None:
    call, model = ENTRY_POINTS[entry], _model()
    for _ in range(10):  # warm-up: caches, lazily imported modules
        call(model)
    gc.collect()
    before = _recorder_tensors()
    tracemalloc.start()
    try:
        start = tracemalloc.take_snapshot()
        for _ in range(CALLS):
            call(model)
        gc.collect()
        end = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(d.size_diff for d in end.compare_to(start, "filename"))
    assert _recorder_tensors() - before == 0
    assert grown < BOUND, [str(d) for d in end.compare_to(start, "lineno")[:5]]

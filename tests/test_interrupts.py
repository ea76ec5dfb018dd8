"""Ctrl-C at any moment leaves nothing behind (issue 8 B): ``draw_graph`` calls and a
``with Recorder`` block interrupted at random bytecodes (the harness is
tests/fixtures/interrupts.py; ``python bench/interrupts.py`` runs 1,000)."""

from __future__ import annotations

import torch
from torch import nn

import tensorview as tv
from tensorview.recording import is_patched
from tensorview.recording import recorder as _recorder

from .fixtures import interrupts
from .fixtures import models as zoo

#: bounded: about 3 s of CPU (bench/interrupts.py runs 1,000)
ITERATIONS = 300


def test_random_interrupts_leave_nothing_behind() -> None:
    report = interrupts.run(ITERATIONS, seed=8)
    assert report.iterations == ITERATIONS
    assert report.interrupted == ITERATIONS  # each call ended in KeyboardInterrupt
    assert report.total() == 0, f"{dict(report.leftovers)}, e.g. {report.examples}"


def test_a_stale_wrapper_left_installed_heals_at_the_next_recording() -> None:
    original = nn.Module.__call__
    nn.Module.__call__ = _recorder._make_call(original)  # what an interrupted recording left behind
    try:
        graph = tv.draw_graph(zoo.Shared(), input_size=(2, 4), depth=9)
        assert nn.Module.__call__ is original and not is_patched()  # never saved as "original"
        assert [m.path for m in graph.graph.modules()] == ["", "fc", "fc", "fc"]  # each call recorded once
        assert type(zoo.Shared()(torch.randn(2, 4))) is torch.Tensor
    finally:
        nn.Module.__call__ = original

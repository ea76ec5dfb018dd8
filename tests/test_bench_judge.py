"""bench/judge.py, the sweeps' judge (sweep.py: transformers, sweep_vision.py: torchvision
and timm on a GPU): it passes a model recorded the same way on both devices and names each
kind of problem it is there to find."""

from __future__ import annotations

import torch
from torch import nn

from .test_bench_exit import bench_module


class Branches(nn.Module):
    """A forward that does more on the CPU than elsewhere (as MoE kernels do)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return y.relu() if y.device.type == "cpu" else y


class ReadsValues(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)  # (the weights have no values on meta; the input's few would be known there)
        return y * y.sum().item()


class Unused(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.spare = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def test_the_judge_passes_a_model_recorded_alike_and_names_what_differs() -> None:
    judge = bench_module("judge")
    x = {"x": torch.randn(2, 4)}
    assert judge.judge(Unused(), x) == []  # a parameter never used is not a problem
    seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    assert judge.judge(seq, {"input": torch.randn(2, 4)}) == []
    problems = judge.judge(Branches(), x)
    assert problems == ["ops cpu!=meta: cpu only {'relu': 1}, meta only {}"]
    (problem,) = judge.judge(ReadsValues(), x)
    assert problem.startswith(judge.PLAIN_FAILS) and "item()" in problem and "recording: RecordingError" in problem


def test_the_judge_compares_the_module_calls_with_a_hooks_view(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The submodule calls a global forward pre-hook sees in the plain forward must be the
    drawn module calls, in order: a drawing that calls one layer less is caught at the first
    call that differs."""
    judge = bench_module("judge")
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
    x = {"input": torch.randn(2, 4)}
    assert judge.judge(model, x) == []
    skips = nn.Sequential(nn.Linear(4, 4), nn.Identity(), nn.Linear(4, 4))
    skips.forward = lambda input: skips[2](skips[0](input))  # type: ignore[method-assign]
    draw = judge.tv.draw_graph
    monkeypatch.setattr(judge.tv, "draw_graph", lambda m, **kw: draw(skips, **kw))
    problems = [p for p in judge.judge(model, x) if "module calls" in p]
    assert problems == [
        "cpu: module calls differ from the plain forward's at call 1: ['2'] drawn, ['1', '2'] run (2 vs 3)",
        "meta: module calls differ from the plain forward's at call 1: ['2'] drawn, ['1', '2'] run (2 vs 3)",
    ]

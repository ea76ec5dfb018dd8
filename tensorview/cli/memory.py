"""``tensorview memory TARGET``: the memory of a training step (``tensorview.memory``),
printed as a table; with ``--budget`` also the largest batch that fits; with ``-o
mem.svg`` the timeline as a picture, ``-o mem.html`` as an interactive page."""

from __future__ import annotations

import argparse

import tensorview

from ..errors import InvalidInputError
from . import inputs
from .commands import build_target
from .progress import Progress
from .values import UsageError


def memory(ns: argparse.Namespace, progress: Progress) -> int:
    budget = _budget(ns.budget)  # checked before anything slow runs
    if ns.output and not ns.output.lower().endswith((".svg", ".html", ".htm")):
        raise UsageError(
            f"-o {ns.output!r}: the memory timeline is written as SVG or as an interactive HTML page "
            "(a name ending .svg or .html)"
        )
    target = build_target(ns, progress)
    specs = inputs.choose(ns.input_size or [], target.inputs, ns.target)
    made_on = "meta" if ns.device in ("meta", "fake") else ns.device
    model = type(target.model).__name__
    options = {
        "device": ns.device,
        "mode": ns.mode,
        "optimizer": None if ns.optimizer == "none" else ns.optimizer,
        "autocast": ns.autocast,
        "checkpointing": [p for text in ns.checkpointing or [] for p in text.split(",") if p],
        "steps": ns.steps,
        "accumulate": ns.accumulate,
        "set_to_none": not ns.keep_grads,
    }
    with progress.step(f"running a {ns.mode} step of {model} on {ns.device} with {inputs.describe(specs)}"):
        report = tensorview.memory(target.model, **options, **inputs.call_arguments(specs, made_on))
    print(report.table(depth=ns.depth))
    if budget is not None:
        with progress.step(f"searching the largest batch whose step fits in {ns.budget}"):
            best = report.max_batch_size(budget)
        print(f"\nLargest batch that fits in {ns.budget} ({budget:,} B): {best}")
    if ns.output:
        report.save(ns.output)
        progress.say(f"wrote {ns.output}")
    return 0


def _budget(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return tensorview.MemoryReport.parse_budget(text)
    except InvalidInputError as e:
        raise UsageError(f"--budget: {e}") from e


__all__ = ["memory"]

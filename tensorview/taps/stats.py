"""Tap statistics as an annotation pass: ``TapStats`` computes, for every module node
whose path was tapped, the statistics of the values recorded there."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import torch

from ..errors import InvalidInputError
from ..graph import Graph, ir_of
from ..graph import annotate as run_passes
from ..recording.tree import flat_tensors

G = TypeVar("G")


def stats(value: Any, samples: int) -> dict[str, float | int] | None:
    """Mean, population std, min and max over every element of every floating tensor in
    ``value`` (computed in float64), or ``None`` when there is none."""
    flat = [t.detach().reshape(-1).to("cpu", torch.float64) for t in flat_tensors(value) if t.is_floating_point()]
    if not flat or not sum(t.numel() for t in flat):
        return None
    x = torch.cat(flat)
    return {
        "mean": x.mean().item(),
        "std": x.std(correction=0).item(),
        "min": x.min().item(),
        "max": x.max().item(),
        "samples": samples,
    }


class TapStats:
    """Annotation pass ``"stats"``: ``{"mean", "std", "min", "max", "samples"}`` of each
    tapped module's data, on every call node of that module path."""

    name = "stats"

    def __init__(self, recorded: Sequence[tuple[str, Any, int]]) -> None:
        self.recorded = list(recorded)  # (module path, data, samples)

    def __call__(self, graph: Graph) -> dict[int, dict[str, float | int]]:
        by_path: dict[str, list[int]] = {}
        for node in graph.modules():
            by_path.setdefault(node.path, []).append(node.id)
        missing = [path for path, _, _ in self.recorded if path not in by_path]
        if self.recorded and len(missing) == len(self.recorded):
            raise InvalidInputError(
                f"none of the tapped modules {missing!r} is a module node of the graph "
                f"(module paths: {sorted(by_path)[:12]!r}); tap and record the same model"
            )
        values: dict[int, dict[str, float | int]] = {}
        for path, data, samples in self.recorded:
            s = stats(data, samples)
            if s is not None:
                for i in by_path.get(path, []):
                    values[i] = s
        return values


def annotate(graph: G, recorded: Sequence[tuple[str, Any, int]]) -> G:
    """Run ``TapStats`` on ``graph`` (a ``ComputationGraph`` or an IR ``Graph``)."""
    run_passes(ir_of(graph, "annotate"), TapStats(recorded))
    return graph

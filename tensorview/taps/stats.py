"""Tap statistics noted on the module nodes of a recorded graph."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from ..errors import InvalidInputError, InvalidTypeError
from ..graph import Graph


def tensors(value: Any) -> Iterator[torch.Tensor]:
    """Floating-point tensors inside ``value`` (nested lists, tuples and dicts)."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from tensors(v)


def stats(value: Any, samples: int) -> dict[str, float | int] | None:
    """Mean, population std, min and max over every element of every floating tensor in
    ``value`` (computed in float64), or ``None`` when there is none."""
    flat = [t.detach().reshape(-1).to("cpu", torch.float64) for t in tensors(value)]
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


def annotate(graph: Any, recorded: list[tuple[str, Any, int]]) -> Any:
    """Set ``notes["stats"]`` on every module node whose path is a tapped path."""
    ir = graph if isinstance(graph, Graph) else getattr(graph, "graph", None)
    if not isinstance(ir, Graph):
        raise InvalidTypeError(
            f"annotate needs a tensorview Graph or an object with a .graph Graph attribute, got {type(graph).__name__}"
        )
    by_path: dict[str, list[Any]] = {}
    for node in ir.modules():
        by_path.setdefault(node.path, []).append(node)
    missing = [path for path, _, _ in recorded if path not in by_path]
    if recorded and len(missing) == len(recorded):
        raise InvalidInputError(
            f"none of the tapped modules {missing!r} is a module node of the graph "
            f"(module paths: {sorted(by_path)[:12]!r}); tap and record the same model"
        )
    for path, data, samples in recorded:
        s = stats(data, samples)
        if s is not None:
            for node in by_path.get(path, []):
                node.note("stats", s)
    return graph

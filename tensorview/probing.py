"""What the entry points (api.py) add to a recording when asked for: the cost model's stats,
the backward probe, torchview's attributes probe.  Each is imported on first use, so
``draw_graph`` with its defaults never loads the cost model (docs/architecture.md, "Lazy
loading")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .recording import Probe

if TYPE_CHECKING:
    from .compat.attributes import AttributesProbe


def check_stats(stats: Any, program: bool) -> tuple[str, ...]:
    if isinstance(stats, (tuple, list)) and not stats:
        return ()  # the default: the cost model stays unimported
    from .cost.layers import check_stats as check

    return check(stats, runs=not program)


def backward_probe() -> Probe:  # the backward package (and the cost model it reads) loads when asked for
    from .backward import BackwardProbe

    return BackwardProbe()


def attributes_probe() -> AttributesProbe:
    from .compat.attributes import AttributesProbe

    return AttributesProbe()


def annotate_stats(graph: Any, stats: Sequence[str], model: Any, inputs: Any) -> Any:
    """The layers of ``stats`` that are not measured while recording: ``activation_bytes``
    (from the graph's shapes) and ``memory`` (a training step predicted on meta by
    ``tv.memory`` with the same inputs, inference where no parameter trains:
    cost/memlayers.py)."""
    if "activation_bytes" in stats:
        from .cost.layers import ActivationBytes

        graph = graph.annotate(ActivationBytes())
    if "memory" in stats:
        from .cost.memlayers import memory_layers
        from .cost.step import memory

        input_size, input_data, dtypes, forward_kwargs = inputs
        mode = "train" if any(p.requires_grad for p in model.parameters()) else "eval"  # nothing trains: inference
        report = memory(model, input_size, input_data, dtypes=dtypes, mode=mode, **forward_kwargs)
        graph = graph.annotate(*memory_layers(report))
    return graph


__all__ = ["annotate_stats", "attributes_probe", "backward_probe", "check_stats"]

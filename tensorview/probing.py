"""What the entry points (api.py) add to a recording when asked for: the cost model's stats,
the backward probe, torchview's attributes probe.  Each is imported on first use, so
``draw_graph`` with its defaults never loads the cost model (docs/architecture.md, "Lazy
loading")."""

from __future__ import annotations

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


__all__ = ["attributes_probe", "backward_probe", "check_stats"]

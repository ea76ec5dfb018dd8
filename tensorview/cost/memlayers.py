"""``draw_graph(..., stats=("memory",))``: ``tv.memory``'s numbers on the module calls of a
drawing, as two annotation layers (docs/cost-model.md, "Will it fit?").

==================  ==============================================================
layer               value (bytes, of a training step predicted on meta: tv.memory)
==================  ==============================================================
``memory_held``     what the call's forward made that is still live at the step's
                    peak (the activations it saved for backward, mostly)
``memory_added``    the call's own peak less what was live when it began
==================  ==============================================================

The step is ``tv.memory(model, <the drawing's inputs>)``: forward, loss, backward, Adam
step, on a copy of the model on meta (a model with no parameter that trains: one forward
without grad, ``mode="eval"``).  A recorded module call is matched with the
step's forward call of the same module path and the same call index (the second call
of ``encoder.embed`` with the second); calls of a submodule's other methods, and calls
the step did not make, get no value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..graph import Graph
from .fmt import Bytes

if TYPE_CHECKING:
    from .memreport import MemoryReport

#: the layers ``stats=("memory",)`` adds, in the order labels list them
MEMORY_LAYERS = ("memory_held", "memory_added")


class MemoryLayer:
    """Annotation pass ``name`` (one of :data:`MEMORY_LAYERS`) from a ``MemoryReport``."""

    def __init__(self, name: str, report: MemoryReport) -> None:
        self.name = name
        self.report = report

    def __call__(self, graph: Graph) -> Mapping[int, Bytes]:
        calls: dict[str, list[tuple[int, int]]] = {}  # path -> (held, added) of each forward call
        for m in self.report.by_module:
            if m.phase == "forward" and m.step == 0:
                calls.setdefault(m.path, []).append((m.held_at_peak, m.added_bytes))
        which = MEMORY_LAYERS.index(self.name)
        out: dict[int, Bytes] = {}
        for node in graph.modules():
            found = calls.get(node.path, ())
            if node.method is None and node.call_index < len(found):
                out[node.id] = Bytes(found[node.call_index][which])
        return out


def memory_layers(report: MemoryReport) -> tuple[MemoryLayer, ...]:
    return tuple(MemoryLayer(name, report) for name in MEMORY_LAYERS)


__all__ = ["MEMORY_LAYERS", "MemoryLayer", "memory_layers"]

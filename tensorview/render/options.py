"""``RenderOptions``: how a view is drawn (validated on construction)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidTypeError, choices_error

GRAPH_DIRS = ("TB", "LR", "BT", "RL")
LAYOUTS = ("auto", "exact")


@dataclass(frozen=True)
class RenderOptions:
    """``graph_dir``: direction of the flow (Graphviz ``rankdir``); ``graph_name``: the
    drawing's name (DOT graph name, default file name); ``number_nodes``: prefix labels
    with the execution position (``#3 conv2d``); ``layout``: ``"auto"`` bounds
    Graphviz's work on big views, ``"exact"`` never does."""

    graph_dir: str = "TB"
    graph_name: str = "model"
    number_nodes: bool = False
    layout: str = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.number_nodes, bool):
            raise InvalidTypeError(f"number_nodes must be True or False, got {self.number_nodes!r}")
        if self.graph_dir not in GRAPH_DIRS:
            raise choices_error("graph_dir", self.graph_dir, GRAPH_DIRS)
        if self.layout not in LAYOUTS:
            raise choices_error("layout", self.layout, LAYOUTS)
        if not isinstance(self.graph_name, str):
            raise InvalidTypeError(f"graph_name must be a str, got {self.graph_name!r}")

    def replace(self, **changes: Any) -> RenderOptions:
        unknown = sorted(set(changes) - RENDER_OPTION_NAMES)
        if unknown:
            raise choices_error("render option", unknown[0], RENDER_OPTION_NAMES)
        return dataclasses.replace(self, **changes)


RENDER_OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(RenderOptions))

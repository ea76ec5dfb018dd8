"""``ViewOptions``: what a view of a recorded graph shows (validated on construction)."""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass
from typing import Any, Literal, Union

from ..errors import InvalidInputError, InvalidTypeError, choices_error

GRAPH_DIRS = ("TB", "LR", "BT", "RL")
LAYOUTS = ("auto", "exact")
FOLDS = (True, False, "auto")

Fold = Union[bool, Literal["auto"]]


@dataclass(frozen=True)
class ViewOptions:
    """View options, with torchview's meanings where torchview has the option.

    ``depth``: module calls at this depth are boxes, shallower ones are opened, deeper
    ones hidden (0: the whole model is one box).  ``expand_nested``: draw a dashed box
    around the contents of every opened module.  ``hide_inner_tensors``: show only the
    graph's input/output tensors, tensors made in forward, and parameters when shown.
    ``hide_module_functions``: never open ``torch.nn`` leaf modules (``Conv2d``, ``Linear``;
    containers still open).  ``roll``: merge repeated calls of one module
    path.  ``fold``: fold runs of identical consecutive sibling calls into one box
    (``True``/``False``/``"auto"``: only when more than ``FOLD_AUTO_THRESHOLD`` nodes
    would be visible).  ``layout``: ``"auto"`` bounds Graphviz's work on big views,
    ``"exact"`` never does.
    """

    depth: int = 3
    expand_nested: bool = False
    hide_inner_tensors: bool = True
    hide_module_functions: bool = True
    roll: bool = False
    show_shapes: bool = True
    show_params: bool = False
    fold: Fold = "auto"
    graph_dir: str = "TB"
    graph_name: str = "model"
    number_nodes: bool = False
    layout: str = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.depth, (bool, int)) and hasattr(type(self.depth), "__index__"):
            try:  # numpy integers
                object.__setattr__(self, "depth", operator.index(self.depth))
            except TypeError:
                pass  # not an integer after all: the error below names it
        if isinstance(self.depth, bool) or not isinstance(self.depth, int):
            raise InvalidTypeError(f"depth must be an int, got {self.depth!r}")
        if self.depth < 0:
            raise InvalidInputError(f"depth must be >= 0, got {self.depth!r}")
        for name in ("expand_nested", "hide_inner_tensors", "hide_module_functions", "roll",
                     "show_shapes", "show_params", "number_nodes"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise InvalidTypeError(f"{name} must be True or False, got {value!r}")
        if not any(self.fold is f or (isinstance(f, str) and self.fold == f) for f in FOLDS):
            raise InvalidInputError(f"unknown fold: {self.fold!r} (must be one of [True, False, 'auto'])")
        if self.graph_dir not in GRAPH_DIRS:
            raise choices_error("graph_dir", self.graph_dir, GRAPH_DIRS)
        if self.layout not in LAYOUTS:
            raise choices_error("layout", self.layout, LAYOUTS)
        if not isinstance(self.graph_name, str):
            raise InvalidTypeError(f"graph_name must be a str, got {self.graph_name!r}")

    def replace(self, **changes: Any) -> ViewOptions:
        """A copy with ``changes``; an unknown option name is an ``InvalidInputError``."""
        unknown = sorted(set(changes) - OPTION_NAMES)
        if unknown:
            raise choices_error("view option", unknown[0], OPTION_NAMES)
        return dataclasses.replace(self, **changes)


OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(ViewOptions))

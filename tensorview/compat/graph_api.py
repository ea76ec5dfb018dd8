"""torchview's ``ComputationGraph`` attributes on tensorview's ``ComputationGraph``.

``TorchviewAPI`` is a mixin of ``drawing.ComputationGraph``; it reads the recording (the
IR, ``graph``), the view options (``options``) and the cached ``visual_graph``, and keeps
what only torchview's API needs in one ``TorchviewExtras`` (files to save to, collected
attributes) that ``view(...)`` hands on.  Nothing here changes what tensorview draws.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInputError, InvalidTypeError
from ..graph import Graph, ViewOptions
from ..render.escape import file_name
from .nodes import ModuleNode, Node, OrderedSet, TensorNode, build, traverse


@dataclass(frozen=True)
class TorchviewExtras:
    """``directory``/``filename``: where ``visual_graph.render()`` and ``save_graph`` write
    (torchview's ``<graph_name>.gv`` when ``filename`` is None); ``attributes``: module call
    id -> attribute text (``collect_attributes=True``), None when not collected."""

    directory: str = "."
    filename: str | None = None
    attributes: dict[int, str] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("directory", "filename"):
            value = getattr(self, name)
            if value is None and name == "filename":
                continue
            if not isinstance(value, (str, bytes, os.PathLike)):
                raise InvalidTypeError(
                    f"{name} must be a str or os.PathLike, got {type(value).__name__}: {value!r:.80}"
                )
            object.__setattr__(self, name, os.fsdecode(value))
        if self.filename == "":
            raise InvalidInputError("filename must not be empty (None: '<graph_name>.gv')")

    def file_name(self, graph_name: str) -> str:
        # the name is user data: a safe file name inside ``directory`` (``../x`` stays in)
        return self.filename if self.filename is not None else f"{file_name(graph_name)}.gv"


class TorchviewAPI:
    """torchview's attributes: ``node_hierarchy``, ``root_container``, ``edge_list``,
    ``input_nodes``/``output_nodes``, ``traverse_graph(...)``, ``resize_graph(...)`` and the
    option values (``depth``, ``roll``...).  Node objects are those of ``compat.nodes``."""

    graph: Graph
    options: ViewOptions
    extras: TorchviewExtras
    visual_graph: Any

    def get_view(self) -> Any: ...

    def _cached(self, key: str, make: Any) -> Any: ...

    def _torchview_nodes(self) -> tuple[dict[Any, list[Any]], dict[int, Node]]:
        made: tuple[dict[Any, list[Any]], dict[int, Node]] = self._cached(
            "torchview_nodes", lambda: build(self.graph, self.extras.attributes)
        )
        return made

    @property
    def node_hierarchy(self) -> dict[Any, list[Any]]:
        """``{container: [inputs..., {ModuleNode(model): [its contents...]}]}``: every
        module call a one-item dict of its node and its contents in execution order."""
        return self._torchview_nodes()[0]

    @property
    def root_container(self) -> OrderedSet:
        """The input tensor nodes."""
        by_id = self._torchview_nodes()[1]
        return OrderedSet(by_id[i] for i in self.graph.inputs if i in by_id)

    input_nodes = root_container

    @property
    def output_nodes(self) -> OrderedSet:
        """The tensor nodes the model returned."""
        by_id = self._torchview_nodes()[1]
        return OrderedSet(by_id[i] for i in self.graph.outputs if i in by_id)

    @property
    def edge_list(self) -> list[tuple[Node, Node]]:
        """The drawn edges as ``(tail, head)`` node pairs, an edge used n times listed n
        times (torchview's ``edge_list``).  A drawn box standing for several calls (a fold,
        a rolled call) is the node of its first call."""
        by_id = self._torchview_nodes()[1]
        pairs = []
        for e in self.get_view().edges:
            tail, head = by_id.get(e.src), by_id.get(e.dst)
            if tail is not None and head is not None:
                pairs.extend([(tail, head)] * e.count)
        return pairs

    def traverse_graph(self, action_fn: Any, **kwargs: Any) -> None:
        """torchview's traversal: ``action_fn(**kwargs)`` is called with ``cur_node`` set to
        each node of ``kwargs["cur_node"]`` (usually ``node_hierarchy``) down to ``depth``.
        ``subgraph`` is handed on as given (tensorview draws no clusters while traversing)."""
        if not callable(action_fn):
            raise InvalidTypeError(f"traverse_graph: action_fn must be callable, got {action_fn!r:.80}")
        kwargs.setdefault("cur_node", self.node_hierarchy)
        kwargs.setdefault("subgraph", None)
        opts = self.options
        traverse(kwargs["cur_node"], opts.depth, opts.hide_module_functions, action_fn, kwargs)

    def resize_graph(self, scale: float = 1.0, size_per_element: float = 0.3, min_size: float = 12) -> None:
        """Set ``visual_graph``'s ``size`` by how much it holds, in place (torchview's
        formula: ``scale * max(min_size, lines * size_per_element)`` inches square)."""
        for name, value in (("scale", scale), ("size_per_element", size_per_element), ("min_size", min_size)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise InvalidInputError(f"resize_graph: {name} must be a number >= 0, got {value!r:.80}")
        digraph = self.visual_graph
        size = scale * max(min_size, len(digraph.body) * size_per_element)
        digraph.graph_attr.update(size=f"{float(size)},{float(size)}")

    # torchview's option attributes, read from the view options
    @property
    def depth(self) -> float:
        return self.options.depth

    @property
    def show_shapes(self) -> bool:
        return self.options.show_shapes

    @property
    def expand_nested(self) -> bool:
        return self.options.expand_nested

    @property
    def hide_inner_tensors(self) -> bool:
        return self.options.hide_inner_tensors

    @property
    def hide_module_functions(self) -> bool:
        return self.options.hide_module_functions

    @property
    def roll(self) -> bool:
        return self.options.roll

    @property
    def collect_attributes(self) -> bool:
        return self.extras.attributes is not None


__all__ = ["ModuleNode", "TensorNode", "TorchviewAPI", "TorchviewExtras"]

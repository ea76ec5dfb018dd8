"""Annotations: named values per node, computed from a graph by annotation passes.

An annotation pass is anything with a ``name`` and ``__call__(graph) -> {node id: value}``
(tap statistics, and later the cost model).  ``annotate(graph, *passes)`` stores each
pass's result as one named layer of ``graph.annotations``; views, every renderer and the
JSON read them from there (``graph.annotations.of(node_id)``), and nodes are never
mutated.  Every change bumps ``version``, so a drawing that cached its output (DOT
source, SVG) knows to redraw, while text it already handed out stays as it was.

>>> from tensorview.graph import Graph, annotate
>>> class Tag:
...     name = "tag"
...     def __call__(self, graph): return {0: "hot"}
>>> g = Graph()
>>> annotate(g, Tag()).annotations.of(0)
{'tag': 'hot'}
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import InvalidInputError, InvalidTypeError

if TYPE_CHECKING:
    from .graph import Graph

#: the layer of source locations (``"file.py:123"``, recording/source.py): the viewer and
#: the JSON show it, drawn labels leave it out (it would add a line to every node)
SOURCE_LAYER = "source"
#: the layer marking the nodes of a backward pass (tensorview/backward/): ``"node"`` for an
#: autograd node, ``"grad"`` for a gradient tensor; labels leave it out (the names say it)
BACKWARD_LAYER = "backward"
#: the layer of warnings on nodes (``Graph.warn``): drawn in the node's label
WARNING_LAYER = "warning"


class AnnotationPass(Protocol):
    """Computes one named value per node (only for the nodes it has something to say about)."""

    name: str

    def __call__(self, graph: Graph) -> Mapping[int, Any]: ...


class Annotations:
    """Layers of per-node values, in the order they were first added."""

    __slots__ = ("_layers", "version")

    def __init__(self) -> None:
        self._layers: dict[str, dict[int, Any]] = {}
        self.version = 0

    def set(self, name: str, values: Mapping[int, Any]) -> None:
        """Add (or replace) the layer ``name``."""
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f"annotation name must be a non-empty str, got {name!r}")
        self._layers[name] = dict(values)
        self.version += 1

    def remove(self, name: str) -> None:
        if self._layers.pop(name, None) is not None:
            self.version += 1

    def layer(self, name: str) -> Mapping[int, Any]:
        """The values of one layer by node id (empty when there is no such layer)."""
        return self._layers.get(name, {})

    def of(self, node_id: int) -> dict[str, Any]:
        """``{layer name: value}`` for one node (empty when no layer mentions it)."""
        return {name: values[node_id] for name, values in self._layers.items() if node_id in values}

    def names(self) -> list[str]:
        return list(self._layers)

    def __contains__(self, name: object) -> bool:
        return name in self._layers

    def __iter__(self) -> Iterator[str]:
        return iter(self._layers)

    def __len__(self) -> int:
        return len(self._layers)

    def __bool__(self) -> bool:
        return bool(self._layers)


def annotate(graph: Graph, *passes: AnnotationPass) -> Graph:
    """Run each pass on ``graph`` and store its values as the layer ``pass.name``."""
    for p in passes:
        name = getattr(p, "name", None)
        if not isinstance(name, str) or not callable(p):
            raise InvalidTypeError(
                f"an annotation pass needs a str `name` and `__call__(graph)`, got {type(p).__name__}"
            )
        values = p(graph)
        if not isinstance(values, Mapping):
            raise InvalidTypeError(f"annotation pass {name!r} returned {type(values).__name__}, not a mapping")
        graph.annotations.set(name, values)
    return graph

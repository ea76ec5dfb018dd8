"""torchview's node objects, made from a recording: what ``node_hierarchy``,
``root_container``, ``edge_list`` and ``traverse_graph`` hand to torchview users' code.

They are read-only pictures of IR nodes (``ir``), made when first asked for, never used by
tensorview itself.  Names follow torchview: a module node is named by its class
(``Linear``), a function node by its op (``add``), a tensor node ``input-tensor``,
``output-tensor`` or ``hidden-tensor``; ``depth`` counts from the model (0) as the IR
does; a tensor has the depth of the outermost call that returned it, and the model's inputs and
outputs have depth 0, as in torchview.  Shapes are tuples
of ints; ``input_shape``/``output_shape`` list the tensors going in and out (parameters
and buffers left out: torchview never sees them as inputs).
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from typing import Any

from ..graph import FunctionNode as IRFunction
from ..graph import Graph
from ..graph import ModuleNode as IRModule
from ..graph import TensorNode as IRTensor


class OrderedSet(list):  # type: ignore[type-arg]
    """A list that keeps each item once, in insertion order (torchview's ``NodeContainer``);
    ``add`` tests membership by identity in constant time."""

    def __init__(self, items: Iterable[Any] = ()) -> None:
        super().__init__()
        self._ids: set[int] = set()
        for item in items:
            self.add(item)

    def add(self, item: Any) -> None:
        if id(item) not in self._ids:
            self._ids.add(id(item))
            self.append(item)

    def discard(self, item: Any) -> None:
        if id(item) in self._ids:
            self._ids.discard(id(item))
            self.remove(item)


NodeContainer = OrderedSet


class Node:
    """torchview's ``Node``: ``name``, ``depth``, ``parents``, ``children`` (containers of
    nodes) and ``ir``, the tensorview node it stands for (``None`` for the outer container)."""

    def __init__(self, ir: Any, name: str, depth: int) -> None:
        self.ir = ir
        self.name = name
        self.depth = depth
        self.parents: OrderedSet = OrderedSet()
        self.children: OrderedSet = OrderedSet()
        self.node_id = str(ir.id) if ir is not None else "container"

    def is_root(self) -> bool:
        return not self.parents

    def is_leaf(self) -> bool:
        return not self.children

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} depth={self.depth}>"


class TensorNode(Node):
    """A tensor: ``tensor_shape``; ``is_aux`` is always False (tensorview keeps one node per
    tensor version) and ``main_node`` the node itself."""

    def __init__(self, ir: Any, name: str, depth: int) -> None:
        super().__init__(ir, name, depth)
        self.tensor_shape: tuple[Any, ...] = tuple(ir.shape)
        self.is_aux = False
        self.main_node = self


class _CallNode(Node):
    def __init__(self, ir: Any, name: str, depth: int, attributes: str | None) -> None:
        super().__init__(ir, name, depth)
        self.input_shape: list[tuple[Any, ...]] = []
        self.output_shape: list[tuple[Any, ...]] = []
        self.attributes = attributes

    @property
    def output_nodes(self) -> OrderedSet:
        """The tensors this call returned."""
        return OrderedSet(c for c in self.children if isinstance(c, TensorNode))


class ModuleNode(_CallNode):
    """A module call: ``input_shape``, ``output_shape``, ``output_nodes``, ``attributes``
    (``collect_attributes=True``), ``is_container`` (the module called no submodule) and
    ``is_activation`` (no parameters of its own were used)."""

    is_container = False
    is_activation = False


class FunctionNode(_CallNode):
    """One op: ``input_shape``, ``output_shape``, ``attributes`` (``collect_attributes``:
    its tensor arguments; tensorview keeps no other argument values)."""

    is_container = True


def build(graph: Graph, attributes: dict[int, str] | None) -> tuple[dict[Any, list[Any]], dict[int, Node]]:
    """``(node_hierarchy, nodes by IR id)``: every module call a ``{ModuleNode: [contents]}``
    dict in execution order, inside one outer container of depth -1 that also holds the
    inputs (as torchview nests them).  The cycle collector is off meanwhile: the many
    small long-lived objects made here would trigger full collections of a big heap
    (1 s of 1.5 s for Llama-3-70B's 11k nodes)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _build(graph, attributes)
    finally:
        if enabled:
            gc.enable()


def _build(graph: Graph, attributes: dict[int, str] | None) -> tuple[dict[Any, list[Any]], dict[int, Node]]:
    outputs = set(graph.outputs)
    by_id: dict[int, Node] = {}
    for n in graph.nodes:
        match n:
            case IRTensor():
                if n.is_param:
                    continue
                role = "input" if n.role == "input" else "output" if n.id in outputs else "hidden"
                by_id[n.id] = TensorNode(n, f"{role}-tensor", 0 if role != "hidden" else n.depth)
            case IRFunction():
                by_id[n.id] = FunctionNode(
                    n, n.op, n.depth, _arguments(graph, n.id) if attributes is not None else None
                )
            case IRModule():
                by_id[n.id] = ModuleNode(n, n.cls_name, n.depth, (attributes or {}).get(n.id))
    for src, dst in graph.edges:
        a, b = by_id.get(src), by_id.get(dst)
        if a is None or b is None:
            continue
        a.children.add(b)
        b.parents.add(a)
    for node in by_id.values():
        if isinstance(node, TensorNode) and node.name == "hidden-tensor":  # the outermost call returning it
            node.depth = min((p.depth for p in node.parents), default=node.depth)
        if isinstance(node, _CallNode):
            node.input_shape = [p.tensor_shape for p in node.parents if isinstance(p, TensorNode)]
            node.output_shape = [c.tensor_shape for c in node.children if isinstance(c, TensorNode)]
        if isinstance(node, ModuleNode):
            ir = node.ir
            inner = [graph[i] for i in range(ir.id + 1, ir.end if ir.end >= 0 else len(graph.nodes))]
            node.is_container = not any(isinstance(m, IRModule) and m.parent == ir.id for m in inner)
            node.is_activation = not any(isinstance(t, IRTensor) and t.is_param and t.path == ir.path for t in inner)
    container = ModuleNode(None, "Identity", -1, None) if graph.nodes else None
    contents: dict[int, list[Any]] = {}
    top: list[Any] = [by_id[i] for i in graph.inputs if i in by_id]
    for n in graph.nodes:
        made = by_id.get(n.id)
        if made is None or n.id in graph.inputs:
            continue
        item: Any = made
        if isinstance(made, ModuleNode):
            contents[n.id] = []
            item = {made: contents[n.id]}
        (contents[n.parent] if n.parent is not None and n.parent in contents else top).append(item)
    return {container: top}, by_id


def _arguments(graph: Graph, fn_id: int) -> str:
    """torchview's attribute text of an op's arguments, from what the graph keeps: its
    tensor arguments in order (``[[Tensor(shape=(1, 2), dtype=torch.float32)], {}]``)."""
    tensors = [graph[i] for i in graph.predecessors(fn_id)]
    shown = [f"Tensor(shape={tuple(t.shape)}, dtype=torch.{t.dtype})" for t in tensors if isinstance(t, IRTensor)]
    return f"[[{', '.join(shown)}], {{}}]"


def traverse(hierarchy: Any, depth: float, hide_module_functions: bool, action_fn: Any, kwargs: dict[str, Any]) -> None:
    """torchview's ``traverse_graph``: call ``action_fn(**kwargs)`` with ``cur_node`` set to
    each node down to ``depth``, modules before their contents; with
    ``hide_module_functions``, a module that calls no submodule is followed by its outputs
    instead of its contents."""
    cur = kwargs["cur_node"]
    if isinstance(cur, Node):
        if cur.depth <= depth:
            action_fn(**kwargs)
        return
    if not isinstance(cur, dict):
        raise TypeError(f"traverse_graph: cur_node must be a node or a node_hierarchy dict, got {cur!r:.80}")
    for module, contents in cur.items():
        here = {**kwargs, "cur_node": module}
        if 0 <= module.depth <= depth:
            action_fn(**here)
        items: Iterator[Any] = iter(module.output_nodes if hide_module_functions and module.is_container else contents)
        for item in items:
            traverse(hierarchy, depth, hide_module_functions, action_fn, {**here, "cur_node": item})

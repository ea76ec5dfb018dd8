"""``NodeFactory``: the one place where nodes and edges are created.

Ids (execution order), unique names, parents, depths, paths, call indices and edges are
assigned here, as ``torch.fx.Graph.create_node`` does for fx, by small fast calls that the
recorder makes as a forward runs (parents given explicitly): ``add_module``, ``add_call``,
``add_function``, ``add_tensor``, ``add_result``, ``add_edge``, ``end_call``.  Names are
handed out once, on the first read of the finished graph's nodes (``close``, names.py).
``GraphBuilder`` (builder.py) adds a scripting layer for graphs written by hand or
translated from another IR.
"""

from __future__ import annotations

from collections.abc import Iterable

from .checks import closed
from .graph import Graph
from .names import Namespace, name_nodes
from .nodes import FunctionNode, ModuleNode, Node, Shape, TensorNode


class NodeFactory:
    """Makes the nodes and edges of one ``Graph``."""

    def __init__(self) -> None:
        self.graph = Graph()
        self._nodes = self.graph.building()  # (appended to without naming: ``close``)
        #: names are handed out once the graph is done and read (``close``, names.py)
        self.names = Namespace()
        self._after: dict[int, int] = {}
        self._named = 0
        self._call_counts: dict[str, int] = {}

    def add_module(
        self, path: str, cls_name: str, cls_module: str, parent: ModuleNode | None, *, method: str | None = None
    ) -> ModuleNode:
        """A module call; ``parent=None`` makes it the root call; ``method``: the method run
        when not ``forward`` through ``__call__``."""
        g = self.graph
        k = self._call_counts.get(path, 0)
        self._call_counts[path] = k + 1
        nodes = self._nodes
        name = (f"{path}.{method}" if method else path).replace(".", "_") if path else "model"
        if parent is None:
            node = ModuleNode(len(nodes), name, path, None, 0, cls_name, cls_module, k, method=method)
        else:
            node = ModuleNode(
                len(nodes), name, path, parent.id, parent.depth + 1, cls_name, cls_module, k, method=method
            )
        nodes.append(node)
        if parent is None:
            g.root = node.id
        return node

    def add_call(self, path: str, cls_name: str, cls_module: str, parent: ModuleNode) -> ModuleNode:
        """``add_module``'s common case, in one positional call: a submodule called through
        ``__call__`` (the per-call hot path)."""
        counts = self._call_counts
        k = counts.get(path, 0)
        counts[path] = k + 1
        nodes = self._nodes
        node = ModuleNode(
            len(nodes), path.replace(".", "_"), path, parent.id, parent.depth + 1, cls_name, cls_module, k
        )
        nodes.append(node)
        return node

    def add_function(self, op: str, parent: ModuleNode, inputs: Iterable[int] = ()) -> FunctionNode:
        """A call of op ``op`` inside ``parent``, with an edge from each input (once per use)."""
        g = self.graph
        nodes = self._nodes
        fid = len(nodes)
        fn = FunctionNode(fid, op, parent.path, parent.id, parent.depth + 1, op)  # positional: fast
        nodes.append(fn)
        g.edges.add_into(inputs, fid)
        return fn

    def add_tensor(
        self,
        base: str,
        parent: ModuleNode,
        shape: Shape,
        dtype: str,
        device: str,
        role: str,
        *,
        copy_of: int | None = None,
        source_name: str | None = None,
        producer: int | None = None,
        named_after: Node | None = None,
    ) -> TensorNode:
        """A tensor (version) made inside ``parent``; ``producer``: the op or call that made
        it; ``named_after``: ``base`` is a suffix to that node's name (``add_1`` -> ``add_1_out``)."""
        g = self.graph
        nodes = self._nodes
        if named_after is not None:
            self._after[len(nodes)] = named_after.id
        node = TensorNode(
            len(nodes), base, parent.path, parent.id, parent.depth + 1, shape, dtype, device, role,
            copy_of, source_name,
        )  # fmt: skip
        nodes.append(node)
        if producer is not None:
            g.edges.add(producer, node.id)
        return node

    def add_result(
        self, suffix: str, parent: ModuleNode, shape: Shape, dtype: str, device: str, producer: Node
    ) -> TensorNode:
        """A tensor made by ``producer`` (an op or a call) inside ``parent`` and named after
        it: ``add_tensor``'s most common case, in one positional call."""
        g = self.graph
        nodes = self._nodes
        tid = len(nodes)
        pid = producer.id
        self._after[tid] = pid
        node = TensorNode(tid, suffix, parent.path, parent.id, parent.depth + 1, shape, dtype, device, "intermediate")
        nodes.append(node)
        g.edges.add(pid, tid)
        return node

    def add_edge(self, src: int, dst: int) -> None:
        self.graph.edges.add(src, dst)

    def add_input(self, t: TensorNode) -> None:
        """``t`` is an argument of the root call (in argument order)."""
        g = self.graph
        g.inputs.append(t.id)
        if g.root is not None:
            g.edges.add(t.id, g.root)

    def mark_output(self, t: TensorNode, name: str | None = None, field: str | None = None) -> None:
        """``t`` is returned by the root call (listed once, in return order); ``name``: where
        in the returned value (its ``source_name`` unless it has one, as inputs and
        parameters do), ``field``: the top-level part of the returned value holding it."""
        if t.role == "intermediate":
            t.role = "output"
        if name is not None and t.source_name is None:
            t.source_name = name
            t.field = field
        if t.id not in self.graph.outputs:
            self.graph.outputs.append(t.id)

    def end_call(self, m: ModuleNode) -> None:
        """The call ``m`` returned: later nodes are outside it."""
        m.end = len(self._nodes)
        m.opaque = m.end == m.id + 1

    def end_call_with(self, m: ModuleNode, result: int) -> None:
        """``end_call``, and the edge from ``m`` to ``result``, made inside it."""
        m.end = end = len(self._nodes)
        m.opaque = end == m.id + 1
        self.graph.edges.add(m.id, result)

    def fail_call(self, m: ModuleNode) -> None:
        """The call ``m`` raised (its end is where it stopped, unless already set)."""
        m.failed = True
        if m.end < 0:
            m.end = len(self._nodes)

    def resolve_names(self) -> None:
        """Name the nodes made since the last call (names.py: ``name_nodes``)."""
        self._named = name_nodes(self._nodes, self._named, self._after, self.names)

    def close(self, *, lint: bool = True) -> None:
        """No more nodes will be added: hand the naming to the graph (done on the first read
        of its nodes: ``Graph.defer_names``), keep no builder state alive, and run the close
        hooks (checks.py; ``lint=False`` tells them the graph is broken on purpose)."""
        self._complete_last()
        self.graph.defer_names(self._after, self.names, self._named)
        self._named = len(self._nodes)  # (a second close defers nothing more)
        self._after = {}
        self.names = Namespace()
        self._call_counts = {}
        closed(self.graph, lint)

    def _complete_last(self) -> None:
        """An interrupt (Ctrl-C, any asynchronous exception) can stop a recording between
        appending a result and adding the edge from its producer: only the last node can be
        left so, and its producer is the node it is named after (``add_result``)."""
        g = self.graph
        if not self._nodes:
            return
        last = self._nodes[-1]
        pid = self._after.get(last.id)
        if (
            type(last) is TensorNode
            and last.role == "intermediate"
            and pid is not None
            and not g.edges.has_target(last.id)
        ):
            g.edges.add(pid, last.id)

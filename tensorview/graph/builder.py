"""``GraphBuilder``: the one place where nodes and edges are created.

Ids (execution order), unique names, parents, depths, paths, call indices and edges are
assigned here, as ``torch.fx.Graph.create_node`` does for fx.  Two layers:

* ``add_module`` / ``add_function`` / ``add_tensor`` / ``add_edge`` / ``end_call``: the
  small, fast calls the recorder makes as a forward runs (parents given explicitly);
* a scripting layer on a scope stack, for graphs written by hand (tests) or translated
  from another IR (fx, ``torch.export``):

>>> b = GraphBuilder("Net")
>>> x = b.input((1, 4))
>>> with b.module("fc", "Linear", x, builtin=True) as fc:
...     fc.returns(b.op("linear", x, shape=(1, 2)))
>>> b.output(fc.outputs[0])
>>> g = b.finish()
>>> [(n.kind, n.name) for n in g]
[('module', 'model'), ('tensor', 'x'), ('module', 'fc'), ('function', 'linear'), ('tensor', 'linear_out')]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from .graph import Graph
from .names import Namespace, name_nodes
from .nodes import FunctionNode, ModuleNode, Node, Shape, TensorNode

#: what a scripted op returns: ``(shape, dtype, device)`` per result
Meta = tuple[Shape, str, str]


class Call:
    """A module call opened with ``GraphBuilder.module``; ``returns`` what it returns."""

    def __init__(self, node: ModuleNode) -> None:
        self.node = node
        self.results: list[int] = []
        #: filled on exit: the results, or alias nodes for results passed through unchanged
        self.outputs: list[int] = []

    @property
    def id(self) -> int:
        return self.node.id

    def returns(self, *tensors: int) -> None:
        self.results.extend(tensors)


class GraphBuilder:
    """Builds one ``Graph``.  ``GraphBuilder("Net")`` opens a root call of class ``Net``
    for scripting; the recorder passes no class and makes the root with ``add_module``.
    ``cls_module`` is the default class module of scripted module calls."""

    def __init__(self, root_cls: str | None = None, *, cls_module: str = "tests.models") -> None:
        self.graph = Graph()
        #: names are handed out when the graph is done (``resolve_names``, names.py)
        self.names = Namespace()
        self._after: dict[int, int] = {}
        self._named = 0
        self.cls_module = cls_module
        self._call_counts: dict[str, int] = {}
        #: open module calls of the scripting layer, root first
        self.stack: list[ModuleNode] = []
        if root_cls is not None:
            self.stack.append(self.add_module("", root_cls, cls_module, None))

    # -- the recorder's layer -----------------------------------------------------------
    def add_module(
        self, path: str, cls_name: str, cls_module: str, parent: ModuleNode | None, *, method: str | None = None
    ) -> ModuleNode:
        """A module call; ``parent=None`` makes it the root call; ``method``: the method run
        when not ``forward`` through ``__call__``."""
        g = self.graph
        k = self._call_counts.get(path, 0)
        self._call_counts[path] = k + 1
        nodes = g.nodes
        name = (f"{path}.{method}" if method else path).replace(".", "_") if path else "model"
        if parent is None:
            node = ModuleNode(len(nodes), name, path, None, 0, cls_name, cls_module, k, method=method)
        else:
            node = ModuleNode(
                len(nodes), name, path, parent.id, parent.depth + 1, cls_name, cls_module, k, method=method
            )
        g.nodes.append(node)
        if parent is None:
            g.root = node.id
        return node

    def add_function(self, op: str, parent: ModuleNode, inputs: Iterable[int] = ()) -> FunctionNode:
        """A call of op ``op`` inside ``parent``, with an edge from each input (once per use)."""
        g = self.graph
        nodes = g.nodes
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
        nodes = g.nodes
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
        m.end = len(self.graph.nodes)
        m.opaque = m.end == m.id + 1

    def fail_call(self, m: ModuleNode) -> None:
        """The call ``m`` raised (its end is where it stopped, unless already set)."""
        m.failed = True
        if m.end < 0:
            m.end = len(self.graph.nodes)

    def resolve_names(self) -> None:
        """Name the nodes made since the last call (names.py: ``name_nodes``)."""
        self._named = name_nodes(self.graph.nodes, self._named, self._after, self.names)

    def close(self) -> None:
        """No more nodes will be added: name them, and free the name table (a recorded graph
        keeps no builder state alive)."""
        self.resolve_names()
        self.names = Namespace()
        self._call_counts = {}

    # -- the scripting layer ------------------------------------------------------------
    @property
    def top(self) -> ModuleNode:
        return self.stack[-1]

    def tensor(
        self,
        name: str,
        shape: Shape,
        role: str = "intermediate",
        *,
        dtype: str = "float32",
        device: str = "cpu",
        copy_of: int | None = None,
        source_name: str | None = None,
        parent: ModuleNode | None = None,
        producer: int | None = None,
        named_after: Node | None = None,
    ) -> int:
        t = self.add_tensor(
            name,
            parent or self.top,
            tuple(shape),
            dtype,
            device,
            role,
            copy_of=copy_of,
            source_name=source_name,
            producer=producer,
            named_after=named_after,
        )
        return t.id

    def input(self, shape: Shape = (1, 4), name: str = "x", dtype: str = "float32", device: str = "cpu") -> int:
        t = self.add_tensor(name, self.stack[0], tuple(shape), dtype, device, "input", source_name=name)
        self.add_input(t)
        return t.id

    def param(
        self, qualname: str, shape: Shape = (4, 4), role: str = "parameter", dtype: str = "float32", device: str = "cpu"
    ) -> int:
        name = qualname.replace(".", "_")
        return self.tensor(name, shape, role, dtype=dtype, device=device, source_name=qualname)

    def created(self, shape: Shape = (1, 4), name: str = "zeros") -> int:
        return self.tensor(name, shape, "created")

    def op(self, op: str, *args: int, shape: Shape | None = None, n_out: int = 1, failed: bool = False) -> int:
        """Run ``op`` on ``args`` in the current module; returns its (first) result."""
        out_shape = shape if shape is not None else (self.graph.tensor(args[0]).shape if args else (1,))
        results = self.op_results(op, args, [(out_shape, "float32", "cpu")] * n_out, failed=failed)
        return results[0] if results else -1

    def op_results(self, op: str, args: Sequence[int], results: Sequence[Meta], *, failed: bool = False) -> list[int]:
        """Run ``op`` on ``args`` in the current module; one result per ``(shape, dtype, device)``."""
        f = self.add_function(op, self.top, args)
        f.failed = failed
        return [self.tensor(f"{op}_out", s, dtype=dt, device=dev, producer=f.id) for s, dt, dev in results]

    @contextmanager
    def module(
        self,
        path: str,
        cls: str,
        *args: int,
        builtin: bool = False,
        cls_module: str | None = None,
        opaque: bool = False,
        failed: bool = False,
        method: str | None = None,
    ) -> Iterator[Call]:
        """Open a call of ``cls`` at ``path`` taking ``args``; on exit its results become its
        outputs (a result made outside the call gets an alias node, as the recorder does).
        ``builtin``: a ``torch.nn`` class (drawn closed with ``hide_module_functions``)."""
        module = "torch.nn.modules" if builtin else (cls_module or self.cls_module)
        m = self.add_module(path, cls, module, self.top, method=method)
        m.failed = failed
        for a in args:
            self.add_edge(a, m.id)
        call = Call(m)
        self.stack.append(m)
        try:
            yield call
        finally:
            self.stack.pop()
            self.end_call(m)
            m.opaque = opaque
            for r in call.results:
                if r > m.id:
                    self.add_edge(m.id, r)
                    call.outputs.append(r)
                else:  # returned an outer tensor unchanged: an alias node
                    t = self.graph.tensor(r)
                    alias = self.add_tensor(
                        "", self.top, t.shape, "float32", "cpu", "intermediate", copy_of=r, producer=m.id, named_after=t
                    )
                    call.outputs.append(alias.id)

    def leaf(
        self, path: str, cls: str, *args: int, op: str | None = None, builtin: bool = True, shape: Shape | None = None
    ) -> int:
        """A module call that runs one op on its arguments and returns the result."""
        with self.module(path, cls, *args, builtin=builtin) as c:
            c.returns(self.op(op or cls.lower(), *args, shape=shape))
        return c.outputs[0]

    def output(self, *tensors: int, field: str | None = None) -> None:
        """The root call returns ``tensors``; with ``field``, as that key of a returned dict
        (a list of them, ``field[i]``, when several)."""
        for i, t in enumerate(tensors):
            self.add_edge(self.stack[0].id, t)
            name = field if field is None or len(tensors) == 1 else f"{field}[{i}]"
            self.mark_output(self.graph.tensor(t), name, field)

    def finish(self, *, lint: bool = True) -> Graph:
        """Close the calls still open and return the graph (linted unless ``lint=False``)."""
        while self.stack:
            m = self.stack.pop()
            if m.end < 0:
                m.end = len(self.graph.nodes)
        self.resolve_names()
        if lint:
            self.graph.lint()
        return self.graph

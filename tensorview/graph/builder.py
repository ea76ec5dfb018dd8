"""``GraphBuilder``: the node factory (factory.py, the one place where nodes and edges are
created) with a scripting layer on a scope stack, for graphs written by hand (tests) or
translated from another IR (fx, ``torch.export``):

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

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from .factory import NodeFactory
from .graph import Graph
from .nodes import ModuleNode, Node, Shape

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


class GraphBuilder(NodeFactory):
    """Builds one ``Graph``: the node factory (factory.py) and a scripting layer on a scope
    stack.  ``GraphBuilder("Net")`` opens a root call of class ``Net`` for scripting; the
    recorder passes no class and makes the root with ``add_module``.  ``cls_module`` is the
    default class module of scripted module calls."""

    def __init__(self, root_cls: str | None = None, *, cls_module: str = "tests.models") -> None:
        super().__init__()
        self.cls_module = cls_module
        #: open module calls of the scripting layer, root first
        self.stack: list[ModuleNode] = []
        if root_cls is not None:
            self.stack.append(self.add_module("", root_cls, cls_module, None))

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
        self.close(lint=lint)
        if lint:
            self.graph.lint()
        return self.graph

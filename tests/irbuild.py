"""Build IR graphs by hand, with the recorder's conventions, for transform/render tests.

    b = IRBuilder()
    x = b.input((1, 4))
    with b.module("fc", "Linear", x) as fc:
        fc.returns(b.op("linear", x))
    b.output(fc.outputs[0])
    g = b.finish()
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tensorview.graph import FunctionNode, Graph, ModuleNode, TensorNode

Shape = tuple[int, ...]


class Call:
    def __init__(self, node: ModuleNode) -> None:
        self.node = node
        self.results: list[int] = []
        self.outputs: list[int] = []  # filled on exit: results, aliases for pass-throughs

    @property
    def id(self) -> int:
        return self.node.id

    def returns(self, *tensors: int) -> None:
        self.results.extend(tensors)


class IRBuilder:
    def __init__(self, cls: str = "Model") -> None:
        self.g = Graph()
        root = ModuleNode(0, self.g.names("model"), "", None, 0, cls, "tests.models", 0)
        self.g.add(root)
        self.g.root = 0
        self.stack: list[ModuleNode] = [root]
        self.calls: dict[str, int] = {}

    @property
    def top(self) -> ModuleNode:
        return self.stack[-1]

    def tensor(self, name: str, shape: Shape, role: str = "intermediate", *, dtype: str = "float32",
               copy_of: int | None = None, source_name: str | None = None, parent: ModuleNode | None = None) -> int:
        p = parent or self.top
        t = TensorNode(self.g.next_id, self.g.names(name), p.path, p.id, p.depth + 1, tuple(shape), dtype, "cpu",
                       role, copy_of=copy_of, source_name=source_name)
        self.g.add(t)
        return t.id

    def input(self, shape: Shape = (1, 4), name: str = "x", dtype: str = "float32") -> int:
        t = self.tensor(name, shape, "input", dtype=dtype, source_name=name, parent=self.stack[0])
        self.g.inputs.append(t)
        self.g.edges.append((t, 0))
        return t

    def param(self, qualname: str, shape: Shape = (4, 4), role: str = "parameter") -> int:
        return self.tensor(qualname.replace(".", "_"), shape, role, source_name=qualname)

    def created(self, shape: Shape = (1, 4), name: str = "zeros") -> int:
        return self.tensor(name, shape, "created")

    def op(self, op: str, *args: int, shape: Shape | None = None, n_out: int = 1, failed: bool = False) -> int:
        """Run ``op`` on ``args`` in the current module; returns its (first) result."""
        p = self.top
        f = FunctionNode(self.g.next_id, self.g.names(op), p.path, p.id, p.depth + 1, op)
        f.failed = failed
        self.g.add(f)
        for a in args:
            self.g.edges.append((a, f.id))
        out_shape = shape if shape is not None else (self.g.nodes[args[0]].shape if args else (1,))  # type: ignore[attr-defined]
        first = -1
        for k in range(n_out):
            t = self.tensor(f"{op}_out", out_shape)
            self.g.edges.append((f.id, t))
            first = t if k == 0 else first
        return first

    @contextmanager
    def module(self, path: str, cls: str, *args: int, builtin: bool = False, opaque: bool = False,
               failed: bool = False) -> Iterator[Call]:
        p = self.top
        idx = self.calls.get(path, 0)
        self.calls[path] = idx + 1
        cls_module = "torch.nn.modules.x" if builtin else "tests.models"
        m = ModuleNode(self.g.next_id, self.g.names(path or "model"), path, p.id, p.depth + 1, cls, cls_module, idx)
        m.opaque = opaque
        m.failed = failed
        self.g.add(m)
        for a in args:
            self.g.edges.append((a, m.id))
        call = Call(m)
        self.stack.append(m)
        try:
            yield call
        finally:
            self.stack.pop()
            m.end = self.g.next_id
            for r in call.results:
                if r > m.id:
                    self.g.edges.append((m.id, r))
                    call.outputs.append(r)
                else:  # returned an outer tensor unchanged: an alias node
                    t = self.g.nodes[r]
                    a = self.tensor(t.name, t.shape, "intermediate", copy_of=r)  # type: ignore[attr-defined]
                    self.g.edges.append((m.id, a))
                    call.outputs.append(a)

    def leaf(self, path: str, cls: str, *args: int, op: str | None = None, builtin: bool = True,
             shape: Shape | None = None) -> int:
        """A module call that runs one op on its arguments and returns the result."""
        with self.module(path, cls, *args, builtin=builtin) as c:
            c.returns(self.op(op or cls.lower(), *args, shape=shape))
        return c.outputs[0]

    def output(self, *tensors: int) -> None:
        for t in tensors:
            node = self.g.nodes[t]
            if node.role == "intermediate":  # type: ignore[attr-defined]
                node.role = "output"  # type: ignore[attr-defined]
            self.g.outputs.append(t)
            self.g.edges.append((0, t))

    def finish(self) -> Graph:
        self.stack[0].end = self.g.next_id
        self.g.lint()
        return self.g

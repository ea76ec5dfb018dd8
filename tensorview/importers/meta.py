"""Reading what torch.export and torch.fx leave on each node: tensor metadata
(``meta["val"]``, a FakeTensor, or ``meta["tensor_meta"]``), symbolic sizes, the module
stack (``meta["nn_module_stack"]``), op display names and the arguments an op mutates."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch.fx import Node
from torch.fx.passes.shape_prop import TensorMetadata

from ..graph import SOURCE_ROLES
from ..graph.builder import Meta
from ..recording.names import clean_name, op_name
from ..recording.optable import device_name, dtype_name

#: higher-order ops that only wrap a subgraph in a context (grad mode, autocast): their
#: subgraph is drawn in place, as the eager forward ran it
INLINE_HOPS = frozenset({"wrap_with_set_grad_enabled", "wrap_with_autocast", "wrap"})
#: aten ops that return their argument itself when nothing changes (``x.to(x.dtype)``)
NOOP_ALIASES = frozenset({"to", "type_as", "contiguous"})


@dataclass(eq=False)
class Value:
    """One tensor value of the program (a node's result, an input, a parameter)."""

    meta: Meta
    role: str = "intermediate"
    #: argument name of an input, qualified name of a parameter, buffer or constant
    name: str = ""
    #: the call instances (innermost last) it was produced in; set by the planner
    chain: tuple[int, ...] = ()
    #: the chains of the items that read it
    users: list[tuple[int, ...]] = field(default_factory=list)
    #: returned by the program
    output: bool = False
    #: its TensorNode once made (parameters, buffers and constants are made where first used)
    tid: int | None = None
    #: the argument a no-op ``to``/``contiguous`` returned unchanged (see build.plan)
    alias_of: Value | None = None

    @property
    def is_source(self) -> bool:
        return self.role in SOURCE_ROLES


class Entry(NamedTuple):
    """One level of a node's module stack: the call's unique key, the module's qualified
    path and class."""

    key: str
    path: str
    cls_name: str
    cls_module: str


class Dims:
    """Sizes as ints: symbolic sizes (``s0``, ``2*s0``) are evaluated with the sizes bound
    from the given inputs, else the example size the program was traced with (-1 when it
    has none, as for data-dependent sizes)."""

    def __init__(self) -> None:
        self.bindings: dict[Any, int] = {}

    def bind(self, dim: Any, size: int) -> None:
        expr = getattr(getattr(dim, "node", None), "expr", None)
        if expr is not None and getattr(expr, "is_Symbol", False):
            import sympy

            self.bindings[expr] = sympy.Integer(int(size))

    def size(self, dim: Any) -> int:
        if isinstance(dim, int):
            return dim
        node = getattr(dim, "node", None)
        if node is None:
            return -1
        if self.bindings:
            value = node.expr.xreplace(self.bindings)
            if getattr(value, "is_number", False):
                return int(value)
        hint = getattr(node, "hint", None)
        return int(hint) if hint is not None else -1


class Fields(list[Any]):
    """The values of a namedtuple or dataclass, by position and by field name."""

    def __init__(self, items: list[Any], names: Sequence[str]) -> None:
        super().__init__(items)
        self.names = tuple(names)


def structure(obj: Any, dims: Dims, device: str) -> Any:
    """``obj`` (a node's value or tensor metadata) with each tensor replaced by a new
    ``Value``; lists, tuples, dicts, namedtuples and dataclasses are kept (the last two
    as ``Fields``), anything else becomes ``None``."""
    if isinstance(obj, torch.Tensor):
        return Value((tuple(dims.size(d) for d in obj.shape), dtype_name(obj.dtype), device_name(obj.device)))
    if isinstance(obj, TensorMetadata):  # a NamedTuple: before the tuple case
        return Value((tuple(dims.size(d) for d in obj.shape), dtype_name(obj.dtype), device))
    names = getattr(obj, "_fields", None)
    if isinstance(obj, tuple) and names is not None:
        return Fields([structure(o, dims, device) for o in obj], names)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = [f.name for f in dataclasses.fields(obj)]
        return Fields([structure(getattr(obj, f), dims, device) for f in names], names)
    if isinstance(obj, (list, tuple)):
        return [structure(o, dims, device) for o in obj]
    if isinstance(obj, dict):
        return {k: structure(v, dims, device) for k, v in obj.items()}
    return None


def leaves(struct: Any) -> Iterator[Value]:
    """The ``Value``s of a structure, in order."""
    if isinstance(struct, Value):
        yield struct
    elif isinstance(struct, (list, tuple)):
        for s in struct:
            yield from leaves(s)
    elif isinstance(struct, dict):
        for s in struct.values():
            yield from leaves(s)


def named_leaves(struct: Any, name: str) -> Iterator[tuple[str, Value]]:
    """The ``Value``s of a structure with names as the recorder gives inputs: ``x``,
    ``items_0``, ``pair_a``, ``mapping_x``."""
    if isinstance(struct, Value):
        yield name, struct
    elif isinstance(struct, Fields):
        for key, s in zip(struct.names, struct):
            yield from named_leaves(s, f"{name}_{key}")
    elif isinstance(struct, (list, tuple)):
        for i, s in enumerate(struct):
            yield from named_leaves(s, f"{name}_{i}")
    elif isinstance(struct, dict):
        for k, s in struct.items():
            yield from named_leaves(s, f"{name}_{k}")


def node_refs(node: Node) -> list[Node]:
    """The nodes ``node`` reads, in argument order, once per use."""
    found: list[Node] = []

    def see(x: Any) -> Any:
        if isinstance(x, Node):
            found.append(x)
        elif isinstance(x, (list, tuple)):
            for y in x:
                see(y)
        elif isinstance(x, dict):
            for y in x.values():
                see(y)

    see(node.args)
    see(node.kwargs)
    return found


def has_shapes(node: Node) -> bool:
    return "val" in node.meta or "tensor_meta" in node.meta


def node_value(node: Node) -> Any:
    """What export/fx recorded as the node's result (FakeTensor or TensorMetadata)."""
    return node.meta["val"] if "val" in node.meta else node.meta.get("tensor_meta")


def stack_of(node: Node) -> tuple[list[Entry], Entry | None]:
    """The node's module stack without the root, and the root entry when listed (export
    lists the root as path ``""``; ``symbolic_trace`` leaves it out)."""
    stack = node.meta.get("nn_module_stack") or {}
    entries: list[Entry] = []
    root = None
    for key, (path, cls) in stack.items():
        if isinstance(cls, type):
            cls_module, cls_name = cls.__module__, cls.__qualname__
        else:
            cls_module, _, cls_name = str(cls).rpartition(".")
        entry = Entry(str(key), str(path), cls_name, cls_module)
        if entry.path:
            entries.append(entry)
        else:
            root = entry
    return entries, root


def op_label(node: Node) -> str:
    """The op's name as the eager recorder writes it: ``aten.linear.default`` ->
    ``linear``, ``operator.iadd`` -> ``add_``, a method by its name."""
    t = node.target
    if isinstance(t, str):
        return clean_name(t)
    if isinstance(t, torch._ops.OpOverload):
        return clean_name(t.overloadpacket.__name__)
    if isinstance(t, torch._ops.HigherOrderOperator):
        return t.__name__
    name = getattr(t, "__name__", "")
    if getattr(t, "__module__", "") in ("_operator", "operator") and name:
        return clean_name(f"__{name.rstrip('_')}__")
    return op_name(t)


def mutated_args(node: Node, label: str) -> list[Node]:
    """The argument nodes ``node`` writes to: from the op's schema for aten ops, else the
    first argument of an in-place method or function (``relu_``, ``add_`` for ``+=``)."""
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        out: list[Node] = []
        for i, a in enumerate(t._schema.arguments):
            if a.alias_info is not None and a.alias_info.is_write:
                value = node.args[i] if i < len(node.args) else node.kwargs.get(a.name)
                if isinstance(value, Node):
                    out.append(value)
        return out
    in_place = label.endswith("_") and not label.endswith("__")
    first = node.args[0] if node.args else None
    return [first] if in_place and isinstance(first, Node) else []


def picked(node: Node, env: dict[Node, Any]) -> tuple[bool, Any]:
    """For ``getitem``/``getattr`` of a structure of values (a multi-result op, a nested
    input): ``(True, the part picked)``; ``(False, None)`` for anything else (indexing a
    tensor is an op)."""
    if node.op != "call_function" or node.target not in (operator.getitem, getattr) or len(node.args) < 2:
        return False, None
    src = env.get(node.args[0]) if isinstance(node.args[0], Node) else None
    key = node.args[1]
    if node.target is getattr:
        if isinstance(src, Fields) and key in src.names:
            return True, src[src.names.index(key)]
        return False, None
    if isinstance(src, (list, dict)):
        try:
            return True, src[key]  # type: ignore[index]
        except (IndexError, KeyError, TypeError):
            return True, None
    return False, None


def fetch(root: torch.nn.Module, target: str) -> Any:
    """The attribute ``target`` (a dotted path) of ``root``, or ``None``."""
    obj: Any = root
    for part in target.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


#: a function mapping a node to its result as propagated on fake tensors (or None)
Shapes = Callable[[Node], Any]

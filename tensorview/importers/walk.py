"""``Walk``: a program's nodes, in order, as items (one per op or module call that makes a
tensor), with its inputs and outputs.  Subgraphs of wrapping higher-order ops (grad mode,
autocast) are walked in place; ``getitem`` of a multi-result op is no item (it picks one
of the op's results, as in the eager forward); an in-place op gives the tensor it writes
a new version that later readers see."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.fx import Graph as FxGraph
from torch.fx import GraphModule, Node

from .meta import (
    INLINE_HOPS,
    NOOP_ALIASES,
    Dims,
    Entry,
    Shapes,
    Value,
    fetch,
    leaves,
    mutated_args,
    named_leaves,
    node_refs,
    node_value,
    op_label,
    picked,
    stack_of,
    structure,
)


@dataclass(eq=False)
class Item:
    """One op (or module call the program did not trace into) that makes tensors."""

    label: str
    args: list[Value]
    results: list[Value]
    #: the module stack of the node, root excluded
    entries: list[Entry]
    #: a module call drawn closed (fx ``call_module`` of a leaf module)
    leaf: Entry | None = None
    #: made from no tensor (``arange``, ``zeros``): ``created`` tensors, no op node
    created: bool = False
    #: the call instances the item runs in, innermost last (set by the planner)
    chain: tuple[int, ...] = ()


class Walk:
    """Walks an fx graph.  ``roles``: placeholder name -> (role, qualified name) for
    lifted parameters, buffers and constants (``torch.export``); ``params``: qualified
    name -> role of the root module's tensors (``get_attr``); ``shapes``: results
    propagated on fake tensors, for graphs without shape metadata."""

    def __init__(
        self,
        dims: Dims,
        *,
        roles: dict[str, tuple[str, str]] | None = None,
        params: dict[str, str] | None = None,
        shapes: Shapes | None = None,
        device: str = "cpu",
    ) -> None:
        self.dims = dims
        self.roles = roles or {}
        self.params = params or {}
        self.shapes = shapes
        self.device = device
        self.items: list[Item] = []
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.root: Entry | None = None
        self.env: dict[Node, Any] = {}

    def run(self, graph: FxGraph, module: torch.nn.Module, keep: Sequence[bool] | None = None) -> None:
        """Walk the top graph; ``keep`` selects the returned values that are the
        program's outputs (``torch.export``'s user outputs), by position."""
        out = self.graph(graph, module, None)
        if keep is not None and isinstance(out, list):
            out = [o for o, k in zip(out, keep) if k]
        for v in leaves(out):
            if not v.output:
                v.output = True
                self.outputs.append(v)

    def graph(self, graph: FxGraph, module: torch.nn.Module, sub_args: list[Any] | None) -> Any:
        """Walk ``graph`` (of ``module``); a subgraph's placeholders take ``sub_args``."""
        args = iter(sub_args) if sub_args is not None else None
        for n in graph.nodes:
            if n.op == "placeholder":
                self.env[n] = next(args, None) if args is not None else self.placeholder(n)
            elif n.op == "get_attr":
                self.env[n] = self.get_attr(n, module, top=args is None)
            elif n.op == "output":
                return self.lookup(n.args[0] if n.args else None)
            else:
                self.call(n, module)
        return None

    def lookup(self, arg: Any) -> Any:
        """The structure of values an argument stands for."""
        if isinstance(arg, Node):
            return self.env.get(arg)
        if isinstance(arg, (list, tuple)):
            return [self.lookup(a) for a in arg]
        if isinstance(arg, dict):
            return {k: self.lookup(a) for k, a in arg.items()}
        return None

    def result_of(self, n: Node) -> Any:
        raw = self.shapes(n) if self.shapes is not None else node_value(n)
        return structure(raw, self.dims, self.device)

    def placeholder(self, n: Node) -> Any:
        role, name = self.roles.get(n.name, ("input", str(n.target)))
        if role == "skip":  # effect tokens, script objects
            return None
        struct = self.result_of(n)
        for sub, v in named_leaves(struct, name):
            v.role, v.name = role, sub if role == "input" else name
            if role == "input":
                self.inputs.append(v)
        return struct

    def get_attr(self, n: Node, module: torch.nn.Module, *, top: bool) -> Any:
        obj = fetch(module, str(n.target))
        if isinstance(obj, torch.Tensor):
            v = structure(obj, self.dims, self.device)
            v.role = self.params.get(str(n.target), "constant") if top else "constant"
            v.name = str(n.target)
            return v
        return obj if isinstance(obj, GraphModule) else None

    def call(self, n: Node, module: torch.nn.Module) -> None:
        is_part, part = picked(n, self.env)
        if is_part:
            self.env[n] = part
            return
        label = str(n.target) if n.op == "call_module" else op_label(n)
        if isinstance(n.target, torch._ops.HigherOrderOperator) and label in INLINE_HOPS:
            for i, a in enumerate(n.args):
                sub = self.env.get(a) if isinstance(a, Node) else None
                if isinstance(sub, GraphModule):
                    self.env[n] = self.graph(sub.graph, sub, [self.lookup(b) for b in n.args[i + 1 :]])
                    return
        struct = self.env[n] = self.result_of(n)
        results = list(leaves(struct))
        if not results:  # asserts, guards, sizes: nothing the eager graph shows
            return
        args = [v for ref in node_refs(n) for v in leaves(self.env.get(ref))]
        entries, root = stack_of(n)
        if root is not None and self.root is None:
            self.root = root
        leaf = None
        if n.op == "call_module":
            if entries and entries[-1].path == n.target:
                leaf = entries.pop()
            else:
                cls = type(fetch(module, str(n.target)))
                leaf = Entry("", str(n.target), cls.__qualname__, cls.__module__)
        created = not args and leaf is None
        if created:
            for v in results:
                v.role = "created"
        self.items.append(Item(label, args, results, entries, leaf, created))
        noop = isinstance(n.target, torch._ops.OpOverload) and label in NOOP_ALIASES and len(results) == 1
        if noop and args and args[0].meta == results[0].meta:
            results[0].alias_of = args[0]
        for m in mutated_args(n, label):
            if isinstance(self.env.get(m), Value):
                self.env[m] = results[0]

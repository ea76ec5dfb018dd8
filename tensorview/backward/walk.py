"""The autograd graph of a tensor as a tensorview ``Graph``: what torchviz's ``make_dot``
draws, as the IR that every view, renderer and the viewer read.

Each autograd node reachable from the outputs' ``grad_fn`` (``AddmmBackward0``,
``AccumulateGrad``, a custom Function's ``MyFnBackward``) becomes a ``FunctionNode`` whose
``op`` is the node's class name.  Between two autograd nodes, the IR's rule (edges join
tensors and ops) puts a tensor: the forward tensor the gradient belongs to, with the shape
autograd keeps for it (``_input_metadata``), drawn hidden like every inner tensor.  Edges
run as torchviz draws them, from the leaves towards the output (the forward direction).

* ``AccumulateGrad`` reads its leaf: a parameter node named from ``params`` (or an input
  when it is not a named parameter);
* saved tensors (``_saved_*`` attributes with ``show_saved``, and always a custom
  Function's ``saved_tensors``, as torchviz shows them) are ``constant`` tensors read by
  their node, with the bytes of their storage in the ``saved_bytes`` layer (the unit of
  ``tv.summary``'s saved-for-backward column, ``cost/memory.py``);
* ``show_attrs``: the other ``_saved_*`` values (``alpha``, ``dim``...) in the ``attrs`` layer.

The walk is iterative (a stack, not recursion), so graphs of any depth work, and it only
reads the autograd graph: nothing runs, also on ``meta`` and fake tensors.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch

from ..cost.memory import storage_nbytes
from ..errors import InvalidTypeError
from ..graph import BACKWARD_LAYER, Graph, ModuleNode, NodeFactory, TensorNode

SAVED_PREFIX = "_saved_"
#: annotation layers the walk fills
SAVED_BYTES = "saved_bytes"
ATTRS = "attrs"


def output_tensors(output: Any) -> list[torch.Tensor]:
    """The tensors of ``output``: one tensor, or a tuple/list of them (as ``make_dot``)."""
    items = list(output) if isinstance(output, (tuple, list)) else [output]
    bad = [o for o in items if not isinstance(o, torch.Tensor)]
    if bad or not items:
        raise InvalidTypeError(
            f"autograd_graph expects a tensor or a tuple/list of tensors, got {type(output).__name__}"
            + (f" holding {type(bad[0]).__name__}" if bad and bad[0] is not output else "")
        )
    return items


def param_names(params: Any) -> dict[int, str]:
    """``{id(tensor): name}`` from a mapping (``dict(model.named_parameters())``) or an
    iterable of ``(name, tensor)`` pairs (``model.named_parameters()``)."""
    if params is None:
        return {}
    pairs: Iterable[Any] = params.items() if isinstance(params, Mapping) else params
    try:
        pairs = list(pairs)
    except TypeError:
        pairs = [params]
    names: dict[int, str] = {}
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[1], torch.Tensor)):
            raise InvalidTypeError(
                f"params must map names to tensors (dict(model.named_parameters())), got an item {pair!r:.80}"
            )
        names[id(pair[1])] = str(pair[0])
    return names


def _post_order(roots: list[Any]) -> list[Any]:
    """The autograd nodes reachable from ``roots``, each after everything it reads."""
    done: set[Any] = set()
    order: list[Any] = []
    for root in roots:
        if root in done:
            continue
        done.add(root)
        stack = [(root, iter(_next(root)))]
        while stack:
            fn, it = stack[-1]
            for u in it:
                if u not in done:
                    done.add(u)
                    stack.append((u, iter(_next(u))))
                    break
            else:
                stack.pop()
                order.append(fn)
    return order


def _next(fn: Any) -> list[Any]:
    return [u for u, _ in getattr(fn, "next_functions", ()) if u is not None]


_SAVED_ATTRS: dict[type, tuple[str, ...]] = {}


def saved_attrs(fn: Any) -> tuple[str, ...]:
    """The ``_saved_*`` attributes of autograd node ``fn`` (found once per node class)."""
    names = _SAVED_ATTRS.get(type(fn))
    if names is None:
        names = _SAVED_ATTRS[type(fn)] = tuple(a for a in dir(type(fn)) if a.startswith(SAVED_PREFIX))
    return names


#: per dtype Python numbers are wrapped as, a narrower dtype of the same kind
_NARROWER = {torch.float64: torch.float16, torch.int64: torch.int8, torch.complex128: torch.complex64}


def wrapped_number(t: torch.Tensor) -> bool:
    """Whether ``t`` is a Python number that autograd saved as a tensor (``x * 0.5``
    saves ``0.5``): stored without ``saved_tensors_hooks``, so not counted in saved bytes.
    Type promotion tells it from a real zero-dimensional tensor: a wrapped number never
    widens a zero-dimensional tensor of its kind, a real one does."""
    narrower = _NARROWER.get(t.dtype)
    if narrower is None or t.dim() or t.device.type != "cpu":
        return False
    return torch.result_type(torch.zeros((), dtype=narrower), t) == narrower


def _saved(fn: Any, show_saved: bool, show_attrs: bool) -> tuple[list[tuple[str, torch.Tensor]], dict[str, Any]]:
    """``([(name, tensor)], {attr: value})``: what ``fn`` saved (tensors only with
    ``show_saved``, a custom Function's ``saved_tensors`` always).  The ``_saved_*``
    attributes are read only when asked for, as torchviz does: reading a saved tensor
    runs its unpack hook, which recomputes a checkpointed block."""
    tensors: list[tuple[str, torch.Tensor]] = []
    attrs: dict[str, Any] = {}
    for attr in saved_attrs(fn) if show_saved or show_attrs else ():
        try:
            val = getattr(fn, attr)
        except RuntimeError:  # freed by a backward already run
            continue
        name = attr[len(SAVED_PREFIX) :]
        if isinstance(val, torch.Tensor):
            tensors.append((name, val))
        elif isinstance(val, tuple) and any(isinstance(t, torch.Tensor) for t in val):
            tensors.extend((f"{name}[{i}]", t) for i, t in enumerate(val) if isinstance(t, torch.Tensor))
        elif val is not None and not name.endswith(("_sym_sizes", "_sym_strides")):
            attrs[name] = val
    if not show_saved:
        tensors = []
    try:
        custom = getattr(fn, "saved_tensors", ())
    except RuntimeError:
        custom = ()
    tensors.extend((f"saved_tensors[{i}]", t) for i, t in enumerate(custom) if isinstance(t, torch.Tensor))
    return tensors, attrs


def _meta(t: torch.Tensor) -> tuple[tuple[int | str, ...], str, str]:
    shape = tuple(d if isinstance(d, int) else str(d) for d in t.shape)
    return shape, str(t.dtype).removeprefix("torch."), str(t.device)


class _Walk:
    def __init__(self, names: dict[int, str], show_attrs: bool, show_saved: bool) -> None:
        self.f = NodeFactory()
        self.root: ModuleNode = self.f.add_module("", "AutogradGraph", "torch.autograd", None)
        self.names = names
        self.show_attrs = show_attrs
        self.show_saved = show_saved
        self.fn_ids: dict[Any, int] = {}
        self.grads: dict[tuple[Any, int], int] = {}
        self.saved_bytes: dict[int, int] = {}
        self.attrs: dict[int, dict[str, Any]] = {}

    def leaf(self, var: torch.Tensor) -> TensorNode:
        shape, dtype, device = _meta(var)
        name = self.names.get(id(var))
        param = name is not None or isinstance(var, torch.nn.Parameter)
        base = (name or "param").replace(".", "_") if param else "leaf"
        t = self.f.add_tensor(
            base, self.root, shape, dtype, device, "parameter" if param else "input", source_name=name
        )
        if not param:
            self.f.add_input(t)
        return t

    def grad_tensor(self, u: Any, k: int) -> int:
        """The tensor between ``u``'s ``k``-th gradient and its readers (made once)."""
        tid = self.grads.get((u, k))
        if tid is None:
            shape: tuple[int | str, ...] = ()
            dtype, device = "float32", "cpu"
            meta = getattr(u, "_input_metadata", ())
            if k < len(meta):
                shape = tuple(int(d) if str(d).isdigit() else str(d) for d in meta[k].shape)
                dtype, device = str(meta[k].dtype).removeprefix("torch."), str(meta[k].device)
            producer = self.f.graph.nodes[self.fn_ids[u]]
            tid = self.f.add_result("_out", self.root, shape, dtype, device, producer).id
            self.grads[(u, k)] = tid
        return tid

    def add(self, fn: Any) -> None:
        inputs: list[int] = []
        var = getattr(fn, "variable", None)
        if isinstance(var, torch.Tensor):
            inputs.append(self.leaf(var).id)
        saved, attrs = _saved(fn, self.show_saved, self.show_attrs)
        for name, t in saved:
            shape, dtype, device = _meta(t)
            s = self.f.add_tensor(name, self.root, shape, dtype, device, "constant", source_name=name)
            if not wrapped_number(t):
                self.saved_bytes[s.id] = storage_nbytes(t)
            inputs.append(s.id)
        inputs.extend(self.grad_tensor(u, k) for u, k in getattr(fn, "next_functions", ()) if u is not None)
        node = self.f.add_function(type(fn).__name__, self.root, inputs)
        self.fn_ids[fn] = node.id
        if self.show_attrs and attrs:
            self.attrs[node.id] = attrs

    def output(self, i: int, t: torch.Tensor, count: int) -> None:
        shape, dtype, device = _meta(t)
        name = "output" if count == 1 else f"output[{i}]"
        fn = t.grad_fn
        if fn is None:  # a leaf (or no grad at all): drawn alone, as torchviz does
            node = self.leaf(t) if t.requires_grad else None
            if node is None:
                node = self.f.add_tensor("output", self.root, shape, dtype, device, "constant")
        else:
            producer = self.f.graph.nodes[self.fn_ids[fn]]
            node = self.f.add_result("_out", self.root, shape, dtype, device, producer)
        self.f.mark_output(node, name, name)


def autograd_ir(output: Any, params: Any = None, *, show_attrs: bool = False, show_saved: bool = False) -> Graph:
    """The autograd graph of ``output`` (a tensor or a tuple/list of tensors) as a ``Graph``
    (see the module docstring); ``params`` names the leaves."""
    outputs = output_tensors(output)
    walk = _Walk(param_names(params), show_attrs, show_saved)
    for fn in _post_order([t.grad_fn for t in outputs if t.grad_fn is not None]):
        walk.add(fn)
    for i, t in enumerate(outputs):
        walk.output(i, t, len(outputs))
    walk.f.end_call(walk.root)
    walk.f.close()
    g = walk.f.graph
    if walk.saved_bytes:
        g.annotations.set(SAVED_BYTES, walk.saved_bytes)
    if walk.attrs:
        g.annotations.set(ATTRS, walk.attrs)
    g.annotations.set(BACKWARD_LAYER, {n.id: "node" for n in g.functions()})
    return g

"""The recording session: all state of one recording, and the hooks that fill it.

Three hooks feed one ``Session``:

* the patched ``nn.Module.__call__`` (``call_module``) makes a ModuleNode per module call,
  wraps the root call's inputs as ``RecorderTensor`` and unwraps its outputs;
* a ``TorchFunctionMode`` pushed for the duration of the root call (``handle``) sees every
  torch function, method and operator in the recording thread: factory functions become
  ``created``/``constant`` tensor nodes, ops touching a recorded tensor or a parameter
  become FunctionNodes;
* ``RecorderTensor.__torch_function__`` forwards to ``handle`` too when the mode is not on
  the stack.

In-place ops are found by the tensor version counter (shared by all views of a storage):
after each op, an argument whose counter moved was mutated, so it gets a new TensorNode
produced by that op ("pop after forward": later consumers connect to the new version).
A tensor whose counter moved through another view gets its new version lazily, from
the last op that mutated its storage, when it is next used.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import threading
from typing import Any, Callable

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from ..graph import SOURCE_ROLES, FunctionNode, Graph, ModuleNode, TensorNode
from .metacache import MISS, key_of, replay, template_of
from .names import op_name
from .tensor import RecorderTensor
from .tree import map_tensors, strip_in_place

#: switches off both our mode and subclass dispatch for our own bookkeeping (property reads
#: such as ``t._version`` would otherwise re-enter the mode)
_Disable = torch._C.DisableTorchFunction
_Tensor = torch.Tensor
_Parameter = nn.Parameter
_RT = RecorderTensor
_PLAIN_TYPES = (torch.Tensor, RecorderTensor, nn.Parameter)

# factory functions: the ones torch.device(...) as a context manager also redirects
try:
    from torch.utils._device import _device_constructors

    _DEVICE_FACTORIES: frozenset[Any] = frozenset(_device_constructors())
except Exception:  # pragma: no cover - older torch
    _DEVICE_FACTORIES = frozenset(
        getattr(torch, n)
        for n in ("zeros", "ones", "full", "empty", "arange", "range", "eye", "linspace", "logspace",
                  "rand", "randn", "randint", "randperm", "tensor", "as_tensor", "scalar_tensor")
        if hasattr(torch, n)
    )
_LIKE_FACTORIES = frozenset(
    f
    for f in (
        torch.zeros_like, torch.ones_like, torch.full_like, torch.empty_like, torch.rand_like,
        torch.randn_like, torch.randint_like,
        _Tensor.new_zeros, _Tensor.new_ones, _Tensor.new_full, _Tensor.new_empty, _Tensor.new_tensor,
    )
)
_CONSTANT_FACTORIES = frozenset(
    getattr(torch, n) for n in ("tensor", "as_tensor", "asarray", "scalar_tensor") if hasattr(torch, n)
) | {_Tensor.new_tensor}
FACTORIES = _DEVICE_FACTORIES | _LIKE_FACTORIES

# queries that never produce or mutate tensors: skipped without looking at arguments
_QUERY_METHODS = (
    "size", "dim", "numel", "stride", "element_size", "is_contiguous", "is_floating_point",
    "is_complex", "data_ptr", "__len__", "__bool__", "__int__", "__float__", "__index__",
    "item", "tolist", "__format__", "__repr__", "__hash__", "storage_offset", "get_device",
    "nelement", "ndimension", "__contains__", "__reduce_ex__", "__deepcopy__",
    "untyped_storage", "is_set_to", "is_inference", "__array__", "numpy", "__str__",
)
_QUERY_PROPERTIES = (
    "shape", "ndim", "dtype", "device", "is_cuda", "is_sparse", "requires_grad", "is_leaf",
    "layout", "_version", "_base", "grad_fn", "is_meta", "is_quantized", "is_nested", "grad",
    "names", "is_mps", "is_cpu", "itemsize", "nbytes", "_cdata",
)
_QUERIES = frozenset(
    [getattr(_Tensor, n) for n in _QUERY_METHODS if hasattr(_Tensor, n)]
    + [getattr(_Tensor, n).__get__ for n in _QUERY_PROPERTIES if hasattr(getattr(_Tensor, n, None), "__get__")]
)

#: attributes every nn.Module has (hooks, parameter dicts...): never holds recorded tensors
_MODULE_ATTRS = frozenset(nn.Module().__dict__)

_TENSOR_ITER = _Tensor.__iter__
#: queries whose answer mentions the tensor's type (``RecorderTensor(0)``): asked of a plain alias
_AS_PLAIN = frozenset(getattr(_Tensor, n) for n in ("__format__", "__repr__", "__str__") if hasattr(_Tensor, n))

_DTYPE_NAMES: dict[Any, str] = {}
_DEVICE_NAMES: dict[Any, str] = {}


def _dtype_name(dt: Any) -> str:
    s = _DTYPE_NAMES.get(dt)
    if s is None:
        s = _DTYPE_NAMES[dt] = str(dt).replace("torch.", "")
    return s


def _device_name(dev: Any) -> str:
    s = _DEVICE_NAMES.get(dev)
    if s is None:
        s = _DEVICE_NAMES[dev] = str(dev)
    return s


def _version(t: torch.Tensor) -> int:
    try:
        return t._version
    except RuntimeError:  # inference tensors keep no version counter
        return -1


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    try:
        return tuple(t.shape)
    except RuntimeError:  # nested tensors have no single shape
        return ()


def _recorded_alias(t: torch.Tensor, node: TensorNode) -> RecorderTensor:
    """A RecorderTensor sharing ``t``'s storage, version counter and autograd history,
    bound to ``node``."""
    r = t.as_subclass(_RT)
    r._tv_node = node
    r._tv_ver = _version(r)
    return r


def _storage_key(t: torch.Tensor) -> torch.Tensor:
    """The tensor that owns the storage of ``t`` (torch collapses view chains)."""
    b = t._base
    return t if b is None else b


class _Mode(TorchFunctionMode):
    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return self.session.handle(func, types, args, kwargs or {})


@dataclasses.dataclass
class _Frame:
    module: nn.Module
    node: ModuleNode


class Session:
    """All state of one recording of one model (one object, no globals)."""

    def __init__(self, model: nn.Module, *, device: Any = None, meta_replay: bool = True) -> None:
        self.model = model
        #: (op, argument metadata) -> how to replay its results on meta (see metacache.py)
        self.meta_cache: dict[Any, Any] | None = {} if meta_replay else None
        self.meta_hits = 0
        self.device = torch.device(device) if device is not None else None
        self.graph = Graph()
        self.thread = threading.get_ident()
        self.running = False  # inside the root call
        self.done = False  # the root call has finished (later calls run unrecorded)
        self.stack: list[_Frame] = []
        self.failure: tuple[str, str] | None = None  # (module path, op) where the forward raised
        self.module_names: dict[int, str] = {}
        self.param_names: dict[int, tuple[str, str]] = {}
        for name, m in model.named_modules(remove_duplicate=False):
            self.module_names.setdefault(id(m), name)
        for name, p in model.named_parameters(remove_duplicate=False):
            self.param_names.setdefault(id(p), (name, "parameter"))
        for name, b in model.named_buffers(remove_duplicate=False):
            self.param_names.setdefault(id(b), (name, "buffer"))
        self.call_counts: dict[str, int] = {}
        # tensors that are not RecorderTensors but have nodes: id -> [tensor, node, version]
        # (parameters, buffers, constants, foreign subclasses); the strong reference keeps
        # the id valid for the session's life only
        self.sources: dict[int, list[Any]] = {}
        # last op that mutated a storage: id(storage owner) -> (owner, function node id)
        self.mutations: dict[int, tuple[torch.Tensor, int]] = {}
        self._mode = _Mode(self)

    # -- node helpers ---------------------------------------------------------------
    def _scope(self) -> ModuleNode:
        return self.stack[-1].node

    def _new_tensor(
        self, t: torch.Tensor, base: str, role: str, scope: ModuleNode,
        copy_of: int | None = None, source_name: str | None = None,
    ) -> TensorNode:
        g = self.graph
        node = TensorNode(
            g.next_id, g.names(base), scope.path, scope.id, scope.depth + 1,
            _shape(t), _dtype_name(t.dtype), _device_name(t.device), role, copy_of, source_name,
        )
        g.nodes.append(node)
        return node

    def _bind(self, t: torch.Tensor, node: TensorNode) -> torch.Tensor:
        """Return a RecorderTensor for ``t`` bound to ``node`` (``t`` itself if possible)."""
        if type(t) is _RT:
            t._tv_node = node
            t._tv_ver = _version(t)
            return t
        if type(t) is _Tensor and t.layout == torch.strided:
            return _recorded_alias(t, node)
        # parameters, sparse or other subclasses: keep the object, track it on the side
        self.sources[id(t)] = [t, node, _version(t)]
        return t

    def node_of(self, t: torch.Tensor) -> TensorNode:
        """The current node of any tensor met during the forward (creating source nodes)."""
        if type(t) is _RT:
            node = t.__dict__.get("_tv_node")
            if node is None:  # a RecorderTensor we did not make (deepcopy, _make_subclass)
                node = self._new_tensor(t, "constant", "constant", self._scope())
                t._tv_node, t._tv_ver = node, _version(t)
            elif t._tv_ver != _version(t):
                node = self._after_foreign_mutation(t, node)
                t._tv_node, t._tv_ver = node, _version(t)
            return node
        entry = self.sources.get(id(t))
        if entry is not None:
            node = entry[1]
            v = _version(t)
            if entry[2] != v:
                node = entry[1] = self._after_foreign_mutation(t, node)
                entry[2] = v
            return node
        name_role = self.param_names.get(id(t))
        scope = self._scope()
        if name_role is not None:
            qual, role = name_role
            node = self._new_tensor(t, qual.replace(".", "_"), role, scope, source_name=qual)
        else:
            node = self._new_tensor(t, "constant", "constant", scope)
        self.sources[id(t)] = [t, node, _version(t)]
        return node

    def _after_foreign_mutation(self, t: torch.Tensor, node: TensorNode) -> TensorNode:
        """``t`` changed through another view: a new version produced by the op that did it."""
        hit = self.mutations.get(id(_storage_key(t)))
        if hit is None:  # mutated where we could not see (inside an opaque module): keep the node
            return node
        fn = self.graph.nodes[hit[1]]
        scope = self.graph.nodes[fn.parent] if fn.parent is not None else self._scope()
        new = self._new_tensor(t, fn.name + "_out", "intermediate", scope)  # type: ignore[arg-type]
        self.graph.edges.append((fn.id, new.id))
        return new

    # -- torch functions ------------------------------------------------------------------
    def handle(self, func: Any, types: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if threading.get_ident() != self.thread or not self.running:
            with torch._C.DisableTorchFunctionSubclass():  # behave as a plain tensor
                return func(*args, **kwargs)
        if func in _QUERIES:
            with _Disable():
                if func in _AS_PLAIN and type(args[0]) is _RT:  # f"{t}", repr(t): as without us
                    args = (args[0].as_subclass(_Tensor), *args[1:])
                return func(*args, **kwargs)
        if func is _TENSOR_ITER:  # ``for row in x``: the rows are recorded, as unbind's results
            return iter(self._op(_Tensor.unbind, (args[0], 0), {}))
        if func in FACTORIES and not (
            func in _DEVICE_FACTORIES and args and isinstance(args[0], _Tensor)
        ):  # torch.as_tensor(t) of a tensor is an op on t, not a new source
            with _Disable():
                return self._factory(func, args, kwargs)
        return self._op(func, args, kwargs)

    def _factory(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.device is not None and func in _DEVICE_FACTORIES and kwargs.get("device") is None:
            kwargs = dict(kwargs, device=self.device)
        out = func(*args, **kwargs)
        if not isinstance(out, _Tensor):
            return out
        role = "constant" if func in _CONSTANT_FACTORIES else "created"
        node = self._new_tensor(out, op_name(func), role, self._scope())
        return self._bind(out, node)

    def _op(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # the tensor arguments, looking one level into lists/tuples (cat, stack, einsum...)
        ins: list[torch.Tensor] = []
        recorded = False
        foreign = False
        sources = self.sources
        params = self.param_names
        for a in (*args, *kwargs.values()) if kwargs else args:
            ta = type(a)
            for b in a if ta is list or ta is tuple else (a,):
                tb = type(b)
                if tb is _RT:
                    ins.append(b)
                    recorded = True
                elif isinstance(b, _Tensor):
                    ins.append(b)
                    if id(b) in sources or id(b) in params:
                        recorded = True
                    if tb not in _PLAIN_TYPES:
                        foreign = True
        if not recorded:
            return func(*args, **kwargs)

        with _Disable():
            g = self.graph
            scope = self._scope()
            in_nodes = [self.node_of(t) for t in ins]
            fn = FunctionNode(g.next_id, "", scope.path, scope.id, scope.depth + 1, op_name(func))
            fn.name = g.names(fn.op)
            g.nodes.append(fn)
            edges = g.edges
            fid = fn.id
            for n in in_nodes:
                edges.append((n.id, fid))
        try:
            if foreign:
                out = self._call_foreign(func, args, kwargs)
            elif self.meta_cache is None:
                with _Disable():
                    out = func(*args, **kwargs)
            else:
                out = self._call_meta_cached(func, args, kwargs, ins)
        except BaseException:
            fn.failed = True
            if self.failure is None:
                self.failure = (scope.path, fn.name)
            raise
        with _Disable():
            return self._after_op(out, fn, ins, in_nodes, scope)

    def _call_meta_cached(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], ins: list[torch.Tensor]) -> Any:
        cache = self.meta_cache
        assert cache is not None
        with _Disable():
            key = key_of(func, args, kwargs)
            if key is None:
                return func(*args, **kwargs)
            template = cache.get(key)
            if template is not None and template is not MISS:
                self.meta_hits += 1
                return replay(template, ins)
            if template is MISS:
                return func(*args, **kwargs)
            before = [_version(t) for t in ins]
            out = func(*args, **kwargs)
            cache[key] = template_of(out, ins, before)
            return out

    def _after_op(self, out: Any, fn: FunctionNode, ins: list[torch.Tensor], in_nodes: list[TensorNode], scope: ModuleNode) -> Any:
        sources = self.sources
        edges = self.graph.edges
        fid = fn.id
        # in-place: an argument whose version counter moved was mutated by this op
        mutated: dict[int, TensorNode] = {}
        for t, n in zip(ins, in_nodes):
            if id(t) in mutated:
                continue
            v = _version(t)
            old_v = t._tv_ver if type(t) is _RT else sources[id(t)][2]
            if v != old_v and v != -1:
                new = self._new_tensor(t, fn.name + "_out", "intermediate", scope)
                edges.append((fid, new.id))
                if type(t) is _RT:
                    t._tv_node, t._tv_ver = new, v
                else:
                    sources[id(t)] = [t, new, v]
                mutated[id(t)] = new
                key = _storage_key(t)
                self.mutations[id(key)] = (key, fid)
        return self._wrap_outputs(out, fn, ins, mutated)

    def _call_foreign(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call with other tensor subclasses present: let their ``__torch_function__`` run,
        with our own tensors handed over as plain aliases (so we are not asked again)."""
        back: dict[int, torch.Tensor] = {}

        def plain(t: torch.Tensor) -> torch.Tensor:
            if type(t) is _RT:
                p = t.as_subclass(_Tensor)
                back[id(p)] = t
                return p
            return t

        with _Disable():
            args2 = tuple(map_tensors(a, plain) for a in args)
            kwargs2 = {k: map_tensors(v, plain) for k, v in kwargs.items()}
        out = func(*args2, **kwargs2)
        def ours_again(t: torch.Tensor) -> torch.Tensor:
            r = back.get(id(t))
            return t if r is None else r

        return map_tensors(out, ours_again)

    def _wrap_outputs(self, out: Any, fn: FunctionNode, ins: list[torch.Tensor], mutated: dict[int, TensorNode]) -> Any:
        if isinstance(out, _Tensor):
            return self._wrap_one(out, fn, 0, ins, mutated)
        index = itertools.count()  # split, chunk, max(dim=...): one result node each, in order
        return map_tensors(out, lambda o: self._wrap_one(o, fn, next(index), ins, mutated))

    def _wrap_one(self, o: torch.Tensor, fn: FunctionNode, i: int, ins: list[torch.Tensor], mutated: dict[int, TensorNode]) -> torch.Tensor:
        if id(o) in mutated:  # in-place op returning its argument: the new version
            return o
        for t in ins:
            if o is t:  # op returned an argument unchanged (``x.contiguous()``): a fresh alias
                if type(o) in _PLAIN_TYPES and o.layout == torch.strided:
                    o = o.as_subclass(_Tensor)
                break
        node = self._new_tensor(o, fn.name + "_out" if i == 0 else f"{fn.name}_out{i}", "intermediate", self._scope())
        self.graph.edges.append((fn.id, node.id))
        return self._bind(o, node)

    # -- module calls ---------------------------------------------------------------------
    def call_module(self, call: Callable[..., Any], module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if threading.get_ident() != self.thread:
            return call(module, *args, **kwargs)
        if not self.stack:
            if module is not self.model or self.done:
                return call(module, *args, **kwargs)
            return self._root_call(call, module, args, kwargs)
        return self._sub_call(call, module, args, kwargs)

    def _module_path(self, module: nn.Module) -> str:
        name = self.module_names.get(id(module))
        if name is not None:
            return name
        # not registered (kept in a plain list/dict, or made in forward): find it in the caller
        parent = self.stack[-1]
        prefix = parent.node.path + "." if parent.node.path else ""
        for attr, value in vars(parent.module).items():
            if value is module:
                name = prefix + attr
            elif isinstance(value, (list, tuple)):
                for i, v in enumerate(value):
                    if v is module:
                        name = f"{prefix}{attr}.{i}"
            elif isinstance(value, dict):
                for k, v in value.items():
                    if v is module:
                        name = f"{prefix}{attr}.{k}"
            if name is not None:
                break
        if name is None:
            name = prefix + type(module).__name__
        self.module_names[id(module)] = name
        return name

    def _new_module(self, module: nn.Module, path: str, parent: ModuleNode | None) -> ModuleNode:
        g = self.graph
        k = self.call_counts.get(path, 0)
        self.call_counts[path] = k + 1
        base = path.replace(".", "_") if path else "model"
        cls = type(module)
        node = ModuleNode(
            g.next_id, g.names(base), path,
            None if parent is None else parent.id, 0 if parent is None else parent.depth + 1,
            cls.__name__, cls.__module__, k,
        )
        g.nodes.append(node)
        return node

    def _sub_call(self, call: Callable[..., Any], module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        path = self._module_path(module)
        with _Disable():
            m = self._new_module(module, path, self._scope())
            args, kwargs = self._enter_args(m, args, kwargs)
        self.stack.append(_Frame(module, m))
        try:
            out = call(module, *args, **kwargs)
        except BaseException:
            m.failed = True
            m.end = self.graph.next_id
            if self.failure is None:
                self.failure = (path, "")
            raise
        finally:
            self.stack.pop()
        with _Disable():
            return self._leave(m, out)

    def _enter_args(self, m: ModuleNode, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Edges from every tensor argument into the module call; tensors not recorded yet
        (parameters, buffers, constants) become source nodes and enter as RecorderTensors."""
        edges = self.graph.edges

        def enter(t: torch.Tensor) -> torch.Tensor:
            node = self.node_of(t)
            edges.append((node.id, m.id))
            if type(t) is _RT or type(t) not in (_Tensor, _Parameter) or t.layout != torch.strided:
                return t
            return _recorded_alias(t, node)

        args = tuple(map_tensors(a, enter) for a in args)
        if kwargs:
            kwargs = {k: map_tensors(v, enter) for k, v in kwargs.items()}
        return args, kwargs

    def _leave(self, m: ModuleNode, out: Any) -> Any:
        g = self.graph
        m.end = g.next_id
        m.opaque = m.end == m.id + 1
        parent = self.graph.nodes[m.parent] if m.parent is not None else m
        edges = g.edges

        def result(t: torch.Tensor) -> torch.Tensor:
            if type(t) is _RT or id(t) in self.sources:
                node = self.node_of(t)
                if m.id < node.id < m.end and node.role not in SOURCE_ROLES:  # produced inside the call
                    edges.append((m.id, node.id))
                    return t
                # passed through unchanged: an alias node standing for the outer tensor
                alias = self._new_tensor(t, m.name + "_out", "intermediate", parent, copy_of=node.id)  # type: ignore[arg-type]
                edges.append((m.id, alias.id))
                plain = t.as_subclass(_Tensor) if type(t) is _RT else t
                if type(plain) is _Tensor and plain.layout == torch.strided:
                    return _recorded_alias(plain, alias)
                return t
            # a tensor we never saw: made where we could not look (scripted/C++ module)
            node = self._new_tensor(t, m.name + "_out", "intermediate", parent)  # type: ignore[arg-type]
            edges.append((m.id, node.id))
            return self._bind(t, node)

        return map_tensors(out, result)

    def _root_call(self, call: Callable[..., Any], module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        g = self.graph
        first = next(iter(_flat_tensors((args, kwargs))), None)
        if self.device is None and first is not None and first.device.type != "cpu":
            self.device = first.device
        on_meta = (first is not None and first.is_meta) or (self.device is not None and self.device.type == "meta")
        if not on_meta:
            self.meta_cache = None  # replay is for meta only: keep it off the hot path elsewhere
        with _Disable():
            root = self._new_module(module, "", None)
            g.root = root.id
        self.stack.append(_Frame(module, root))
        self.running = True
        self._mode.__enter__()
        try:
            with _Disable():
                args, kwargs = self._wrap_inputs(module, args, kwargs)
            out = call(module, *args, **kwargs)
            with _Disable():
                out = self._leave(root, out)
                out = self._unwrap_outputs(out)
            # an op or call that raised but was caught inside forward stays marked failed,
            # but the forward as a whole succeeded
            self.failure = None
        except BaseException:
            root.failed = True
            if self.failure is None:
                self.failure = ("", "")
            if root.end < 0:
                root.end = g.next_id
            raise
        finally:
            self._mode.__exit__(None, None, None)
            with _Disable():
                self._strip_escaped(module, args, kwargs)
            self.running = False
            self.done = True
            self.stack.clear()
            self.sources.clear()
            self.mutations.clear()
        return out

    def _strip_escaped(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """No RecorderTensor may outlive the recording: not in a cache object the caller
        passed in and the model updated, nor in an attribute the forward stored on a module."""

        def is_ours(t: Any) -> bool:
            return type(t) is _RT

        def plain(t: torch.Tensor) -> torch.Tensor:
            return t.as_subclass(_Tensor)

        strip_in_place((args, kwargs), is_ours, plain)
        for m in module.modules():
            d = m.__dict__
            for k in d.keys() - _MODULE_ATTRS:  # only what the model itself stored
                v = d[k]
                if isinstance(v, (_Tensor, list, tuple, dict)):
                    d[k] = strip_in_place(v, is_ours, plain, objects=False)

    def _wrap_inputs(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        try:
            bound = inspect.signature(module.forward).bind_partial(*args, **kwargs)
            names = list(bound.arguments)
            values = list(bound.arguments.values())
            kinds = {p.name: p.kind for p in inspect.signature(module.forward).parameters.values()}
        except (TypeError, ValueError):
            bound = None
        root = self._scope()
        g = self.graph

        def wrap_under(prefix: str) -> Callable[[torch.Tensor, str], torch.Tensor]:
            def wrap(t: torch.Tensor, sub: str) -> torch.Tensor:
                name = prefix + ("_" + sub if sub else "")
                node = self._new_tensor(t, name, "input", root, source_name=name)
                g.inputs.append(node.id)
                g.edges.append((node.id, root.id))
                return self._bind(t, node)

            return wrap

        if bound is None:
            args = tuple(map_tensors(a, wrap_under(f"input_{i}"), with_path=True) for i, a in enumerate(args))
            kwargs = {k: map_tensors(v, wrap_under(k), with_path=True) for k, v in kwargs.items()}
            return args, kwargs
        new_args: list[Any] = []
        new_kwargs: dict[str, Any] = {}
        for name, value in zip(names, values):
            kind = kinds.get(name)
            if kind == inspect.Parameter.VAR_POSITIONAL:
                new_args.extend(map_tensors(v, wrap_under(f"{name}_{i}"), with_path=True) for i, v in enumerate(value))
            elif kind == inspect.Parameter.VAR_KEYWORD:
                for k, v in value.items():
                    new_kwargs[k] = map_tensors(v, wrap_under(k), with_path=True)
            elif kind == inspect.Parameter.KEYWORD_ONLY or name in kwargs:
                new_kwargs[name] = map_tensors(value, wrap_under(name), with_path=True)
            else:
                new_args.append(map_tensors(value, wrap_under(name), with_path=True))
        return tuple(new_args), new_kwargs

    def _unwrap_outputs(self, out: Any) -> Any:
        g = self.graph

        def unwrap(t: torch.Tensor) -> torch.Tensor:
            node = self.node_of(t)
            if node.role == "intermediate":
                node.role = "output"
            if node.id not in g.outputs:
                g.outputs.append(node.id)
            return t.as_subclass(_Tensor) if type(t) is _RT else t

        out = map_tensors(out, unwrap)
        strip_in_place(out, lambda t: type(t) is _RT, unwrap)  # e.g. a KV cache object returned
        return out


def _flat_tensors(obj: Any) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []

    def visit(t: torch.Tensor) -> torch.Tensor:
        found.append(t)
        return t

    map_tensors(obj, visit)
    return found

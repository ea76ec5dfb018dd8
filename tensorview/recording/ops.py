"""Per-op recording: every torch function, method and operator the forward calls.

Factory functions become ``created``/``constant`` tensor nodes; ops touching a recorded
tensor or a parameter become FunctionNodes, and their results new versions of the tensors
they wrote (bindings.py).
"""

from __future__ import annotations

import itertools
import threading
from typing import TYPE_CHECKING, Any

import torch

from ..graph import FunctionNode, ModuleNode, NodeFactory, TensorNode
from .control import FACTORY, HANDLERS, QUERY, ROUTES, SPECIAL
from .inference import InferenceWrites
from .keep import KeptParameters
from .names import OP_NAMES, op_name
from .opcalls import OpRunner
from .optable import (
    AS_PLAIN,
    CONSTANT_FACTORIES,
    DATA_SET,
    DEVICE_FACTORIES,
    PLAIN_TYPES,
    version,
)
from .probes import Probes
from .state import Settings, recorded_alias
from .tensor import RecorderTensor, alias_as, owned, unchanged_by
from .transforms import active
from .tree import map_tensors
from .values import VALUE_QUERIES, answer, follow, value_of

if TYPE_CHECKING:
    from .session import Session

#: switches off both our mode and subclass dispatch for our own bookkeeping (property reads
#: such as ``t._version`` would otherwise re-enter the mode)
_Disable = torch._C.DisableTorchFunction
_Tensor = torch.Tensor
_RT = RecorderTensor
_seq = torch._C._autograd._get_sequence_nr
_grad_on = torch.is_grad_enabled
_STRIDED = torch.strided


class Ops:
    """Records every torch function call of the forward (the TorchFunctionMode's handler)."""

    _seq0 = 0  #: autograd's node counter when the op being recorded started (tensor.py: ``made_by_op``)

    def __init__(
        self,
        settings: Settings,
        builder: NodeFactory,
        probes: Probes | None,
        kept: KeptParameters | None,
        mode: Any,
        token: object,
    ) -> None:
        self.builder = builder
        self.graph = builder.graph
        self.probes = probes
        self.kept = kept
        #: the session's TorchFunctionMode (``torch.cond`` runs a branch under it: control.py)
        self.mode = mode
        self.token = token
        self.thread = threading.get_ident()
        self.running = False  # inside the root call
        self.device = torch.device(settings.device) if settings.device is not None else None
        #: inputs moved to meta came with their values (values.py): follow them
        self.values = False
        #: writes per storage, once the recording meets inference tensors (inference.py)
        self.writes: InferenceWrites | None = None
        self.runner = OpRunner(probes, settings.meta_replay, self.set_running)
        #: ``runner.call_meta_cached`` while replay is on (meta only), else None
        self._meta: Any = None

    def connect(self, session: Session) -> None:
        """The collaborators an op talks to, their methods bound once (the hot path)."""
        bindings, calls, originals = session.bindings, session.calls, session.originals
        methods, crossings, transforms = session.methods, session.crossings, session.transforms
        self.runner.connect(session.failure)
        self._stack = calls.frames()
        self._scope = calls.scope
        self._sync = methods.sync_methods
        self._read = crossings.read
        self._sources, self._params = bindings.tables()
        self._seen_by_transform = transforms.seen_by_transform
        self._new_tensor = bindings.new_tensor
        self._new_result = bindings.new_result
        self._bind = bindings.bind
        self._written_by = bindings.written_by
        self._stands_for = originals.stands_for
        self._link_data = bindings.link_data
        self._rebind = bindings.rebind
        self._add_function = self.builder.add_function

    # -- the state of the recording ----------------------------------------------------------
    def start(self, first: torch.Tensor | None) -> bool:
        """The root call starts with ``first`` its first tensor input: ops are recorded from
        now; whether the recording is on meta."""
        if self.device is None and first is not None and first.device.type != "cpu":
            self.device = first.device
        on_meta = (first is not None and first.is_meta) or (self.device is not None and self.device.type == "meta")
        if not on_meta:
            self.runner.meta_off()  # replay is for meta only: keep it off the hot path elsewhere
        self._meta = self.runner.call_meta_cached if self.runner.replaying() else None
        return on_meta

    def set_running(self, running: bool) -> None:
        self.running = running

    def is_running(self) -> bool:
        return self.running

    def replayed(self) -> int:
        """How many ops meta replay answered."""
        return self.runner.hits()

    def follow_values(self) -> None:
        """Inputs came with values known on meta: follow them through the ops."""
        self.values = True

    def inference(self) -> bool:
        """Inference tensors were met: writes are counted (inference.py)."""
        return self.writes is not None

    def inference_writes(self, create: bool = True) -> InferenceWrites | None:
        """The write counts of inference tensors (made on first use with ``create``)."""
        if self.writes is None and create:
            self.writes = InferenceWrites()
        return self.writes

    def close(self) -> None:
        self.running = False
        self.runner.close()
        if self.writes is not None:
            self.writes.close()
            self.writes = None

    def handle(self, func: Any, types: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Every torch function call of the forward comes here (mode and subclass hook)."""
        if threading.get_ident() != self.thread or not self.running:
            with torch._C.DisableTorchFunctionSubclass():  # behave as a plain tensor
                return func(*args, **kwargs)
        route = ROUTES.get(func)  # (one look-up for the three kinds of functions not recorded as ops)
        if route is QUERY:
            if self.values and func in VALUE_QUERIES and value_of(args[0]) is not None:
                return answer(func, args, kwargs)  # a value known on meta (values.py)
            with _Disable():
                if func in AS_PLAIN and type(args[0]) is _RT:  # f"{t}", repr(t): as without us
                    args = (args[0].as_subclass(_Tensor), *args[1:])
                return func(*args, **kwargs)
        if route is SPECIAL:  # ``for row in x``, ``torch.cond``, ``p.data``: as what they stand for (control.py)
            return HANDLERS[func](self, func, args, kwargs)
        if route is FACTORY and not (
            func in DEVICE_FACTORIES and args and isinstance(args[0], _Tensor)
        ):  # torch.as_tensor(t) of a tensor is an op on t, not a new source
            with _Disable():
                out = self._factory(func, args, kwargs)  # (on meta, small ones get values: values.py)
                return follow(func, args, kwargs, out) if self.values else out
        self._seq0 = _seq()
        if self.values:  # values known on meta: follow them through the op (values.py)
            return follow(func, args, kwargs, self._op(func, args, kwargs))
        return self._op(func, args, kwargs)

    # -- calls --------------------------------------------------------------------------------
    def _factory(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not self._stack[-1].leaf:
            self._sync()
        if self.device is not None and func in DEVICE_FACTORIES and kwargs.get("device") is None:
            kwargs = dict(kwargs, device=self.device)
        out = func(*args, **kwargs)
        if not isinstance(out, _Tensor):
            return out
        role = "constant" if func in CONSTANT_FACTORIES else "created"
        node = self._new_tensor(out, op_name(func), role, self._scope())
        return self._bind(out, node)

    def _op(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        token = self.token
        foreign = False
        ins: list[torch.Tensor]
        if not kwargs and len(args) == 1 and type(args[0]) is _RT and args[0]._tv_tok is token:
            ins = [args[0]]  # the fast path: one tensor of ours, nothing else (x.relu(), x.t())
        else:  # the tensor arguments, looking one level into lists/tuples (cat, stack, einsum...)
            ins = []
            recorded = False
            stale = False
            sources = self._sources
            params = self._params
            for a in (*args, *kwargs.values()) if kwargs else args:
                ta = type(a)
                for b in a if ta is list or ta is tuple else (a,):
                    tb = type(b)
                    if tb is _RT and b._tv_tok is token:
                        ins.append(b)
                        recorded = True
                    elif isinstance(b, _Tensor):
                        ins.append(b)
                        if id(b) in sources or id(b) in params or (tb is _Tensor and self._seen_by_transform(b)):
                            recorded = True
                        if tb is _RT:
                            stale = True
                        elif tb not in PLAIN_TYPES:
                            foreign = True
            if not recorded:
                if stale:  # a RecorderTensor of an earlier recording: as a plain tensor
                    with torch._C.DisableTorchFunctionSubclass():
                        return func(*args, **kwargs)
                return func(*args, **kwargs)
        if self.kept is not None:  # draw_graph, summary: the caller's parameters are put back
            self.kept.before(func, ins, kwargs, args)

        with _Disable():
            stack = self._stack
            top = stack[-1]
            if not top.leaf:  # (here: methods.py reads the caller's frame at a fixed depth)
                self._sync()
                top = stack[-1]
            scope = top.node
            fn = self._add_function(OP_NAMES.get(func) or op_name(func), scope, self._read(ins, top))
            if not (foreign or self.writes is not None):
                # the common case: nothing around the op but probes (as ``runner.around``) and meta replay
                probes, meta = self.probes, self._meta
                call = probes.substitute(func) if probes is not None and probes.substitutes else func
                try:
                    if meta is not None:
                        out = meta(call, args, kwargs, ins, fn)
                    else:
                        out = func(*args, **kwargs) if probes is None else self.runner.run(call, args, kwargs, None, fn)
                except BaseException as e:
                    out = self.runner.refused(e, call, args, kwargs, fn, scope)
                return self._after_op(out, fn, ins, scope, func)
        out = self.runner.around(func, args, kwargs, ins, foreign, fn, scope, self.writes, self._meta)
        with _Disable():
            return self._after_op(out, fn, ins, scope, func)

    # -- results ------------------------------------------------------------------------------
    def _after_op(self, out: Any, fn: FunctionNode, ins: list[torch.Tensor], scope: ModuleNode, func: Any) -> Any:
        token = self.token
        fresh = type(out) is _Tensor and out.layout is _STRIDED
        if fresh and unchanged_by(ins, out, token, self._sources) and not active():
            # the common case: one fresh result, no argument written
            since = self._seq0 if _grad_on() else owned(out, func)  # (the result itself if the op's own)
            return recorded_alias(out, self._new_result(out, scope, fn), token, since)
        # in-place: an argument whose version counter moved was mutated by this op
        mutated = self._written_by(fn, ins, scope)
        if isinstance(out, _Tensor):
            return self._wrap_one(out, fn, 0, ins, mutated)
        index = itertools.count()  # split, chunk, max(dim=...): one result node each, in order
        return map_tensors(out, lambda o: self._wrap_one(o, fn, next(index), ins, mutated))

    def _wrap_one(
        self, o: torch.Tensor, fn: FunctionNode, i: int, ins: list[torch.Tensor], mutated: dict[int, TensorNode]
    ) -> torch.Tensor:
        if id(o) in mutated:  # in-place op returning its argument: the new version
            return o
        node = self._new_result(o, self._scope(), fn, f"_out{i}" if i else "_out")
        for t in ins:
            if o is t and type(o) is _RT and o._tv_tok is self.token and o.is_leaf and o.requires_grad:
                # one of ours made a leaf (``x.detach().requires_grad_()``, in ``nn.Parameter(x)``):
                # the object itself, now this node (an alias would be no leaf, and get no grad)
                o._tv_node, o._tv_ver = node, version(o)
                return o
            if o is t:  # op returned an argument unchanged (``x.contiguous()``): a fresh alias
                if type(o) in PLAIN_TYPES and o.layout == torch.strided:
                    o = alias_as(o, _Tensor)
                return self._stands_for(self._bind(o, node), t)
        return self._bind(o, node, self._seq0 if _grad_on() else None)

    # -- ``p.data`` -----------------------------------------------------------------------------
    def data_access(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``p.data`` (``func`` is its getter) or ``p.data = x`` (its setter), recorded as
        an op ``data``.  The alias ``p.data`` has a version counter of its own, and the
        setter replaces ``p``'s contents without moving ``p``'s: both are noted as links
        (bindings.py), so that a write through the alias (``p.data.mul_(m)``: an EMA
        teacher) or the setter gives ``p`` a new version, and later reads of ``p`` see it."""
        p = args[0] if args else None
        setter = func == DATA_SET
        if setter and self.kept is not None and isinstance(p, _Tensor):
            self.kept.save(p)  # its contents are replaced: put back after the forward
        first = len(self.graph.nodes)
        out = self._op(func, args, kwargs)
        with _Disable():
            nodes = self.graph.nodes
            fn = next((n for n in nodes[first:] if type(n) is FunctionNode), None)
            if fn is None or not isinstance(p, _Tensor):  # nothing recorded: no recorded tensor
                return out
            scope = self.graph.module(fn.parent) if fn.parent is not None else self._scope()
            alias = out if not setter else args[1] if len(args) > 1 else None
            if isinstance(alias, _Tensor):
                self._link_data(alias, p)
            if setter:
                self._rebind(p, self._new_result(p, scope, fn), fn, scope)
        return out

"""Per-op recording: every torch function, method and operator the forward calls.

Factory functions become ``created``/``constant`` tensor nodes; ops touching a recorded
tensor or a parameter become FunctionNodes.  In-place ops are found by the tensor version
counter (shared by all views of a storage): after each op, an argument whose counter
moved was mutated, so it gets a new TensorNode produced by that op ("pop after
forward": later consumers connect to the new version).  A tensor whose counter moved
through another view gets its new version lazily, from the last op that mutated its
storage, when it is next used.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import torch

from ..graph import FunctionNode, ModuleNode, TensorNode
from .control import SPECIAL, unseen_change
from .names import OP_NAMES, op_name
from .optable import (
    AS_PLAIN,
    CONSTANT_FACTORIES,
    DEVICE_FACTORIES,
    FACTORIES,
    PLAIN_TYPES,
    QUERIES,
    storage_key,
    version,
)
from .state import Frame, recorded_alias
from .tensor import RecorderTensor, alias_as, unchanged_by
from .transforms import FuncTransforms, active, wrapped
from .tree import map_tensors
from .values import VALUE_QUERIES, answer, follow, value_of

#: switches off both our mode and subclass dispatch for our own bookkeeping (property reads
#: such as ``t._version`` would otherwise re-enter the mode)
_Disable = torch._C.DisableTorchFunction
_Tensor = torch.Tensor
_RT = RecorderTensor
_seq = torch._C._autograd._get_sequence_nr
_grad_on = torch.is_grad_enabled
_STRIDED = torch.strided


class OpRecorder(FuncTransforms):
    #: autograd's node counter when the op being recorded started (tensor.py: ``made_by_op``)
    _seq0 = 0

    def handle(self, func: Any, types: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Every torch function call of the forward comes here (mode and subclass hook)."""
        if threading.get_ident() != self.thread or not self.running:
            with torch._C.DisableTorchFunctionSubclass():  # behave as a plain tensor
                return func(*args, **kwargs)
        if func in QUERIES:
            if self.values and func in VALUE_QUERIES and value_of(args[0]) is not None:
                return answer(func, args, kwargs)  # a value known on meta (values.py)
            with _Disable():
                if func in AS_PLAIN and type(args[0]) is _RT:  # f"{t}", repr(t): as without us
                    args = (args[0].as_subclass(_Tensor), *args[1:])
                return func(*args, **kwargs)
        if func in SPECIAL:  # ``for row in x``, ``torch.cond``, ``p.data``: as what they stand for (control.py)
            return SPECIAL[func](self, func, args, kwargs)
        if func in FACTORIES and not (
            func in DEVICE_FACTORIES and args and isinstance(args[0], _Tensor)
        ):  # torch.as_tensor(t) of a tensor is an op on t, not a new source
            with _Disable():
                out = self._factory(func, args, kwargs)  # (on meta, small ones get values: values.py)
                return follow(func, args, kwargs, out) if self.values else out
        self._seq0 = _seq()
        if self.values:  # values known on meta: follow them through the op (values.py)
            return follow(func, args, kwargs, self._op(func, args, kwargs))
        return self._op(func, args, kwargs)

    # -- nodes of tensors -------------------------------------------------------------------
    def bind(self, t: torch.Tensor, node: TensorNode) -> torch.Tensor:
        """Return a RecorderTensor for ``t`` bound to ``node`` (``t`` itself if possible)."""
        if type(t) is _RT and t._tv_tok is self.token:
            t._tv_node = node
            t._tv_ver = version(t)
            return t
        if type(t) is _Tensor and t.layout == torch.strided:
            return self.wrapped_result(t, node) if wrapped(t) else recorded_alias(t, node, self.token)
        # parameters, sparse or other subclasses, stale RecorderTensors (of an earlier
        # recording, never rebound): keep the object, track it on the side
        self.sources[id(t)] = [t, node, version(t)]
        return t

    def node_of(self, t: torch.Tensor) -> TensorNode:
        """The current node of any tensor met during the forward (creating source nodes)."""
        if type(t) is _RT and t._tv_tok is self.token:  # else stale, or made by torch: plain
            node = t._tv_node
            if t._tv_ver != version(t):
                node = self._after_foreign_mutation(t, node)
                t._tv_node, t._tv_ver = node, version(t)
            return node
        entry = self.sources.get(id(t))
        if entry is not None:
            node = entry[1]
            v = version(t)
            if entry[2] != v:
                node = entry[1] = self._after_foreign_mutation(t, node)
                entry[2] = v
            return node
        name_role = self.param_names.get(id(t))
        scope = self.scope()
        if name_role is not None:
            qual, role = name_role
            node = self.new_tensor(t, qual.replace(".", "_"), role, scope, source_name=qual)
            if self.undo is not None and self.undo.swapped(t):  # Tensor.set_ before its first read
                self.graph.warn(unseen_change(scope.path), node.id)
        else:  # a constant, unless a vmap made it (transforms.py)
            node = self.transformed_node(t) or self.new_tensor(t, "constant", "constant", scope)
        self.sources[id(t)] = [t, node, version(t)]
        return node

    def _after_foreign_mutation(self, t: torch.Tensor, node: TensorNode) -> TensorNode:
        """``t`` changed through another view: a new version produced by the op that did it."""
        hit = self.mutations.get(storage_key(t, self.writes is not None)[0]) or self.aliased_write(t)
        if hit is None:  # changed where torch does not call us (Tensor.set_): said (control.py)
            self.graph.warn(unseen_change(self.scope().path), node.id)
            return node
        fn = self.graph.nodes[hit[1]]
        scope = self.graph.module(fn.parent) if fn.parent is not None else self.scope()
        return self.new_result(t, scope, fn)

    # -- calls --------------------------------------------------------------------------------
    def _factory(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not self.stack[-1].leaf:
            self.sync_methods()
        if self.device is not None and func in DEVICE_FACTORIES and kwargs.get("device") is None:
            kwargs = dict(kwargs, device=self.device)
        out = func(*args, **kwargs)
        if not isinstance(out, _Tensor):
            return out
        role = "constant" if func in CONSTANT_FACTORIES else "created"
        node = self.new_tensor(out, op_name(func), role, self.scope())
        return self.bind(out, node)

    def _op(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # the tensor arguments, looking one level into lists/tuples (cat, stack, einsum...)
        ins: list[torch.Tensor] = []
        recorded = False
        foreign = False
        stale = False
        sources = self.sources
        params = self.param_names
        token = self.token
        for a in (*args, *kwargs.values()) if kwargs else args:
            ta = type(a)
            for b in a if ta is list or ta is tuple else (a,):
                tb = type(b)
                if tb is _RT and b._tv_tok is token:
                    ins.append(b)
                    recorded = True
                elif isinstance(b, _Tensor):
                    ins.append(b)
                    if id(b) in sources or id(b) in params or (tb is _Tensor and self.seen_by_transform(b)):
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
            top = self.stack[-1]
            if not top.leaf:  # (here: methods.py reads the caller's frame at a fixed depth)
                self.sync_methods()
                top = self.stack[-1]
            scope = top.node
            fn = self.builder.add_function(OP_NAMES.get(func) or op_name(func), scope, self._read(ins, top))
            if not (foreign or self.probes is not None or self.writes is not None):
                # the common case: nothing runs around the op (but meta replay), all under one
                # switch-off
                try:
                    if self.meta_cache is None:
                        out = func(*args, **kwargs)
                    else:
                        out = self._call_meta_cached(func, args, kwargs, ins, fn)
                except BaseException as e:
                    out = self._refused(e, func, args, kwargs, fn, scope)
                return self._after_op(out, fn, ins, scope)
        return self._op_around(func, args, kwargs, ins, foreign, fn, scope)

    def _read(self, ins: list[torch.Tensor], top: Frame) -> list[int]:
        """The node ids of the op arguments ``ins``, read inside the call of ``top``."""
        ids: list[int] = []
        sid, known, leaky, token = top.node.id, top.known, self.leaky, self.token
        for t in ins:
            if type(t) is _RT and t._tv_tok is token:
                try:
                    v = t._version  # (version() inlined: it is this, but for inference tensors)
                except RuntimeError:
                    v = version(t)
                n = t._tv_node if t._tv_ver == v else self.node_of(t)
            else:
                n = self.node_of(t)
            nid = n.id
            if (nid < sid or (leaky and n.parent != sid)) and nid not in known:
                self.read_late(n)  # made before this call, or maybe left a leaky one: crossings.py
            ids.append(nid)
        return ids

    def _op_around(
        self,
        func: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        ins: list[torch.Tensor],
        foreign: bool,
        fn: FunctionNode,
        scope: ModuleNode,
    ) -> Any:
        """Run op ``fn`` with what must happen around it: probes, meta replay, inference
        writes, other tensor subclasses (opcalls.py)."""
        if self.probes is not None and self.probes.substitutes:  # a probe runs its own function (probes.py)
            func = self.probes.substitute(func)
        writes = self.writes  # inference tensors met: the op's writes are caught by schema
        if writes is not None and not writes.on_stack:  # (else caught for the whole root call)
            writes.catcher.__enter__()
        try:
            if foreign:
                out = self._run(self._call_foreign, func, args, kwargs, fn)
            else:
                with _Disable():
                    if self.meta_cache is None:
                        out = self._run(func, args, kwargs, None, fn)
                    else:
                        out = self._call_meta_cached(func, args, kwargs, ins, fn)
        except BaseException as e:
            out = self._refused(e, func, args, kwargs, fn, scope)
        finally:
            if writes is not None and not writes.on_stack:
                writes.catcher.__exit__(None, None, None)
        with _Disable():
            return self._after_op(out, fn, ins, scope)

    # -- results ------------------------------------------------------------------------------
    def _after_op(self, out: Any, fn: FunctionNode, ins: list[torch.Tensor], scope: ModuleNode) -> Any:
        sources = self.sources
        token = self.token
        if type(out) is _Tensor and out.layout is _STRIDED and unchanged_by(ins, out, token, sources) and not active():
            # the common case: one fresh result, no argument written
            since = self._seq0 if _grad_on() else None  # (with grad: the result itself if the op made it)
            return recorded_alias(out, self.new_result(out, scope, fn), token, since)
        fid = fn.id
        # in-place: an argument whose version counter moved was mutated by this op
        mutated: dict[int, TensorNode] = {}
        t: Any
        for t in ins:
            if id(t) in mutated:
                continue
            v = version(t)
            ours = type(t) is _RT and t._tv_tok is token
            old_v = t._tv_ver if ours else sources[id(t)][2]
            if v != old_v and v != -1:
                new = self.new_result(t, scope, fn)
                if ours:
                    t._tv_node, t._tv_ver = new, v
                else:
                    sources[id(t)] = [t, new, v]
                mutated[id(t)] = new
                key, owner = storage_key(t, self.writes is not None)
                self.mutations[key] = (owner, fid)
                if key in self.data_links:  # written through ``p.data``: p's new version too
                    self.rebind(self.data_links[key][1], new, fn, scope)
        if isinstance(out, _Tensor):
            return self._wrap_one(out, fn, 0, ins, mutated)
        index = itertools.count()  # split, chunk, max(dim=...): one result node each, in order
        return map_tensors(out, lambda o: self._wrap_one(o, fn, next(index), ins, mutated))

    def _wrap_one(
        self, o: torch.Tensor, fn: FunctionNode, i: int, ins: list[torch.Tensor], mutated: dict[int, TensorNode]
    ) -> torch.Tensor:
        if id(o) in mutated:  # in-place op returning its argument: the new version
            return o
        node = self.new_result(o, self.scope(), fn, f"_out{i}" if i else "_out")
        for t in ins:
            if o is t and type(o) is _RT and o._tv_tok is self.token and o.is_leaf and o.requires_grad:
                # one of ours made a leaf (``x.detach().requires_grad_()``, in ``nn.Parameter(x)``):
                # the object itself, now this node (an alias would be no leaf, and get no grad)
                o._tv_node, o._tv_ver = node, version(o)
                return o
            if o is t:  # op returned an argument unchanged (``x.contiguous()``): a fresh alias
                if type(o) in PLAIN_TYPES and o.layout == torch.strided:
                    o = alias_as(o, _Tensor)
                return self.stands_for(self.bind(o, node), t)
        if _grad_on() and type(o) is _Tensor and o.layout == torch.strided and not wrapped(o):
            return recorded_alias(o, node, self.token, self._seq0)
        return self.bind(o, node)

"""Module scope: every ``nn.Module`` call inside the root call becomes a ModuleNode with its
qualified path, entered by edges from its tensor arguments and left by edges to its results
(a result passed through unchanged gets an alias node, so the graph stays acyclic)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ..graph import SOURCE_ROLES, ModuleNode, NodeFactory
from .control import unseen_result
from .objects import Walk, visit
from .optable import version
from .paths import ModulePaths
from .probes import Probes
from .state import Failure, Frame, recorded_alias
from .tensor import RecorderTensor, alias_as
from .transforms import wrapped
from .tree import map_tensors

if TYPE_CHECKING:
    from .bindings import Bindings
    from .crossings import Crossings
    from .methods import Methods
    from .originals import Originals
    from .transforms import Transforms

_Disable = torch._C.DisableTorchFunction
_Tensor = torch.Tensor
_RT = RecorderTensor


class Calls:
    """The call stack of one recording: module calls, their paths and edges, and the
    failure now propagating."""

    def __init__(
        self,
        builder: NodeFactory,
        probes: Probes | None,
        paths: ModulePaths,
        failure: Failure,
        bindings: Bindings,
        crossings: Crossings,
        transforms: Transforms,
        originals: Originals,
    ) -> None:
        self.builder = builder
        self.graph = builder.graph
        self.probes = probes
        self.stack: list[Frame] = []
        self.paths = paths
        self.failure = failure
        self._path_of = paths.reader()
        # read-only views of the collaborators' tables, for the per-call hot path
        self._sources = bindings.tables()[0]
        self._leaky = crossings.table()
        self._unwrapped = transforms.table()
        self._read_late = crossings.read_late
        self.bindings = bindings
        self.crossings = crossings
        self.transforms = transforms
        self.originals = originals
        self.token = bindings.token
        self._node_of = bindings.node_of
        self._add_call = builder.add_call
        self._methods: Methods | None = None

    def connect(self, methods: Methods) -> None:
        """The method calls opened and closed on this stack."""
        self._methods = methods

    # -- the stack ------------------------------------------------------------------------------
    def frames(self) -> list[Frame]:
        """The running calls, innermost last (read by others, changed by ``push``/``pop``)."""
        return self.stack

    def push(self, frame: Frame) -> None:
        self.stack.append(frame)

    def pop(self) -> Frame:
        return self.stack.pop()

    def scope(self) -> ModuleNode:
        """The module call now executing."""
        return self.stack[-1].node

    def close(self) -> None:
        """The recording ended: the stack goes (idempotent)."""
        self.stack.clear()

    def sub_call(
        self, call: Callable[..., Any], module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """A submodule call inside the root call, run by ``call`` (modulecall.py inlines it)."""
        frame, args, kwargs = self.enter_sub(module, args, kwargs)
        try:
            out = call(module, *args, **kwargs)
        except BaseException as e:
            self.fail_sub(frame, e)
            raise
        return self.leave_sub(frame, out)

    def enter_sub(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Frame, tuple[Any, ...], dict[str, Any]]:
        """A submodule call starts: its node and frame (now the top of ``stack``), and the
        arguments to call it with."""
        with _Disable():
            caller = self.stack[-1]
            if not caller.leaf:
                assert self._methods is not None
                self._methods.sync_methods(module)
                caller = self.stack[-1]
            path = self._path_of(id(module)) or self.paths.path(module, self.stack)
            cls = type(module)
            m = self._add_call(path, cls.__name__, cls.__module__, caller.node)
            frame = Frame(module, m, not module._modules)
            args, kwargs = self.enter_args(m, args, kwargs, frame, caller)
        self.stack.append(frame)
        if self.probes is not None:
            self.probes.enter_call(m, module)
        return frame, args, kwargs

    def fail_sub(self, frame: Frame, e: BaseException) -> None:
        """The call of ``frame`` raised ``e``."""
        m = frame.node
        try:
            self.builder.fail_call(m)
            self.failure.failed(e, m.path, None)
        finally:
            self._pop_sub(frame, failed=True)

    def leave_sub(self, frame: Frame, out: Any) -> Any:
        """The call of ``frame`` returned ``out``: ``out`` as its caller gets it."""
        stack, m = self.stack, frame.node
        if type(out) is _RT and not frame.objects and stack and stack[-1] is frame:
            with _Disable():  # the common case: one tensor of ours, made inside the call (``leave``)
                node = out._tv_node
                try:  # (an inference tensor has no ``_version``: the general way)
                    fresh = out._tv_tok is self.token and out._tv_ver == out._version
                except RuntimeError:
                    fresh = False
                fresh = fresh and not (self._leaky or self._unwrapped)
                if fresh and node.id > m.id and node.role not in SOURCE_ROLES:
                    stack.pop()
                    if self.probes is not None:  # (as ``_pop_sub``)
                        self.probes.exit_call(m)
                    self.builder.end_call_with(m, node.id)
                    return out
        self._pop_sub(frame, failed=False)
        with _Disable():
            return self.leave(frame.node, out, frame)

    def _pop_sub(self, frame: Frame, failed: bool) -> None:
        stack = self.stack
        if stack and stack[-1] is frame:
            stack.pop()
        else:  # method calls still open inside it
            assert self._methods is not None
            self._methods.close_methods(failed)
            if stack and stack[-1] is frame:
                stack.pop()
        if self.probes is not None:
            self.probes.exit_call(frame.node)

    def enter_args(
        self, m: ModuleNode, args: tuple[Any, ...], kwargs: dict[str, Any], frame: Frame, caller: Frame | None = None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Edges from every tensor argument into the module call (made from ``caller``, by default
        the running one); tensors not recorded yet (parameters, buffers, constants) become source
        nodes and enter as RecorderTensors.  Objects among the arguments are not walked: a tensor
        they hold enters the call when something inside reads it (``read_late``)."""
        if caller is None:
            caller = self.stack[-1]
        if not kwargs:  # the common case: tensors only (RecorderTensors of this recording)
            token = self.token
            for a in args:
                if type(a) is not _RT or a._tv_tok is not token:
                    break
            else:  # (``_enter`` inlined)
                cid, mid, ckn, known, leaky = caller.node.id, m.id, caller.known, frame.known, self._leaky
                add = self.graph.edges.add
                for a in args:
                    node = a._tv_node if a._tv_ver == version(a) else self._node_of(a)
                    nid = node.id
                    if (nid < cid or (leaky and node.parent != cid)) and nid not in ckn:
                        self._read_late(node)  # read by the caller to pass it on (crossings.py)
                    add(nid, mid)
                    known.add(nid)
                return args, kwargs

        def enter(t: torch.Tensor) -> torch.Tensor:
            return self._enter(t, m, frame, caller)

        notes: list[Any] = []  # the objects among the arguments (not walked)
        args = tuple(map_tensors(a, enter, notes=notes) for a in args)
        if kwargs:
            kwargs = {k: map_tensors(v, enter, notes=notes) for k, v in kwargs.items()}
        frame.objects = bool(notes)
        return args, kwargs

    def _enter(self, t: torch.Tensor, m: ModuleNode, frame: Frame, caller: Frame) -> torch.Tensor:
        """Tensor argument ``t`` enters the call ``m`` (of ``frame``) made from ``caller``."""
        node = self._node_of(t)
        nid = node.id
        self.crossings.check(node, caller)  # read by the caller to pass it on
        self.graph.edges.add(nid, m.id)
        frame.known.add(nid)
        if type(t) not in (_Tensor, nn.Parameter) or t.layout != torch.strided or wrapped(t):
            return t  # ours already, a stale one (tracked as a source), another subclass, a vmap's
        return self.originals.stands_for(recorded_alias(t, node, self.token), t)

    def leave(self, m: ModuleNode, out: Any, frame: Frame | None = None) -> Any:
        """The call ``m`` returned ``out``: edges to its results, in the caller's scope.
        Tensors held by other objects in ``out`` are results when made inside the call;
        with objects among its arguments (``frame.objects``: it may have filled them, as a
        KV cache), the other tensors made inside it are results when used after it."""
        if self._unwrapped:  # vmap's results returned: made inside the call (transforms.py)
            map_tensors(out, lambda t: self.transforms.adopt(t, m))
        results: set[int] = set()
        if type(out) is _RT and (frame is None or not frame.objects):  # the common case
            self.builder.end_call(m)
            return self._result(out, m, frame, results)
        self._returned_sources(out, m)
        self.builder.end_call(m)
        notes: list[Any] = []  # objects in the return value, walked below
        out = map_tensors(out, lambda t: self._result(t, m, frame, results), notes=notes)
        if notes:
            held, walk = self.held_results(m, results), Walk()
            for o in notes:
                visit(o, held, False, "", walk)
        if frame is not None and frame.objects:  # it may have stored results in them
            self.crossings.leak(m.id, results)
        return out

    def _returned_sources(self, out: Any, m: ModuleNode) -> None:
        """Parameters and buffers of the model that the call ``m`` returns without any op
        having read them (a learned bias or position table returned by ``forward``) get
        their nodes inside ``m``, before it ends: they flow out of it (``_result``) instead
        of being drawn as results the call made from nothing."""
        b = self.bindings

        def see(t: torch.Tensor) -> torch.Tensor:
            name_role = b.param_name(t)
            if name_role is not None and type(t) is not _RT and not b.tracked(t):
                qual, role = name_role
                b.track(t, b.new_tensor(t, qual.replace(".", "_"), role, m, source_name=qual))
            return t

        map_tensors(out, see)

    def _result(self, t: torch.Tensor, m: ModuleNode, frame: Frame | None, results: set[int]) -> torch.Tensor:
        """Tensor ``t`` is returned by the call ``m`` (of ``frame``)."""
        token, b = self.token, self.bindings
        if (type(t) is _RT and t._tv_tok is token) or id(t) in self._sources:
            node = t._tv_node if type(t) is _RT and t._tv_tok is token and t._tv_ver == version(t) else self._node_of(t)
            nid = node.id
            if frame is not None and (nid < m.id or (self._leaky and node.parent != m.id)) and nid not in frame.known:
                self._read_late(node, frame)  # read by the call to return it (crossings.py)
            if m.id < nid < m.end and node.role not in SOURCE_ROLES:  # produced inside the call
                self.graph.edges.add(m.id, nid)
                results.add(nid)
                return t
            # passed through unchanged: an alias node standing for the outer tensor
            parent = self.graph.module(m.parent) if m.parent is not None else m
            alias = b.new_tensor(t, "_out", "intermediate", parent, copy_of=nid, producer=m.id, named_after=m)
            if wrapped(t):  # a tensor of a vmap: the object itself is now the alias (transforms.py)
                return self.transforms.wrapped_result(t, alias)
            plain = alias_as(t, _Tensor) if type(t) is _RT else t
            if type(plain) is _Tensor and plain.layout == torch.strided:
                return self.originals.stands_for(recorded_alias(plain, alias, token), t)
            if type(t) is not _RT:  # one object (a fake or other foreign tensor): now the alias
                b.track(t, alias)
            return t
        # a tensor we never saw: made where we could not look (C++ code): the graph says so
        parent = self.graph.module(m.parent) if m.parent is not None else m
        self.graph.warn(unseen_result(m.path, m.cls_name), m.id)
        return b.bind(t, b.new_result(t, parent, m))

    def held_results(self, m: ModuleNode, results: set[int]) -> Callable[[torch.Tensor], None]:
        """For the tensors held by objects that the ended call ``m`` returned or filled:
        an edge out of ``m`` for each one made inside it (once, ids go to ``results``)."""
        b = self.builder

        def held(t: torch.Tensor) -> None:
            node = self.bindings.known_node(t)
            # made inside the call: by the parent, as a version made by an in-place op inside
            # the call (``copy_`` into a slice) gets its node only now, after the call's end
            if node is None or node.role in SOURCE_ROLES or node.id in results or node.parent is None:
                return
            if node.parent == m.id or m.contains(node.parent):
                self.crossings.held(node)  # it may have left a leaky call inside this one too
                b.add_edge(m.id, node.id)
                results.add(node.id)

        return held

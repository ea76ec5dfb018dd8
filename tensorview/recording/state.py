"""``SessionState``: all state of one recording of one model (one object, no globals).

The behaviour that fills it is split by concern into ops.py (per-op recording), calls.py
(module scope) and boundary.py (the root call); session.py composes them."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ..graph import FunctionNode, ModuleNode, Node, NodeFactory, Shape, TensorNode
from .compiled import optimized_module_type, unwrap
from .convert import Undo
from .copies import stand_ins
from .inference import InferenceWrites
from .keep import KeptParameters
from .optable import (
    BUFFER_ROLE,
    DEVICE_NAMES,
    DTYPE_NAMES,
    PARAM_ROLE,
    device_name,
    dtype_name,
    shape_of,
    symbolic_shape,
    version,
)
from .probes import Probe, Probes
from .tensor import RecorderTensor, alias_as, made_by_op


def _same_geometry(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``a`` and ``b`` (aliases) have the same shape, strides and offset.  Tensors without
    strides (sparse, nested: their ``stride()`` or even ``shape`` raises) have no view
    geometry that an op could have changed without making a new tensor: same layout is
    enough."""
    if a.layout != b.layout or a.is_nested != b.is_nested:
        return False
    if a.layout != torch.strided or a.is_nested:
        return True
    return a.shape == b.shape and a.stride() == b.stride() and a.storage_offset() == b.storage_offset()


class Frame:
    """One module call being executed (or a method call of a submodule, see methods.py)."""

    __slots__ = ("module", "node", "leaf", "pyframe", "seen", "code", "known", "objects")

    def __init__(self, module: nn.Module, node: ModuleNode, leaf: bool = False, pyframe: Any = None) -> None:
        self.module = module
        self.node = node
        #: a real call of a module without submodules: no method call of a submodule can
        #: start inside it, so ops there skip the look at the Python stack (methods.py)
        self.leaf = leaf
        #: for a method call (``self.enc.embed(x)``): the Python frame running the method
        self.pyframe = pyframe
        #: the innermost Python frame of the last event found to need no change of the stack
        self.seen: Any = None
        #: the code object of the module's ``forward`` (found at the first event inside it)
        self.code: Any = None
        #: ids of the tensor nodes known to be readable in the call without crossing its
        #: boundary again: its arguments, and tensors checked by ``read_late`` (crossings.py)
        self.known: set[int] = set()
        #: objects (not lists, tuples, dicts, dataclasses) were among the arguments: the
        #: call may store results in them (crossings.py)
        self.objects = False


@dataclass(frozen=True)
class Settings:
    """How a session records (``BaseRecorder``'s keyword arguments, documented there)."""

    device: Any = None
    meta_replay: bool = True
    probes: Sequence[Probe] = ()
    keep_parameters: bool = False


class SessionState:
    _mode: Any  # the session's TorchFunctionMode (session.py)

    def __init__(self, model: nn.Module, settings: Settings) -> None:
        device, meta_replay, probes = settings.device, settings.meta_replay, settings.probes
        #: where ``model`` is a copy draw_graph made: ``id(module of the caller's model) ->
        #: (it, its copy)``; a call of one, however the forward reached it, runs the copy
        self.stand_ins = stand_ins(model)
        #: the model recorded: a ``torch.compile`` wrapper stands for the module it wraps
        self.model = model = unwrap(model)
        #: torch.compile's wrapper class (OptimizedModule), None when Dynamo is not loaded
        self.compile_wrapper = optimized_module_type()
        #: (op, argument metadata) -> how to replay its results on meta (see metacache.py)
        self.meta_cache: dict[Any, Any] | None = {} if meta_replay else None
        #: the probes recording extra facts (probes.py); None without any, to keep ops fast
        self.probes = Probes(list(probes)) if probes else None
        #: (op, argument metadata) -> the probes' memos of the op a replay stands for
        self.meta_memos: dict[Any, tuple[Any, ...]] = {}
        self._memos: tuple[Any, ...] = ()
        self.meta_hits = 0
        self.device = torch.device(device) if device is not None else None
        self.builder = NodeFactory()
        #: one tuple object per distinct shape (nodes share them)
        self.shapes: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.graph = self.builder.graph
        self.thread = threading.get_ident()
        self.running = False  # inside the root call
        self.done = False  # the root call has finished (later calls run unrecorded)
        self.stack: list[Frame] = []
        #: (module path, op) where ``failure_exc`` was raised: the innermost place the
        #: exception now propagating passed (an exception the model caught is replaced by
        #: the next one, so the failure named is the one that left the forward)
        self.failure: tuple[str, Node | None] | None = None
        self.failure_exc: BaseException | None = None
        #: marks this session's RecorderTensors: one with another token is stale (it
        #: outlived its recording) and is treated as a plain tensor
        self.token = object()
        #: the model's modules, parameters and buffers as recording began, held for the
        #: session: their ids are keys of the two name tables, and one the forward replaces
        #: (``self.attn = Attn()``) must not free its id for an object made later
        self.tree: list[Any] = []
        self.module_names, self.param_names = model_names(model, self.tree)
        #: tensors aliased without a shared version counter (``p.data``, ``p.data = x``):
        #: storage key of the alias -> (object keeping the key valid, the tensor it writes)
        self.data_links: dict[int, tuple[Any, torch.Tensor]] = {}
        #: the model's parameters and buffers written in place, saved to be put back (keep.py)
        self.kept = KeptParameters(self.param_names, self.data_links, self.tree) if settings.keep_parameters else None
        #: the modules not in the model's tree that were named while recording (calls.py)
        self.found_modules: list[nn.Module] = []
        #: module conversions inside forward, undone at the end with keep_parameters (convert.py)
        self.undo = Undo(model) if settings.keep_parameters else None
        # tensors that are not RecorderTensors but have nodes: id -> [tensor, node, version]
        # (parameters, buffers, constants, foreign subclasses); the strong reference keeps
        # the id valid for the session's life only
        self.sources: dict[int, list[Any]] = {}
        #: tensors a vmap may hand out (transforms.py): id -> (weak reference to it, node of
        #: the result inside it stands for, the op that hands it out, weak reference to
        #: that result)
        self.unwrapped: dict[int, tuple[Any, TensorNode, str, Any]] = {}
        # last op that mutated a storage: id(storage owner) -> (owner, function node id)
        self.mutations: dict[int, tuple[Any, int]] = {}
        #: writes per storage, once the recording meets inference tensors (inference.py)
        self.writes: InferenceWrites | None = None
        #: ended calls whose results may have left where no hook sees (objects among their
        #: arguments, method calls): call id -> ids of its results so far (crossings.py)
        self.leaky: dict[int, set[int]] = {}
        #: RecorderTensors standing for a tensor the caller holds (an input, or a parameter,
        #: buffer or input that an op or call returned unchanged, as ``x.to(x.dtype)``):
        #: id -> (ours, theirs).  Where one is left on the model or returned, theirs is put
        #: back (boundary.py), as the forward without us would leave that same object there.
        self.originals: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        #: inputs moved to meta came with their values (values.py): follow them
        self.values = False
        #: the plain tensor made for each of ours left where the caller can see it (theirs)
        self.plain_of: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def stands_for(self, ours: torch.Tensor, theirs: torch.Tensor) -> torch.Tensor:
        """Note that ``ours`` stands for the caller's ``theirs`` (or for the tensor that
        ``theirs``, one of ours, stands for); returns ``ours``."""
        if type(theirs) is RecorderTensor:
            entry = self.originals.get(id(theirs))
            if entry is None or entry[0] is not theirs:
                return ours
            theirs = entry[1]
        if ours is not theirs:
            self.originals[id(ours)] = (ours, theirs)
        return ours

    def theirs(self, t: torch.Tensor) -> torch.Tensor:
        """The caller's tensor for one of ours, ``t``, if ``t`` stands for one and still has
        its shape, strides and offset; else a plain tensor sharing ``t``'s storage, the same
        object for every place ``t`` is left in (returned twice, or returned and stored on
        the model: one object there without recording, so one object here too)."""
        made = self.plain_of.get(id(t))
        if made is not None and made[0] is t:
            return made[1]
        entry = self.originals.get(id(t))
        if entry is not None and entry[0] is t:
            theirs = entry[1]
            if theirs.dtype == t.dtype and _same_geometry(theirs, t):
                return theirs
        plain = alias_as(t, torch.Tensor)
        self.plain_of[id(t)] = (t, plain)  # holds t: its id stays its own until cleared
        return plain

    def failed(self, exc: BaseException, path: str, op: FunctionNode | None) -> None:
        """``exc`` passes through (module ``path``, op node ``op``, marked failed) while
        propagating."""
        if op is not None:
            op.failed = True
        if self.failure_exc is not exc:  # the first (innermost) place this exception passed
            self.failure, self.failure_exc = (path, op), exc

    def scope(self) -> ModuleNode:
        """The module call now executing."""
        return self.stack[-1].node

    def new_tensor(
        self,
        t: torch.Tensor,
        base: str,
        role: str,
        scope: ModuleNode,
        *,
        copy_of: int | None = None,
        source_name: str | None = None,
        producer: int | None = None,
        named_after: Node | None = None,
    ) -> TensorNode:
        """A node for (this version of) ``t``, made inside ``scope`` (``named_after``: as
        in ``NodeFactory.add_tensor``)."""
        dims = shape_of(t)
        shape: Shape
        try:
            shape = self.shapes.setdefault(dims, dims)
        except TypeError:  # symbolic sizes (device="fake"): SymInts are unhashable
            shape = symbolic_shape(dims)
        dt, dev = t.dtype, t.device
        return self.builder.add_tensor(
            base,
            scope,
            shape,
            DTYPE_NAMES.get(dt) or dtype_name(dt),
            DEVICE_NAMES.get(dev) or device_name(dev),
            role,
            copy_of=copy_of,
            source_name=source_name,
            producer=producer,
            named_after=named_after,
        )

    def new_result(self, t: torch.Tensor, scope: ModuleNode, producer: Node, suffix: str = "_out") -> TensorNode:
        """A node for ``t`` made by ``producer`` inside ``scope`` and named after it: the
        common case of ``new_tensor``, in positional calls (the per-op hot path)."""
        try:
            dims = tuple(t.shape)
            shape: Shape = self.shapes.setdefault(dims, dims)
        except (RuntimeError, TypeError):  # nested tensors, symbolic sizes: the general way
            return self.new_tensor(t, suffix, "intermediate", scope, producer=producer.id, named_after=producer)
        dt, dev = t.dtype, t.device
        return self.builder.add_result(
            suffix,
            scope,
            shape,
            DTYPE_NAMES.get(dt) or dtype_name(dt),
            DEVICE_NAMES.get(dev) or device_name(dev),
            producer,
        )


def model_names(model: nn.Module, alive: list[Any] | None = None) -> tuple[dict[int, str], dict[int, tuple[str, str]]]:
    """``id(module) -> qualified name`` and ``id(tensor) -> (qualified name, role)`` for the
    parameters and buffers, the first name of each object in ``named_modules`` order
    (``remove_duplicate=False``), parameters before buffers: one pre-order walk instead of
    ``named_modules``/``named_parameters``/``named_buffers`` (nested generators, each
    O(depth) per module).  ``alive`` gets every object named (whose ids are the keys)."""
    modules: dict[int, str] = {}
    params: dict[int, tuple[str, str]] = {}
    buffers: dict[int, tuple[str, str]] = {}
    stack: list[tuple[str, nn.Module]] = [("", model)]
    wrapper = optimized_module_type()  # torch.compile(m) stands for m, at its own path
    while stack:
        name, m = stack.pop()
        if wrapper is not None and isinstance(m, wrapper):
            m = unwrap(m)
        modules.setdefault(id(m), name)
        prefix = name + "." if name else ""
        for k, p in m._parameters.items():
            if p is not None:
                params.setdefault(id(p), (prefix + k, PARAM_ROLE))
        for k, b in m._buffers.items():
            if b is not None:
                buffers.setdefault(id(b), (prefix + k, BUFFER_ROLE))
        if alive is not None:
            alive.append(m)
            alive.extend(m._parameters.values())
            alive.extend(m._buffers.values())
        children = m._modules
        if children:
            stack.extend([(prefix + k, c) for k, c in reversed(children.items()) if c is not None])
    return modules, {**buffers, **params}


def recorded_alias(t: torch.Tensor, node: TensorNode, token: object, since: int | None = None) -> RecorderTensor:
    """A RecorderTensor sharing ``t``'s storage, version counter and autograd history,
    bound to ``node`` of the session with ``token``: ``t`` itself where an op made it
    after autograd node number ``since`` (tensor.py: ``made_by_op``), else an alias."""
    r: Any = t if since is not None and made_by_op(t, since) else alias_as(t, RecorderTensor)
    r._tv_node = node
    try:
        r._tv_ver = r._version
    except RuntimeError:  # an inference tensor
        r._tv_ver = version(r)
    r._tv_tok = token
    return r

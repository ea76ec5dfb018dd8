"""The recording session: one recording of one model, composed of collaborators that each
own their state and talk through methods (docs/architecture.md, "Inside recording/"):

* ``Bindings`` (bindings.py): which node each tensor is now, versions, in-place writes;
* ``Calls`` (calls.py): the call stack, module paths, argument and result edges, the
  failure propagating; ``Methods`` (methods.py) opens method calls on it; ``Crossings``
  (crossings.py) repairs boundaries that tensors cross where no hook sees;
* ``Transforms`` (transforms.py): tensors of functorch transforms;
* ``Ops`` (ops.py, with ``OpRunner`` in opcalls.py): every torch function call;
* ``Boundary`` (boundary.py): the root call, which sets every one of them up and tears
  every one down, in one place.

Three hooks feed them: the patched ``nn.Module.__call__`` (``call_module`` and the fast
path ``enter_call``), a ``TorchFunctionMode`` pushed for the root call and
``RecorderTensor.__torch_function__`` (both ``handle``: ``Ops.handle``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from torch import nn
from torch.overrides import TorchFunctionMode

from ..graph import Graph, Node, NodeFactory
from .bindings import Bindings
from .boundary import Boundary
from .calls import Calls
from .compiled import optimized_module_type, unwrap
from .convert import Undo
from .copies import stand_ins
from .crossings import Crossings
from .fxscope import GRAPH_MODULE, interpreted, scoped
from .keep import KeptParameters, callers
from .methods import Methods
from .ops import Ops
from .originals import Originals
from .paths import ModulePaths
from .probes import Probes
from .state import Failure, Settings, model_names
from .transforms import Transforms


class RecordingMode(TorchFunctionMode):
    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session: Session | None = session

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        session = self.session
        if session is None:  # the recording ended (the mode is off the stack by then)
            return func(*args, **(kwargs or {}))
        return session.handle(func, types, args, kwargs or {})

    def close(self) -> None:
        """The recording ended: the session is let go (no reference cycle keeps it for the
        cycle collector: a dropped recording is freed at once, graph and all)."""
        self.session = None


class Session:
    """One recording of one model: its collaborators, composed."""

    def __init__(self, model: nn.Module, settings: Settings) -> None:
        #: where ``model`` is a copy draw_graph made: ``id(module of the caller's model) ->
        #: (it, its copy)``; a call of one, however the forward reached it, runs the copy
        self.stand_ins = stand_ins(model)
        #: the model recorded: a ``torch.compile`` wrapper stands for the module it wraps
        self.model = model = unwrap(model)
        #: torch.compile's wrapper class (OptimizedModule), None when Dynamo is not loaded
        self.compile_wrapper = optimized_module_type()
        self.thread = threading.get_ident()
        #: marks this session's RecorderTensors: one with another token is stale (it
        #: outlived its recording) and is treated as a plain tensor
        self.token = token = object()
        self.builder = builder = NodeFactory()
        self.graph: Graph = builder.graph
        #: the probes recording extra facts (probes.py); None without any, to keep ops fast
        self.probes = probes = Probes(list(settings.probes)) if settings.probes else None
        #: the model's modules, parameters and buffers as recording began, held for the
        #: session: their ids are keys of the two name tables, and one the forward replaces
        #: (``self.attn = Attn()``) must not free its id for an object made later
        tree: list[Any] = []
        module_names, param_names = model_names(model, tree)
        keep = settings.keep_parameters
        #: module conversions inside forward, undone at the end with keep_parameters (convert.py)
        undo = Undo(model) if keep else None
        self._mode = RecordingMode(self)
        self.failure = Failure()
        self.paths = paths = ModulePaths(module_names)
        self.originals = originals = Originals()
        self.bindings = bindings = Bindings(builder, param_names, undo, token)
        #: the model's parameters and buffers written in place, saved to be put back (keep.py)
        kept = KeptParameters(callers(param_names, self.stand_ins), bindings.links(), tree) if keep else None
        self.crossings = crossings = Crossings(builder, bindings, token)
        self.transforms = transforms = Transforms(builder, bindings, token)
        self.calls = calls = Calls(builder, probes, paths, self.failure, bindings, crossings, transforms, originals)
        self.methods = methods = Methods(builder, probes, crossings, paths)
        self.ops = ops = Ops(settings, builder, probes, kept, self._mode, token)
        self.undo = undo
        self.boundary = Boundary(builder, self._mode, probes, kept, undo, tree)
        bindings.connect(calls, transforms, ops)
        crossings.connect(calls)
        transforms.connect(calls)
        methods.connect(calls)
        calls.connect(methods)
        ops.connect(self)
        self.boundary.connect(self)
        # the hooks' entry points, bound once
        self.handle = ops.handle
        self.enter_sub = calls.enter_sub
        self.leave_sub = calls.leave_sub
        self.fail_sub = calls.fail_sub
        self._frames = calls.frames()
        #: module class -> whether its calls take the fast path (``enter_call``)
        self._plain_classes: dict[type, bool] = {}

    @property
    def running(self) -> bool:
        """Inside the root call (ops are recorded)."""
        return self.ops.is_running()

    def failed_at(self) -> tuple[str, Node | None] | None:
        """(module path, op) where the exception now propagating was raised."""
        return self.failure.place()

    def failure_exc(self) -> BaseException | None:
        """The exception now propagating (None once handled or explained)."""
        return self.failure.exception()

    def forget_failure(self) -> None:
        self.failure.forget()

    @property
    def meta_hits(self) -> int:
        """How many ops meta replay answered."""
        return self.ops.replayed()

    def call_module(
        self, call: Callable[..., Any], module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """The patched ``nn.Module.__call__`` of the recording thread lands here."""
        if threading.get_ident() != self.thread:
            return call(module, *args, **kwargs)
        if self.stand_ins is not None and self._frames:  # the caller's module, reached by a closure
            pair = self.stand_ins.get(id(module))
            if pair is not None and pair[0] is module:
                module = pair[1]
        wrapper = self.compile_wrapper
        if wrapper is not None and isinstance(module, wrapper):
            # torch.compile(m): no node of its own; ``m`` is called in its place (its compiled
            # forward would call ``m`` through a method bound before our patch), and gets the
            # wrapper's path; hooks registered on the wrapper itself do not run
            return self.call_module(call, unwrap(module), args, kwargs)
        if isinstance(module, GRAPH_MODULE) and scoped(module):  # hierarchy from fx (fxscope.py)
            call = interpreted(self, call)
        if not self._frames:
            if module is not self.model or self.boundary.finished():
                return call(module, *args, **kwargs)
            return self.boundary.root_call(call, module, args, kwargs)
        return self.calls.sub_call(call, module, args, kwargs)

    def enter_call(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The patched ``__call__``'s fast path: a submodule call in the recording thread is
        entered (``enter_sub``: ``(frame, args, kwargs)``, to be left by ``leave_sub`` or
        ``fail_sub``); None for any other call, which goes through ``call_module``."""
        if not self._frames or threading.get_ident() != self.thread:
            return None
        cls = type(module)
        plain = self._plain_classes.get(cls)
        if plain is None:  # a torch.compile wrapper, an fx hierarchy that may be rebuilt: call_module
            wrapper = self.compile_wrapper
            plain = self._plain_classes[cls] = not (
                (wrapper is not None and issubclass(cls, wrapper)) or issubclass(cls, GRAPH_MODULE)
            )
        if not plain or (self.stand_ins is not None and id(module) in self.stand_ins):  # (a copy runs)
            return None
        return self.enter_sub(module, args, kwargs)

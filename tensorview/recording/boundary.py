"""The root boundary: the root call's inputs become ``input`` nodes (wrapped as
RecorderTensors), its outputs ``output`` nodes (unwrapped to plain tensors), and when
the call ends, also by an exception, no RecorderTensor is left anywhere the caller can
reach."""

from __future__ import annotations

import gc
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ..graph import NodeFactory
from . import interrupts
from .compiled import EAGER_STANCE
from .convert import Undo
from .dtensors import PLACEMENT_LAYER, placements
from .keep import KeptParameters
from .modes import close_mode_guards, hidden_modes, mode_stack, set_mode_stack
from .optable import PLAIN_TYPES
from .originals import strip_escaped
from .probes import Probes
from .redirect import stale_reads
from .signatures import forward_signature
from .state import Frame
from .tensor import RecorderTensor
from .tree import flat_tensors, map_tensors, output_names, strip_in_place
from .values import value_of

if TYPE_CHECKING:
    from .session import RecordingMode, Session

_Disable = torch._C.DisableTorchFunction
_Tensor = torch.Tensor
_RT = RecorderTensor
#: the thread's torch-function switch (torch >= 2.4), put back when the root call ends
_get_tf_state: Any = getattr(torch._C, "_get_torch_function_state", None)
_set_tf_state: Any = getattr(torch._C, "_set_torch_function_state", None)


class Boundary:
    """The root call of one recording: sets every collaborator up for it and tears every
    one down after it, in one place (``_record_root``)."""

    _theirs: list[Any] | None = None  # the modes on the stack when the root call started
    _probes_stopped = False

    def __init__(
        self,
        builder: NodeFactory,
        mode: RecordingMode,
        probes: Probes | None,
        kept: KeptParameters | None,
        undo: Undo | None,
        tree: list[Any],
    ) -> None:
        self.builder = builder
        self.graph = builder.graph
        self.mode = mode
        self.probes = probes
        self.kept = kept
        self.undo = undo
        #: the model's objects held while recording (state.py's ``model_names``)
        self.tree = tree
        self.done = False  # the root call has finished (later calls run unrecorded)

    def connect(self, session: Session) -> None:
        """Every collaborator of ``session``: the root call sets each up and tears each down."""
        self.ops, self.bindings, self.calls = session.ops, session.bindings, session.calls
        self.crossings, self.methods, self.transforms = session.crossings, session.methods, session.transforms
        self.paths, self.originals, self.failure = session.paths, session.originals, session.failure
        #: the caller's modules and their copies when a copy records (copies.py ``stand_ins``)
        self.stand_ins = session.stand_ins

    def finished(self) -> bool:
        """The root call has finished: later calls of the model run unrecorded."""
        return self.done

    def root_call(
        self, call: Callable[..., Any], module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        # no cycle collection while the root call is recorded (as timeit does): the nodes
        # made are long-lived tracked objects, which trigger full collections, each a walk
        # of the whole heap (~150 ms in a process with transformers loaded)
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._record_root(call, module, args, kwargs)
        finally:
            if collecting:
                gc.enable()

    def _record_root(
        self, call: Callable[..., Any], module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        with _Disable():  # (no mode of the caller sees tensorview's own calls: modes.py)
            first = next(iter(flat_tensors((args, kwargs), objects=True)), None)
            self.ops.start(first)  # (the device, and meta replay on meta only)
            inference = torch.is_inference_mode_enabled() or (first is not None and first.is_inference())
        with _Disable():
            root = self.builder.add_module("", type(module).__name__, type(module).__module__, None)
        # Ctrl-C is deferred here (interrupts.py) except while the forward itself runs; the
        # finally undoes whatever of this setup happened, also after an ordinary exception
        tf_state = _get_tf_state() if _get_tf_state is not None else None
        self._theirs = mode_stack()  # the caller's modes: put back as they are when the call ends
        self.calls.push(Frame(module, root, leaf=not module._modules))
        self.ops.set_running(True)
        stance = False
        self._probes_stopped = False  # (clean-up steps done)
        try:
            if self.probes is not None:
                self.probes.start(root, module)
            stance = True  # (before: a release without the acquire does nothing)
            EAGER_STANCE.acquire(self)  # torch.compile'd code inside runs eagerly (compiled.py)
            # ours at the bottom: the caller's modes see the model's calls as without us, and
            # none of tensorview's own (which run with torch functions off)
            set_mode_stack([self.mode, *hidden_modes(), *self._theirs])
            if inference:  # no version counters: catch writes (inference.py)
                writes = self.ops.inference_writes()
                assert writes is not None
                writes.push()
            with _Disable():
                args, kwargs = self._wrap_inputs(module, args, kwargs)
            interrupts.allow()
            out = call(module, *args, **kwargs)
            interrupts.block()
            with _Disable():
                self.methods.close_methods(failed=False)
                out = self.calls.leave(root, out, self.calls.frames()[-1])
                out = self._unwrap_outputs(out)
            # an op or call that raised but was caught inside forward stays marked failed,
            # but the forward as a whole succeeded
            self.failure.forget()
        except BaseException as e:
            interrupts.block()
            close_mode_guards(e.__traceback__)
            with _Disable():
                self.methods.close_methods(failed=True)
            self.builder.fail_call(root)
            self.failure.failed(e, "", None)
            raise
        finally:
            # each step to its end, also when an asynchronous exception lands in one
            caught = interrupts.run_steps(
                lambda: self._restore_state(tf_state),
                lambda: self._end_probes(),
                lambda: self._strip(module, args, kwargs),
                lambda: self._forget(),
                lambda: self._release_stance(stance),
            )
            if caught is not None:
                raise caught
        return out

    def _restore_state(self, tf_state: Any) -> None:
        interrupts.block()
        if tf_state is not None:  # a `with _Disable()` left by an interrupt in our code
            _set_tf_state(tf_state)
        self._pop_mode()
        if self.undo is not None:  # modules converted inside forward (convert.py)
            self.undo.restore(self.kept)
        if self.kept is not None:  # parameters the forward wrote in place (keep.py)
            self.kept.restore()

    def _end_probes(self) -> None:
        sources = self.bindings.all_sources()
        placed = placements(sources)  # DTensors: where each is sharded (dtensors.py)
        stale_reads(self.graph, sources, self.stand_ins, self.paths.known)  # redirect.py
        if placed:
            self.graph.annotations.set(PLACEMENT_LAYER, placed)
        probes = self.probes
        if probes is not None and not self._probes_stopped:
            self._probes_stopped = True
            probes.stop()
            for name, values in probes.layers().items():
                self.graph.annotations.set(name, values)

    def _strip(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        with _Disable():
            strip_escaped(module, args, kwargs, self.originals.theirs)

    def _forget(self) -> None:
        self.done = True
        self.ops.close()
        self.calls.close()
        self.paths.close()
        self.bindings.close()
        self.originals.close()
        self.transforms.clear()
        self.crossings.clear()
        self.methods.close()
        self.mode.close()
        # what only recording needed: a kept Recorder holds the graph and little else
        self.tree.clear()
        self.builder.close()

    def _release_stance(self, stance: bool) -> None:
        if stance:  # (idempotent: a step retried after an interrupt releases once)
            EAGER_STANCE.release(self)

    def _pop_mode(self) -> None:
        """Take our mode off the stack, with any a failed forward left: the caller's modes
        stay, as they were (idempotent)."""
        theirs = self._theirs
        if theirs is not None and mode_stack() != theirs:
            set_mode_stack(theirs)

    def _wrap_inputs(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        try:
            sig = forward_signature(module.forward)
            bound = sig.bind_partial(*args, **kwargs)
            names = list(bound.arguments)
            values = list(bound.arguments.values())
            kinds = {p.name: p.kind for p in sig.parameters.values()}
        except (TypeError, ValueError):
            bound = None
        root = self.calls.scope()
        b = self.bindings

        def wrap_under(prefix: str) -> Callable[[torch.Tensor, str], torch.Tensor]:
            def wrap(t: torch.Tensor, sub: str) -> torch.Tensor:
                name = prefix + ("_" + sub if sub else "")
                node = b.new_tensor(t, name, "input", root, source_name=name)
                self.builder.add_input(node)
                ours = b.bind(t, node)
                value = value_of(t)
                if value is not None and ours is not t:  # its values, known on meta (values.py)
                    ours._tv_val = value  # type: ignore[attr-defined]
                    self.ops.follow_values()
                return self.originals.stands_for(ours, t)

            return wrap

        def hold_under(prefix: str) -> Callable[[torch.Tensor, str], None]:
            def hold(t: torch.Tensor, sub: str) -> None:  # held by an object: known by its id
                name = prefix + ("_" + sub if sub else "")
                node = b.new_tensor(t, name, "input", root, source_name=name)
                self.builder.add_input(node)
                b.track(t, node)

            return hold

        def wrap_value(value: Any, name: str) -> Any:
            return map_tensors(value, wrap_under(name), with_path=True, objects=hold_under(name))

        if bound is None:
            args = tuple(wrap_value(a, f"input_{i}") for i, a in enumerate(args))
            kwargs = {k: wrap_value(v, k) for k, v in kwargs.items()}
            return args, kwargs
        new_args: list[Any] = []
        new_kwargs: dict[str, Any] = {}
        for name, value in zip(names, values):
            kind = kinds.get(name)
            if kind == inspect.Parameter.VAR_POSITIONAL:
                new_args.extend(wrap_value(v, f"{name}_{i}") for i, v in enumerate(value))
            elif kind == inspect.Parameter.VAR_KEYWORD:
                for k, v in value.items():
                    new_kwargs[k] = wrap_value(v, k)
            elif kind == inspect.Parameter.KEYWORD_ONLY or name in kwargs:
                new_kwargs[name] = wrap_value(value, name)
            else:
                new_args.append(wrap_value(value, name))
        return tuple(new_args), new_kwargs

    def _unwrap_outputs(self, out: Any) -> Any:
        names = output_names(out)  # where each tensor is in what forward returned
        b = self.bindings

        def unwrap(t: torch.Tensor) -> torch.Tensor:
            self.builder.mark_output(b.node_of(t), *names.get(id(t), (None, None)))
            return self.originals.theirs(t) if type(t) is _RT else t

        def recorded(t: torch.Tensor) -> bool:  # ours, or another subclass we track (fake)
            return type(t) is _RT or (type(t) not in PLAIN_TYPES and b.tracked(t))

        out = map_tensors(out, unwrap)
        strip_in_place(out, recorded, unwrap)  # e.g. a KV cache object returned
        return out

"""The root boundary: the root call's inputs become ``input`` nodes (wrapped as
RecorderTensors), its outputs ``output`` nodes (unwrapped to plain tensors), and when
the call ends, also by an exception, no RecorderTensor is left anywhere the caller can
reach."""

from __future__ import annotations

import gc
import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from . import interrupts
from .calls import ModuleScope
from .compiled import EAGER_STANCE
from .dtensors import PLACEMENT_LAYER, placements
from .inference import InferenceWrites
from .modes import close_mode_guards, hidden_modes, mode_stack, set_mode_stack
from .modulecall import MODULE_CALL
from .optable import MODULE_ATTRS, PLAIN_TYPES, version
from .redirect import stale_reads
from .state import Frame
from .tensor import RecorderTensor
from .tree import ATOM_TYPES, flat_tensors, map_tensors, output_names, strip_in_place
from .values import value_of

_Disable = torch._C.DisableTorchFunction
_Tensor = torch.Tensor
_RT = RecorderTensor
#: the thread's torch-function switch (torch >= 2.4), put back when the root call ends
_get_tf_state: Any = getattr(torch._C, "_get_torch_function_state", None)
_set_tf_state: Any = getattr(torch._C, "_set_torch_function_state", None)


class RootBoundary(ModuleScope):
    _mode: TorchFunctionMode
    _theirs: list[Any] | None = None  # the modes on the stack when the root call started
    _probes_stopped = _reguarded = _stance_released = False

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
            if self.device is None and first is not None and first.device.type != "cpu":
                self.device = first.device
            on_meta = (first is not None and first.is_meta) or (self.device is not None and self.device.type == "meta")
            inference = torch.is_inference_mode_enabled() or (first is not None and first.is_inference())
        if not on_meta:
            self.meta_cache = None  # replay is for meta only: keep it off the hot path elsewhere
        with _Disable():
            root = self.new_module(module, "", None)
        # Ctrl-C is deferred here (interrupts.py) except while the forward itself runs; the
        # finally undoes whatever of this setup happened, also after an ordinary exception
        tf_state = _get_tf_state() if _get_tf_state is not None else None
        self._theirs = mode_stack()  # the caller's modes: put back as they are when the call ends
        self.stack.append(Frame(module, root, leaf=not module._modules))
        self.running = True
        stance = unguarded = False
        self._probes_stopped = self._reguarded = self._stance_released = False  # (clean-up steps done)
        try:
            if self.probes is not None:
                self.probes.start(root, module)
            EAGER_STANCE.acquire()  # torch.compile'd code inside runs eagerly (compiled.py)
            stance = True
            if EAGER_STANCE.eager:  # nothing is traced now: module calls skip the Dynamo guard
                MODULE_CALL.unguard()
                unguarded = True
            # ours at the bottom: the caller's modes see the model's calls as without us, and
            # none of tensorview's own (which run with torch functions off)
            set_mode_stack([self._mode, *hidden_modes(), *self._theirs])
            if inference:
                self.writes = InferenceWrites()  # no version counters: catch writes (inference.py)
                self.writes.push()
            with _Disable():
                args, kwargs = self._wrap_inputs(module, args, kwargs)
            interrupts.allow()
            out = call(module, *args, **kwargs)
            interrupts.block()
            with _Disable():
                self.close_methods(failed=False)
                out = self.leave(root, out, self.stack[-1])
                out = self._unwrap_outputs(out)
            # an op or call that raised but was caught inside forward stays marked failed,
            # but the forward as a whole succeeded
            self.failure = self.failure_exc = None
        except BaseException as e:
            interrupts.block()
            close_mode_guards(e.__traceback__)
            with _Disable():
                self.close_methods(failed=True)
            self.builder.fail_call(root)
            self.failed(e, "", None)
            raise
        finally:
            # each step to its end, also when an asynchronous exception lands in one
            caught = interrupts.run_steps(
                lambda: self._restore_state(tf_state),
                lambda: self._end_probes(),
                lambda: self._strip(module, args, kwargs),
                lambda: self._forget(),
                lambda: self._release_stance(unguarded, stance),
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
        placed = placements(self.sources)  # DTensors: where each is sharded (dtensors.py)
        stale_reads(self.graph, self.sources, self.stand_ins, self.module_names)  # redirect.py
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
            self._strip_escaped(module, args, kwargs)

    def _forget(self) -> None:
        self.running = False
        self.done = True
        self.stack.clear()
        self.sources.clear()
        self.mutations.clear()
        self.data_links.clear()
        self.unwrapped.clear()
        self.originals.clear()
        self.plain_of.clear()
        if self.writes is not None:
            self.writes.close()
            self.writes = None
        self.leaky.clear()
        # what only recording needed: a kept Recorder holds the graph and little else
        self.module_names.clear()
        self.found_modules.clear()
        self.tree.clear()
        self.param_names.clear()
        self.shapes.clear()
        self.builder.close()

    def _release_stance(self, unguarded: bool, stance: bool) -> None:
        if unguarded and not self._reguarded:
            MODULE_CALL.reguard()
            self._reguarded = True
        if stance and not self._stance_released:
            EAGER_STANCE.release()
            self._stance_released = True

    def _pop_mode(self) -> None:
        """Take our mode off the stack, with any a failed forward left: the caller's modes
        stay, as they were (idempotent)."""
        theirs = self._theirs
        if theirs is not None and mode_stack() != theirs:
            set_mode_stack(theirs)

    def _strip_escaped(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """No RecorderTensor may outlive the recording: not in a cache object the caller
        passed in and the model updated, nor in an attribute the forward stored on a module."""

        def is_ours(t: Any) -> bool:
            return type(t) is _RT

        plain = self.theirs
        strip_in_place((args, kwargs), is_ours, plain)
        seen: set[int] = set()
        stack = [module]
        while stack:  # module.modules(), without its generator per level
            m = stack.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            stack.extend([c for c in m._modules.values() if c is not None])
            for k, b in m._buffers.items():  # assigned in forward (``self.buf = self.buf.to(...)``)
                if type(b) is _RT:
                    m._buffers[k] = plain(b)
            for p in m._parameters.values():  # made in forward (``self.w = nn.Parameter(x)``)
                if type(p) is _RT:  # (a leaf: torch allows no other) one object, as without us
                    p.__class__ = nn.Parameter
                    for attr in ("_tv_node", "_tv_ver", "_tv_tok"):
                        p.__dict__.pop(attr, None)
            d = m.__dict__
            for k in d.keys() - MODULE_ATTRS:  # only what the model itself stored
                v = d[k]
                t = type(v)
                if t in ATOM_TYPES:
                    continue
                if t is _RT:
                    d[k] = plain(v)
                elif t is tuple and all(type(x) in ATOM_TYPES for x in v):
                    continue  # kernel_size=(3, 3) and the like: nothing to look into
                elif isinstance(v, (_Tensor, list, tuple, dict)):
                    d[k] = strip_in_place(v, is_ours, plain, objects=False)

    def _wrap_inputs(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        try:
            bound = inspect.signature(module.forward).bind_partial(*args, **kwargs)
            names = list(bound.arguments)
            values = list(bound.arguments.values())
            kinds = {p.name: p.kind for p in inspect.signature(module.forward).parameters.values()}
        except (TypeError, ValueError):
            bound = None
        root = self.scope()

        def wrap_under(prefix: str) -> Callable[[torch.Tensor, str], torch.Tensor]:
            def wrap(t: torch.Tensor, sub: str) -> torch.Tensor:
                name = prefix + ("_" + sub if sub else "")
                node = self.new_tensor(t, name, "input", root, source_name=name)
                self.builder.add_input(node)
                ours = self.bind(t, node)
                value = value_of(t)
                if value is not None and ours is not t:  # its values, known on meta (values.py)
                    ours._tv_val = value  # type: ignore[attr-defined]
                    self.values = True
                return self.stands_for(ours, t)

            return wrap

        def hold_under(prefix: str) -> Callable[[torch.Tensor, str], None]:
            def hold(t: torch.Tensor, sub: str) -> None:  # held by an object: known by its id
                name = prefix + ("_" + sub if sub else "")
                node = self.new_tensor(t, name, "input", root, source_name=name)
                self.builder.add_input(node)
                self.sources[id(t)] = [t, node, version(t)]

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

        def unwrap(t: torch.Tensor) -> torch.Tensor:
            self.builder.mark_output(self.node_of(t), *names.get(id(t), (None, None)))
            return self.theirs(t) if type(t) is _RT else t

        def recorded(t: torch.Tensor) -> bool:  # ours, or another subclass we track (fake)
            return type(t) is _RT or (type(t) not in PLAIN_TYPES and id(t) in self.sources)

        out = map_tensors(out, unwrap)
        strip_in_place(out, recorded, unwrap)  # e.g. a KV cache object returned
        return out

"""How a recorded op is run when more than the op itself must happen: probes around it
(``run``), meta replay (``call_meta_cached``), other tensor subclasses among its
arguments (``call_foreign``), a meta kernel that refused (``refused``).  The common case
runs the op directly (ops.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..graph import FunctionNode, ModuleNode
from .gradreplay import grad_replay
from .inference import InferenceWrites
from .metacache import MISS, flat_args, key_of, replay, template_of
from .metafills import fill_for
from .optable import version
from .probes import Probes
from .state import Failure
from .tensor import RecorderTensor, alias_as
from .tree import map_tensors

_Disable = torch._C.DisableTorchFunction
_Tensor = torch.Tensor
_RT = RecorderTensor
_functorch_active = torch._C._are_functorch_transforms_active


class OpRunner:
    """Runs recorded ops that need more than a call: owns the meta replay cache and the
    probes' memos of one recording."""

    def __init__(
        self,
        probes: Probes | None,
        meta_replay: bool,
        running: Callable[[bool], None],
    ) -> None:
        self.probes = probes
        #: (op, argument metadata) -> how to replay its results on meta (see metacache.py)
        self.meta_cache: dict[Any, Any] | None = {} if meta_replay else None
        #: (op, argument metadata) -> the probes' memos of the op a replay stands for
        self.meta_memos: dict[Any, tuple[Any, ...]] = {}
        self._memos: tuple[Any, ...] = ()
        self.meta_hits = 0
        self._failed: Callable[[BaseException, str, FunctionNode | None], None] = _unset
        self._running = running

    def connect(self, failure: Failure) -> None:
        """Where an op that failed is noted."""
        self._failed = failure.failed

    def close(self) -> None:
        """The recording ended: its on/off switch is let go (no reference cycle)."""
        self._running = _ignore

    def replaying(self) -> bool:
        """Meta replay is on (until ``meta_off``)."""
        return self.meta_cache is not None

    def meta_off(self) -> None:
        """Replay is for meta only: off for a recording elsewhere."""
        self.meta_cache = None

    def hits(self) -> int:
        """How many ops were replayed."""
        return self.meta_hits

    def around(
        self,
        func: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        ins: list[torch.Tensor],
        foreign: bool,
        fn: FunctionNode,
        scope: ModuleNode,
        writes: InferenceWrites | None,
        meta: Any,
    ) -> Any:
        """Run op ``fn`` with what must happen around it: probes, meta replay (``meta``),
        inference writes, other tensor subclasses; its result."""
        probes = self.probes
        if probes is not None and probes.substitutes:  # a probe runs its own function (probes.py)
            func = probes.substitute(func)
        # (``writes``: inference tensors met, the op's writes are caught by schema)
        if writes is not None and not writes.on_stack:  # (else caught for the whole root call)
            writes.catcher.__enter__()
        try:
            if foreign:
                out = self.run(self.call_foreign, func, args, kwargs, fn)
            else:
                with _Disable():
                    if meta is None:
                        out = self.run(func, args, kwargs, None, fn)
                    else:
                        out = meta(func, args, kwargs, ins, fn)
        except BaseException as e:
            out = self.refused(e, func, args, kwargs, fn, scope)
        finally:
            if writes is not None and not writes.on_stack:
                writes.catcher.__exit__(None, None, None)
        return out

    def run(self, call: Any, a: Any, b: Any, c: Any, fn: FunctionNode) -> Any:
        """``call(a, b, c)`` (or ``call(*a, **b)`` when ``c`` is None) between the probes'
        ``enter_op`` and ``exit_op``; the probes' memos are left in ``self._memos``."""
        probes = self.probes
        if probes is None:
            return call(*a, **b) if c is None else call(a, b, c)
        if c is None:  # (the op's own arguments: else a fill or another subclass runs it)
            func, args, kwargs = call, a, b
        else:
            func, args, kwargs = a, None, None
        one = probes.op_hooks_of_one
        out = None  # (the probes are told the result: None where the op raised)
        if one is not None:  # one probe (the common case): its methods, called directly
            enter, exit_op = one
            enter(fn, func, args, kwargs)
            try:
                out = call(*a, **b) if c is None else call(a, b, c)
                return out
            finally:
                self._memos = (exit_op(fn, func, out),)
        probes.enter_op(fn, func, args, kwargs)
        try:
            out = call(*a, **b) if c is None else call(a, b, c)
            return out
        finally:
            self._memos = probes.exit_op(fn, func, out)

    def call_meta_cached(
        self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], ins: list[torch.Tensor], fn: FunctionNode
    ) -> Any:
        """Op ``fn`` on meta, replayed when seen before (metacache.py); called with torch
        functions switched off."""
        cache = self.meta_cache
        assert cache is not None
        # (inside a vmap a result is a batched tensor, which a replay would not make)
        if _functorch_active():
            return self.run(func, args, kwargs, None, fn)
        key = key_of(func, args, kwargs)
        if key is None:  # (grad on and tensors that need it: replayed below autograd, gradreplay.py)
            below = grad_replay(cache)
            if below is None:
                return self.run(func, args, kwargs, None, fn)
            with below:
                return self.run(func, args, kwargs, None, fn)
        template = cache.get(key)
        if template is not None and template is not MISS:
            self.meta_hits += 1
            if self.probes is not None:
                self.probes.replay_op(fn, func, self.meta_memos[key])
            return replay(template, ins)
        if template is MISS:
            return self.run(func, args, kwargs, None, fn)
        before = [version(t) for t in ins]
        out = self.run(func, args, kwargs, None, fn)
        cache[key] = template_of(out, ins, before, flat=flat_args(args, kwargs))
        if self.probes is not None:
            self.meta_memos[key] = self._memos
        return out

    def refused(
        self,
        exc: BaseException,
        func: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        fn: FunctionNode,
        scope: ModuleNode,
    ) -> Any:
        """Op ``fn`` (``func`` in ``scope``) raised ``exc``: its result from a fill where
        torch's meta kernel refused what the real kernels take (metafills.py); else the op
        failed and ``exc`` goes on."""
        fill = fill_for(func, args, kwargs, exc)
        if fill is not None:
            try:
                with _Disable():  # (probes are told the op is ``func``, as for the op itself)
                    return self.run(_call_fill, func, fill, (), fn)
            except BaseException as e:
                exc = e
        self._failed(exc, scope.path, fn)
        raise exc

    def call_foreign(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call with other tensor subclasses present: let their ``__torch_function__`` run,
        with our own tensors handed over as plain aliases (so we are not asked again)."""
        back: dict[int, torch.Tensor] = {}

        def plain(t: torch.Tensor) -> torch.Tensor:
            if type(t) is _RT:
                p = alias_as(t, _Tensor)
                back[id(p)] = t
                return p
            return t

        with _Disable():
            args2 = tuple(map_tensors(a, plain) for a in args)
            kwargs2 = {k: map_tensors(v, plain) for k, v in kwargs.items()}
        # one op here, whatever the subclass runs for it: a DTensor's local tensor may be one
        # of ours, and its kernels Python on meta (decompositions) but C++ on the CPU, so
        # recording inside would give another graph on every device
        self._running(False)
        try:
            out = func(*args2, **kwargs2)
        finally:
            self._running(True)

        def ours_again(t: torch.Tensor) -> torch.Tensor:
            r = back.get(id(t))
            return t if r is None else r

        return map_tensors(out, ours_again)


def _unset(exc: BaseException, path: str, op: FunctionNode | None) -> None:
    raise exc


def _ignore(running: bool) -> None:
    """The switch of a recording that has ended."""


def _call_fill(func: Any, fill: Any, _: Any) -> Any:
    """``_run``'s call for a fill standing in for op ``func``."""
    return fill()

"""How a recorded op is run when more than the op itself must happen: probes around it
(``_run``), meta replay (``_call_meta_cached``), other tensor subclasses among its
arguments (``_call_foreign``), a meta kernel that refused (``_refused``).  The common case
runs the op directly (ops.py)."""

from __future__ import annotations

from typing import Any

import torch

from ..graph import FunctionNode, ModuleNode, TensorNode
from .gradreplay import grad_replay
from .inference import storage_id
from .metacache import MISS, flat_args, key_of, replay, template_of
from .metafills import fill_for
from .methods import MethodScope
from .optable import DATA_SET, storage_key, version
from .tensor import RecorderTensor, alias_as
from .tree import map_tensors

_Disable = torch._C.DisableTorchFunction
_Tensor = torch.Tensor
_RT = RecorderTensor
_functorch_active = torch._C._are_functorch_transforms_active


class OpCalls(MethodScope):
    def _op(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError  # ops.py

    def _data_access(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``p.data`` (``func`` is its getter) or ``p.data = x`` (its setter), recorded as
        an op ``data``.  The alias ``p.data`` has a version counter of its own, and the
        setter replaces ``p``'s contents without moving ``p``'s: both are noted as links
        (``data_links``), so that a write through the alias (``p.data.mul_(m)``: an EMA
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
            scope = self.graph.module(fn.parent) if fn.parent is not None else self.scope()
            alias = out if not setter else args[1] if len(args) > 1 else None
            if isinstance(alias, _Tensor):
                key, owner = storage_key(alias, self.writes is not None)
                self.data_links[key] = (owner, p)
            if setter:
                self.rebind(p, self.new_result(p, scope, fn), fn, scope)
        return out

    def aliased_write(self, t: torch.Tensor) -> tuple[Any, int] | None:
        """The last write of ``t``'s storage made through another tensor that owns no view
        of it (``p.detach().mul_(m)``, the values of ``state_dict()``: ``t``'s version
        counter moved, but ``mutations`` knows the writer's owner, not ``t``'s): (owner,
        op id), or None.  Looked for only when ``t`` changed and its own owner was not
        written: a walk over the storages written."""
        sid = storage_id(t)
        best: tuple[Any, int] | None = None
        if sid is not None:
            for owner, fid in self.mutations.values():
                if owner is not None and (best is None or fid > best[1]) and storage_id(owner) == sid:
                    best = (owner, fid)
        return best

    def rebind(self, t: torch.Tensor, node: TensorNode, fn: FunctionNode, scope: ModuleNode) -> None:
        """``t`` was written by op ``fn`` through an alias that shares no version counter
        with it (``data_links``): its node is now ``node`` (the alias's new version), or a
        node of its own made by ``fn`` where the alias was a view of another shape."""
        if tuple(t.shape) != node.shape:
            node = self.new_result(t, scope, fn)
        if type(t) is _RT and t._tv_tok is self.token:
            t._tv_node, t._tv_ver = node, version(t)
        else:
            self.sources[id(t)] = [t, node, version(t)]

    def _run(self, call: Any, a: Any, b: Any, c: Any, fn: FunctionNode) -> Any:
        """``call(a, b, c)`` (or ``call(*a, **b)`` when ``c`` is None) between the probes'
        ``enter_op`` and ``exit_op``; the probes' memos are left in ``self._memos``."""
        probes = self.probes
        if probes is None:
            return call(*a, **b) if c is None else call(a, b, c)
        func = a if c is not None else call
        probes.enter_op(fn, func)
        try:
            return call(*a, **b) if c is None else call(a, b, c)
        finally:
            self._memos = probes.exit_op(fn, func)

    def _call_meta_cached(
        self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], ins: list[torch.Tensor], fn: FunctionNode
    ) -> Any:
        """Op ``fn`` on meta, replayed when seen before (metacache.py); called with torch
        functions switched off."""
        cache = self.meta_cache
        assert cache is not None
        # (inside a vmap a result is a batched tensor, which a replay would not make)
        if _functorch_active():
            return self._run(func, args, kwargs, None, fn)
        key = key_of(func, args, kwargs)
        if key is None:  # (grad on and tensors that need it: replayed below autograd, gradreplay.py)
            below = grad_replay(cache)
            if below is None:
                return self._run(func, args, kwargs, None, fn)
            with below:
                return self._run(func, args, kwargs, None, fn)
        template = cache.get(key)
        if template is not None and template is not MISS:
            self.meta_hits += 1
            if self.probes is not None:
                self.probes.replay_op(fn, func, self.meta_memos[key])
            return replay(template, ins)
        if template is MISS:
            return self._run(func, args, kwargs, None, fn)
        before = [version(t) for t in ins]
        out = self._run(func, args, kwargs, None, fn)
        cache[key] = template_of(out, ins, before, flat=flat_args(args, kwargs))
        if self.probes is not None:
            self.meta_memos[key] = self._memos
        return out

    def _refused(
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
                    return self._run(_call_fill, func, fill, (), fn)
            except BaseException as e:
                exc = e
        self.failed(exc, scope.path, fn)
        raise exc

    def _call_foreign(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
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
        self.running = False
        try:
            out = func(*args2, **kwargs2)
        finally:
            self.running = True

        def ours_again(t: torch.Tensor) -> torch.Tensor:
            r = back.get(id(t))
            return t if r is None else r

        return map_tensors(out, ours_again)


def _call_fill(func: Any, fill: Any, _: Any) -> Any:
    """``_run``'s call for a fill standing in for op ``func``."""
    return fill()

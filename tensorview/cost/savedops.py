"""Bytes saved for backward by ops seen before, filed without the saved-tensor hooks.

:class:`~.memory.SavedTensors` sees what autograd saves through a pack hook: a call from
C++ into Python and a detached alias per tensor saved, about 3 µs for an op on the CPU.
The cost probe runs an op whose signature (:func:`~.signature.op_signature`) it has seen
before with the hooks off (popped for the op alone, where they are the innermost hooks),
and files what the op saves from a *pattern* learnt the first time: which of the op's
tensor arguments (in the order the signature met them) or results each saved storage
was.  Filed by pattern, an entry is the one the hook would have made: the same storage
(its address and size, read when the op returned), the same parameter flag, the storage
kept alive while the hooks are active; so each storage still counts once per key, per
module call and in the whole forward, as before.

A pattern is learnt only where it is certain: every tensor saved while the op ran was
filed under the op's key, with a storage of its own, and that storage is the storage of
exactly one argument, or else of exactly one result and of no argument; the size the
hook read is the size the pattern reads, and so is the parameter flag.  An op that saves
a tensor made inside it (dropout's mask, batch norm's statistics), one read from
elsewhere, or one that calls a recorded module that saves, keeps its hooks on for good.
An op that saved nothing keeps them on too (they are not called: popping them would cost
more).  As for FLOPs, the signature is taken to decide what the op saves.  An op replayed so that
raises files nothing (what ran before the error is not known); a pattern is learnt from an
op that returned something.
"""

from __future__ import annotations

from typing import Any

import torch

from .memory import SavedTensors, _parameter

__all__ = ["SAVES", "SeenSaves"]

_autograd = torch._C._autograd
_top = _autograd._top_saved_tensors_default_hooks
_pop = _autograd._pop_saved_tensors_default_hooks
_push = _autograd._push_saved_tensors_default_hooks
_Tensor = torch.Tensor
#: a signature whose op is never replayed (its saves are not a pattern)
_NEVER: tuple[Any, ...] = ()
#: a signature whose op saves nothing (run with the hooks, which are not called)
_NOTHING: tuple[Any, ...] = ((), 0, False)
_LEARN = object()
#: the slot of what is known of a signature that holds what its op saves
SAVES = 1


def _outputs(out: Any, acc: list[torch.Tensor], depth: int = 0) -> list[torch.Tensor]:
    """The tensors of an op's result, in order (into tuples and lists, a few levels)."""
    if isinstance(out, _Tensor):
        acc.append(out)
    elif isinstance(out, (tuple, list)) and depth < 4:
        for o in out:
            _outputs(o, acc, depth + 1)
    return acc


def _storage(t: torch.Tensor) -> Any:
    try:
        return t.untyped_storage()
    except (RuntimeError, NotImplementedError, TypeError):
        return None


class SeenSaves:
    """Learns and replays what ops save (module docstring), for one :class:`SavedTensors`
    while its hooks are active.  ``enter`` before the op, with what is known of its
    signature (``known``: a list whose slot ``SAVES`` this class fills: the pattern, or
    ``_NEVER``) and the tensors of its arguments; ``exit`` after it with the state
    ``enter`` returned.  A pattern is ``(argument index, or ~result index, per tensor
    saved; how many tensors the result has; whether any is a result's)``."""

    def __init__(self, saved: SavedTensors) -> None:
        self.saved = saved
        self.off = False  # the hooks are popped for an op now
        self._hook = saved._pack_hook

    def enter(self, known: list[Any], tensors: list[torch.Tensor]) -> Any:
        """Before the op runs: None (nothing to do), or the state to give ``exit``."""
        pattern = known[SAVES]
        if pattern is _NEVER or pattern is _NOTHING or self.off:  # (nothing saved: the hooks cost nothing)
            return None
        top = _top(False)
        if top is None or top[0] is not self._hook:  # (hooks of the model's own are innermost)
            return None
        if pattern is None:  # first seen: learn from what the hooks file
            return (_LEARN, known, tensors, len(self.saved._pending))
        _pop()
        self.off = True
        return (pattern, tensors)

    def exit(self, state: Any, key: Any, out: Any) -> None:
        """After the op (``out`` its result, None where it raised)."""
        pattern, tensors = state[0], state[1]
        if pattern is _LEARN:
            self._learn(state, key, out)
            return
        saved = self.saved
        if self.off:
            _push(self._hook, saved._unpack)
            self.off = False
        if out is None:  # (it raised)
            return
        refs, n_out, results = pattern
        if results:
            outs = [out] if n_out == 1 and isinstance(out, _Tensor) else _outputs(out, [])
            if len(outs) != n_out:
                return
        param_cdata, pending, alive = saved._param_cdata, saved._pending, saved._alive
        for ref in refs:
            t = tensors[ref] if ref >= 0 else outs[~ref]
            s = t.untyped_storage()
            cdata = s._cdata
            alive.append(s)
            param = cdata in param_cdata or _parameter(t) or (t._is_view() and _parameter(t._base))
            pending.append((key, cdata, s.nbytes(), param))

    def undo(self) -> None:
        """The hooks back where an op left them off (it ended by an exception between
        ``enter`` and ``exit``)."""
        if self.off:
            _push(self._hook, self.saved._unpack)
            self.off = False

    def _learn(self, state: Any, key: Any, out: Any) -> None:
        _, known, tensors, mark = state
        if out is None or known[SAVES] is not None:  # (it raised or returned nothing; learnt inside it)
            return
        outs = _outputs(out, [])
        stores = [_storage(t) for t in tensors]
        out_stores = [_storage(t) for t in outs]
        ids = [s._cdata if s is not None else None for s in stores]
        out_ids = [s._cdata if s is not None else None for s in out_stores]
        refs: list[int] = []
        for k, cdata, nbytes, param in self.saved._pending[mark:]:
            hits = [i for i, c in enumerate(ids) if c == cdata]
            if not hits:
                hits = [~j for j, c in enumerate(out_ids) if c == cdata]
            if k != key or cdata < 0 or len(hits) != 1:
                known[SAVES] = _NEVER
                return
            ref = hits[0]
            t, s = (tensors[ref], stores[ref]) if ref >= 0 else (outs[~ref], out_stores[~ref])
            flag = cdata in self.saved._param_cdata or _parameter(t) or (t._is_view() and _parameter(t._base))
            if s.nbytes() != nbytes or flag != param:
                known[SAVES] = _NEVER
                return
            refs.append(ref)
        known[SAVES] = (tuple(refs), len(outs), any(r < 0 for r in refs)) if refs else _NOTHING

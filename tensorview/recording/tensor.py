"""``RecorderTensor``: the tensor subclass that carries its graph node through the forward."""

from __future__ import annotations

import threading
import types
from typing import Any

import torch

#: the recording session of this thread (threading.local: other threads never see it)
_tls = threading.local()


def current_session() -> Any:
    return getattr(_tls, "session", None)


_grad_enabled = torch.is_grad_enabled
_set_grad_enabled = torch._C._set_grad_enabled


def alias_as(t: torch.Tensor, cls: type[torch.Tensor]) -> Any:
    """``t.as_subclass(cls)``, made with grad mode on.  ``as_subclass`` makes a view of
    ``t``, and PyTorch forbids writing in place with grad on to a view made under
    ``no_grad``: a result made in a ``@torch.no_grad()`` forward and written by the caller
    (``p = self.pos(ids); p += emb``, Kosmos-2.5 under ``tv.summary``) would raise where
    ``t`` itself may be written.  Made with grad on, the alias may be written wherever
    ``t`` may (an alias of a view made under ``no_grad`` still inherits that mark)."""
    if _grad_enabled():
        return t.as_subclass(cls)
    try:  # (switched on inside the try: a Ctrl-C right after it still switches it off)
        _set_grad_enabled(True)
        return t.as_subclass(cls)
    finally:
        _set_grad_enabled(False)


_next_seq = torch._C._autograd._get_sequence_nr
#: ``made_by_op``'s ``since`` for a result that ``owned`` proved to be the op's own
OWNED = -1
_BUILTIN = (
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.MethodWrapperType,
    types.ClassMethodDescriptorType,
)
#: a TensorImpl's reference count (``None`` on a torch without it: results get aliases)
_use_count: Any = getattr(torch.Tensor, "_use_count", None)
#: the modules of torch's Python ops that run no code of the user's (``Function.apply``,
#: a ``torch.library`` op or another package's function may keep what it returns)
_OWN_MODULES = frozenset(("torch", "torch.functional", "torch.nn.functional", "torch._tensor"))
#: op -> whether it is C++ or one of those: it keeps no result where Python reaches it again
_TORCH_OWN: dict[Any, bool] = {}


def owned(t: torch.Tensor, func: Any) -> int | None:
    """With grad off, where autograd cannot tell (``made_by_op``): ``OWNED`` when op
    ``func``'s fresh result ``t`` (no argument of the op) is held by nothing but its own
    Python object (its TensorImpl's use count is 1) and ``func`` is torch's own (C++, or
    one of ``_OWN_MODULES``), else None.
    Then ``t`` becomes the RecorderTensor itself (an alias costs ``as_subclass``)."""
    own = _TORCH_OWN.get(func)
    if own is None:
        module = getattr(func, "__module__", None)
        own = _TORCH_OWN[func] = isinstance(func, _BUILTIN) or (type(module) is str and module in _OWN_MODULES)
    return OWNED if own and _use_count is not None and _use_count(t) == 1 else None


def made_by_op(t: torch.Tensor, since: int) -> bool:
    """With grad on, whether op's result ``t`` is a new tensor of the op's own (autograd
    made its node, number ``since`` or later, while the op ran); if so, ``t`` becomes the
    RecorderTensor itself (its class is set) instead of getting an alias: autograd counts
    an alias as a view of ``t``, so an in-place op on it would be drawn as ``CopySlices``
    and ``AsStridedBackward0`` instead of the op's own node, and save other tensors
    (``draw_graph(..., backward=True)``, saved bytes).  Nothing else holds ``t`` yet.
    Told without reading ``t.grad_fn``: a node keeps the Python object of its grad_fn for
    its life, and a chain of such nodes is freed recursively (a 40k-op chain recorded with
    grad overflowed the C stack when freed): ``t`` has a node, and the op made nodes.
    ``since=OWNED``: ``owned`` proved it, with grad off."""
    if since != OWNED and (t.is_leaf or _next_seq() <= since):
        return False
    t.__class__ = RecorderTensor
    return True


class RecorderTensor(torch.Tensor):
    """A tensor being recorded.  ``_tv_node`` is its current TensorNode (a new one after
    each in-place op), ``_tv_ver`` the version counter value that node stands for and
    ``_tv_tok`` the token of the session that made it.

    Every torch function, method, operator, indexing and in-place op applied to it goes
    through ``__torch_function__`` into the session of the recording thread.  While a
    recording runs, the session's TorchFunctionMode sees the same calls first (and also
    factory functions and ops on parameters), so this hook is the fallback for calls the
    mode does not see.

    One that outlives its recording (kept by a forward hook, say) is *stale*: a session
    trusts ``_tv_node`` only when ``_tv_tok`` is its own token, and treats any other as a
    plain tensor; outside a recording it behaves as one (``copy.deepcopy`` and pickling
    give plain tensors).
    """

    _tv_node: Any = None
    _tv_ver: int = -1
    _tv_tok: object | None = None

    def _live(self) -> bool:
        session = current_session()
        return session is not None and session.running and self._tv_tok is session.token

    def __deepcopy__(self, memo: dict[int, Any]) -> torch.Tensor:
        if self._live():
            return super().__deepcopy__(memo)
        with torch._C.DisableTorchFunction():
            plain = self.as_subclass(torch.Tensor)
        memo.setdefault(id(memo), []).append(plain)  # copy's keep-alive list: its id stays unique
        return plain.__deepcopy__(memo)

    def __reduce_ex__(self, proto: Any) -> Any:
        with torch._C.DisableTorchFunction():
            plain = self.as_subclass(torch.Tensor)
        return plain.__reduce_ex__(proto)

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        session = current_session()
        if kwargs is None:
            kwargs = {}
        if session is None or not session.running:
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)
        return session.handle(func, types, args, kwargs)


def unchanged_by(ins: list[torch.Tensor], out: torch.Tensor, token: object, sources: dict[int, list[Any]]) -> bool:
    """No argument of the op is ``out`` or was written by it (its version counter moved)."""
    try:
        for t in ins:
            old = t._tv_ver if type(t) is RecorderTensor and t._tv_tok is token else sources[id(t)][2]
            if out is t or t._version != old:
                return False
    except RuntimeError:  # an inference tensor (no version counter): the general way
        return False
    return True

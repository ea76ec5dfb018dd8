"""Tensors of functorch transforms inside a forward (``torch.vmap``, ``torch.func``).

Inside ``vmap(f)(x)``, ``f`` sees ``BatchedTensor``s: plain ``torch.Tensor`` objects that
wrap the real tensor (``x``) and hide its batch dimension, made by torch where no hook
sees (``_add_batch_dim``); ``f``'s results are unwrapped the same way when it returns
(``_remove_batch_dim``).  Ensembles (``stack_module_state`` + ``vmap(functional_call)``)
and per-sample gradients run so.  The session follows the wrapping:

* a wrapped tensor read inside the transform stands for the tensor it wraps (unwrapped
  level by level, ``get_unwrapped``): its edges come from the real inputs, parameters
  stacked by ``stack_module_state`` included;
* an op's wrapped result becomes a RecorderTensor itself (its class is set: an alias
  would wrap another tensor than the one vmap unwraps), and the tensor it wraps is noted
  (``unwrapped``, weakly: held by nothing of ours, intermediates are freed as without us):
  when vmap hands that tensor out with the batch dimension put back (or a view of it, for
  ``out_dims``), it is the result of a ``vmap`` FunctionNode reading the op's result
  inside, so the call's output is connected to what ran inside it.

Shapes inside a transform are the per-sample shapes the function sees; the ``vmap`` node's
result has the batched shape.  Checks cost one call into torch per op while no transform
is active (``_are_functorch_transforms_active``).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import torch

from ..graph import ModuleNode, NodeFactory, TensorNode
from .optable import version
from .tensor import RecorderTensor

if TYPE_CHECKING:
    from .bindings import Bindings
    from .calls import Calls

_F: Any = torch._C._functorch
#: whether a functorch transform (vmap, grad...) is running in this thread (a cheap test)
active: Any = torch._C._are_functorch_transforms_active
_RT = RecorderTensor
_MAX_LEVELS = 64


def wrapped(t: torch.Tensor) -> bool:
    """``t`` is a tensor a running functorch transform wrapped (a BatchedTensor...)."""
    return bool(active()) and bool(_F.is_functorch_wrapped_tensor(t))


def _forget(noted: dict[int, Any], key: int) -> Any:
    """A weak reference's callback: the entry ``key`` of ``noted`` goes with its tensor
    (an intermediate inside a vmap leaves no entry behind)."""

    def gone(ref: Any) -> None:
        hit = noted.get(key)
        if hit is not None and hit[0] is ref:
            del noted[key]

    return gone


class Transforms:
    """The tensors functorch transforms wrapped and may hand out, in one recording."""

    def __init__(self, builder: NodeFactory, bindings: Bindings, token: object) -> None:
        self.builder = builder
        self.bindings = bindings
        self.token = token
        #: tensors a vmap may hand out: id -> (weak reference to it, node of the result
        #: inside it stands for, the op that hands it out, weak reference to that result)
        self.unwrapped: dict[int, tuple[Any, TensorNode, str, Any]] = {}
        self._calls: Calls | None = None

    def connect(self, calls: Calls) -> None:
        """The call stack (the scope a vmap's node is made in)."""
        self._calls = calls

    def _scope(self) -> ModuleNode:
        assert self._calls is not None
        return self._calls.scope()

    def table(self) -> dict[int, Any]:
        """What a vmap may still hand out (read, never written, by calls.py's hot path)."""
        return self.unwrapped

    def pending(self) -> int:
        """How many tensors a vmap may still hand out (none: nothing to look for)."""
        return len(self.unwrapped)

    def clear(self) -> None:
        """The recording ended (idempotent; the call stack is let go: no reference cycle)."""
        self.unwrapped.clear()
        self._calls = None

    def seen_by_transform(self, t: torch.Tensor) -> bool:
        """``t``, not known otherwise, has a node through a transform: it wraps a recorded
        tensor, or a transform handed it out (``transformed_node`` makes that node)."""
        unwrapped = self.unwrapped
        if unwrapped and (id(t) in unwrapped or id(t._base) in unwrapped):
            return True  # (``transformed_node`` checks that it is the tensor noted)
        return wrapped(t)

    def adopt(self, t: torch.Tensor, scope: ModuleNode) -> torch.Tensor:
        """``t`` is returned by the call ``scope``, which is ending: if it is a vmap's
        result not read yet, its ``vmap`` node is made now, inside the call."""
        if type(t) is not _RT and not self.bindings.tracked(t):
            self._handed_out(t, scope)
        return t

    def transformed_node(self, t: torch.Tensor) -> TensorNode | None:
        """The node of ``t``, a tensor never seen, where a transform made it: the node of
        the tensor it wraps, or a ``vmap`` result (see the module docstring); None if
        neither (a constant)."""
        if self.unwrapped:
            node = self._handed_out(t, self._scope())
            if node is not None:
                return node
        if not wrapped(t):
            return None
        inner: Any = t
        for _ in range(_MAX_LEVELS):
            if not _F.is_functorch_wrapped_tensor(inner):
                return None
            inner = _F.get_unwrapped(inner)
            if self.bindings.tracked(inner):
                break
            if self.bindings.param_name(inner) is not None or (
                self.unwrapped and self._handed_out(inner, self._scope()) is not None
            ):
                break
        else:
            return None
        found = self.bindings.node_of(inner)
        self.bindings.track(t, found)
        return found

    def wrapped_result(self, t: torch.Tensor, node: TensorNode) -> torch.Tensor:
        """``t``, a wrapped tensor (an op's result inside a transform, or one returned
        unchanged by a module call there), is now ``node``: the object itself becomes a
        RecorderTensor bound to it."""
        r: Any = t
        if type(r) is not _RT:
            r.__class__ = _RT
        r._tv_node, r._tv_ver, r._tv_tok = node, version(r), self.token
        self.note_wrapped(r, node)
        return r

    def note_wrapped(self, t: torch.Tensor, node: TensorNode) -> None:
        """``t`` is now ``node``: if a transform wrapped it, each tensor it wraps, level by
        level, is what a transform may hand out for it (``vmap`` for a batched level,
        ``unwrap`` for another: ``grad``'s)."""
        if not active():
            return
        inner: Any = t
        outer = weakref.ref(t)
        for _ in range(_MAX_LEVELS):
            if not _F.is_functorch_wrapped_tensor(inner):
                return
            op = "vmap" if _F.is_batchedtensor(inner) else "unwrap"
            inner = _F.get_unwrapped(inner)
            key = id(inner)
            self.unwrapped[key] = (weakref.ref(inner, _forget(self.unwrapped, key)), node, op, outer)

    def _handed_out(self, t: torch.Tensor, scope: ModuleNode) -> TensorNode | None:
        """``t`` (or its base, for ``out_dims``) is a tensor vmap handed out: its node, made
        in ``scope`` by a ``vmap`` FunctionNode; None if it is not one."""
        key = id(t)
        hit = self.unwrapped.get(key)
        if hit is None or hit[0]() is not t:
            key = id(t._base)
            hit = self.unwrapped.get(key)
            if hit is None or hit[0]() is not t._base:
                return None
        del self.unwrapped[key]
        outer = hit[3]()  # the result inside, if alive: its current version
        inside = self.bindings.node_of(outer) if outer is not None and type(outer) is _RT else hit[1]
        fn = self.builder.add_function(hit[2], scope, [inside.id])
        node = self.bindings.new_result(t, scope, fn)
        self.bindings.track(t, node)
        self.note_wrapped(t, node)  # nested transforms: itself wrapped at an outer level
        return node

"""Reads of the caller's modules while their copy is recorded (copies.py).

A forward may reach a module of the caller's model other than through the module tree: a
function made in ``__init__`` that closes over ``self.lin`` and reads ``lin.weight``, or
``bn.running_mean``.  Calls of such a module already run its copy (copies.py,
``stand_ins``); so do attribute reads: while a copy records, ``nn.Module.__getattr__``
(which serves parameters, buffers and submodules) answers for an original module of the
recorded model with its copy's (``MODULE_GETATTR``, a ``SharedPatch`` taken by a Recorder
of a copy only).  The read is then the copy's tensor, on the copy's device (``meta``, fake)
with the copy's buffers, drawn as the parameter or buffer it is.

What no attribute read shows, a tensor of the caller's model captured itself (``w =
self.lin.weight; self.fn = lambda x: x @ w``), is found when the recording ends: a
constant of the graph that is a parameter or buffer of the caller's model gets a warning
naming it (``stale_reads``), as its value may not be the copy's (buffers) and it was not
drawn as the parameter it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from ..graph import Graph
from .patch import SharedPatch
from .tensor import _tls


def _make_getattr(original: Callable[..., Any]) -> Callable[..., Any]:
    def __getattr__(self: nn.Module, name: str) -> Any:
        session = getattr(_tls, "session", None)
        if session is not None and session.running:
            pairs = session.stand_ins
            pair = pairs.get(id(self)) if pairs is not None else None
            if pair is not None and pair[0] is self and MODULE_GETATTR.installed is __getattr__:
                return original(pair[1], name)  # the copy's parameter, buffer or submodule
        return original(self, name)

    __getattr__.__wrapped__ = original  # type: ignore[attr-defined]
    __getattr__.__tensorview__ = True  # type: ignore[attr-defined]
    return __getattr__


MODULE_GETATTR = SharedPatch(nn.Module, "__getattr__", _make_getattr)


def stale_reads(
    graph: Graph,
    sources: dict[int, list[Any]],
    pairs: dict[int, tuple[nn.Module, Any]] | None,
    path_of: Callable[[nn.Module], str | None],
) -> None:
    """Warn on each constant of ``graph`` that is a parameter or buffer of the caller's
    model (``pairs``: the session's ``stand_ins``, original -> copy; ``path_of``: a copy's
    module path), captured by the forward itself instead of read from the copy."""
    if not pairs:
        return
    constants = {id(t): node for t, node, _ in sources.values() if node.role == "constant"}
    if not constants:
        return
    for m, c in pairs.values():
        path = path_of(c)
        if path is None:
            continue
        for kind, registry in (("parameter", m._parameters), ("buffer", m._buffers)):
            for k, t in registry.items():
                node = constants.get(id(t))
                if node is not None:
                    qual = f"{path}.{k}" if path else k
                    graph.warn(
                        f"{kind} {qual!r} of your model was read directly (a tensor captured by a "
                        "function or object, not read from its module) while tensorview recorded a copy "
                        "of the model: it is drawn as a constant with your model's tensor, not the copy's; "
                        f"read it from its module in forward ({qual}) to record the copy's",
                        node.id,
                    )


__all__ = ["MODULE_GETATTR", "stale_reads"]

"""Parameters a recorded forward writes in place, put back when the recording ends.

``draw_graph`` and ``summary`` record a copy of the module tree that holds the caller's
Parameter objects (placement.py: no parameter memory is copied), in the mode asked for.
A forward that writes a parameter in place would write the caller's: RWKV rescales its
output weights in place (``weight.div_(2 ** k)``) when its mode differs from the one it
last ran in, and notes that on ``self``, which is the copy; the caller's model was left
with rescaled weights and a flag saying they were not, so its next forward rescaled them
again.  With ``keep_parameters``, the session saves a parameter (or buffer) of the model
before the first op that writes it, and copies the saved values back at the end, also
when the forward raised: only what is written costs memory.

An op writes its first tensor argument (or a view of a parameter) when its name ends in
``_`` (``mul_``, ``copy_``, ``zero_``, ``uniform_``), is an in-place operator
(``__setitem__``, ``__iadd__``...), or it has ``inplace=True`` or ``out=``; a write of
``p.data`` (an alias with a version counter of its own: the session's ``data_links``) is
a write of ``p``, and so is one of a tensor sharing ``p``'s storage (``p.detach()``, the
values of ``state_dict()``, a ``_foreach_`` op's list: timm's EMA); ``p.data = x``
replaces it (it gets its own tensor back).  Writes
the recorder cannot see are not caught: a kernel inside an opaque (TorchScript) module.
On a copy (placement.py) only the tensors it shares with the caller's modules are kept
(``callers``): its own buffers go with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from .inference import storage_id

_IN_PLACE_OPERATORS = frozenset(
    {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__"}
    | {"__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imatmul__"}
)
#: names ending in ``_`` that write no values
_NOT_WRITES = frozenset({"requires_grad_", "share_memory_", "retain_grad_", "record_stream_"})
_writes_by_func: dict[Any, bool] = {}


def _writes(func: Any) -> bool:
    w = _writes_by_func.get(func)
    if w is None:
        name = getattr(func, "__name__", "") or ""
        w = name in _IN_PLACE_OPERATORS or (name.endswith("_") and not name.endswith("__") and name not in _NOT_WRITES)
        _writes_by_func[func] = w
    return w


def callers(owned: dict[int, Any], pairs: dict[int, tuple[Any, Any]] | None) -> dict[int, Any]:
    """The tensors of ``owned`` whose writes the caller would see: all of them, unless the
    model recorded is a copy (``pairs``: its ``stand_ins``, copies.py), whose own tensors
    (its buffers, every tensor of a copy on another device) go with it; then those the
    original modules hold too (the parameters a tree copy shares).  A BatchNorm's step
    counter written by each training forward of a copy is not saved and put back."""
    if pairs is None:
        return owned
    theirs: set[int] = set()
    for original, _ in pairs.values():
        theirs.update(id(t) for t in original._parameters.values() if t is not None)
        theirs.update(id(t) for t in original._buffers.values() if t is not None)
    return {k: v for k, v in owned.items() if k in theirs}


class KeptParameters:
    """The model's parameters and buffers (``owned``: id -> anything), saved before their
    first in-place write, restored by ``restore``.  ``links``: the session's aliases that
    share no version counter with the tensor they write (``p.data``: storage key ->
    (owner, p)), whose writes are writes of ``p``."""

    def __init__(
        self,
        owned: dict[int, Any],
        links: dict[int, tuple[Any, torch.Tensor]] | None = None,
        tensors: Sequence[Any] = (),
    ) -> None:
        self.owned = owned
        self.links = links if links is not None else {}
        #: the model's parameters and buffers (among other objects): by storage, when needed
        self.tensors = tensors
        self.by_storage: dict[int, torch.Tensor] | None = None
        #: id -> (parameter, its values, the tensor it held: ``p.data`` when saved)
        self.saved: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        #: ids of the saved ones whose tensor was replaced (``p.data = x``)
        self.replaced: set[int] = set()

    def save(self, p: torch.Tensor) -> None:
        """``p.data = x`` is about to replace ``p``'s tensor: save ``p`` if it is one of
        the model's (before its first write), to give it its own tensor back."""
        if id(p) in self.owned:
            if id(p) not in self.saved:
                with torch._C.DisableTorchFunction(), torch.no_grad():
                    self.saved[id(p)] = (p, p.detach().clone(), p.data)
            self.replaced.add(id(p))

    def before(self, func: Any, ins: list[torch.Tensor], kwargs: dict[str, Any], args: tuple[Any, ...] = ()) -> None:
        """Op ``func`` (arguments ``args``, their tensors ``ins``) is about to run: save
        what it writes (its first tensor argument, every tensor of a ``_foreach_`` op's
        first list, ``out=``)."""
        out = kwargs.get("out") if kwargs else None
        if not (_writes(func) or (kwargs and kwargs.get("inplace") is True) or out is not None):
            return
        first = args[0] if args and isinstance(args[0], (list, tuple)) else ins[:1]
        targets = [*first, *(out if isinstance(out, (list, tuple)) else [out] if out is not None else [])]
        with torch._C.DisableTorchFunction(), torch.no_grad():
            for t in targets:
                if isinstance(t, torch.Tensor):
                    p = self._owner(t)
                    if p is not None and id(p) not in self.saved:
                        self.saved[id(p)] = (p, p.detach().clone(), p.data)

    def _owner(self, t: torch.Tensor) -> torch.Tensor | None:
        """The model's parameter or buffer that a write of ``t`` writes: ``t`` itself, the
        base of a view, what ``t`` is ``.data`` of (``links``), or one sharing its storage
        (``p.detach()``, the values of ``state_dict()``)."""
        if id(t) in self.owned:
            return t
        b = t._base
        if b is not None and id(b) in self.owned:
            return b
        link = self.links.get(id(t if b is None else b)) if self.links else None
        if link is not None and id(link[1]) in self.owned:
            return link[1]
        if self.by_storage is None:
            self.by_storage = {}
            for o in self.tensors:
                sid = storage_id(o) if isinstance(o, torch.Tensor) and id(o) in self.owned else None
                if sid is not None:
                    self.by_storage.setdefault(sid, o)
        sid = storage_id(t)
        return self.by_storage.get(sid) if sid is not None else None

    def restore(self) -> None:
        saved, replaced = self.saved, self.replaced
        with torch._C.DisableTorchFunction(), torch.no_grad():
            for key, (p, value, data) in saved.items():
                if key in replaced:  # (``p.data = x``): its own tensor again
                    p.data = data
                p.copy_(value)
        self.saved, self.replaced = {}, set()  # after all are back: an interrupted restore runs again whole

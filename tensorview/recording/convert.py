"""Module conversions inside forward: ``self.router.to(torch.float64)`` (switch_transformers
casts its router this way), ``.half()``, ``.float()``, ``.to(device)``...

Every such method runs ``nn.Module._apply(fn)``, which converts each parameter and buffer
of the module's tree with ``fn`` and stores the results on the modules (``p.data = new``,
``module._buffers[k] = new``).  Recorded op by op, that drew PyTorch's internals: a ``to``
per tensor, ``_has_compatible_shallow_copy_type`` and a ``data`` setter with no tensor
result, and later reads of the parameter still used the unconverted node.

``_apply`` is patched while recording (``MODULE_APPLY``, a ``SharedPatch``).  Inside a
root call it runs with recording off, and draws one op per converted tensor (named after
the method: ``to``, ``half``...) from the parameter or buffer to its converted value, in
the method call of the module (``router.to``, methods.py); later reads of the parameter
or buffer read that value.  With ``keep_parameters`` (``draw_graph``, ``summary``) the
conversion is undone when the recording ends (``Undo``): the caller's module is never
converted, as no other write of the forward reaches it (keep.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .dtensors import reshard, sharded_fsdp_groups
from .patch import SharedPatch
from .tensor import _tls

_Disable = torch._C.DisableTorchFunction


class Undo:
    """What the forward changed on the modules where no op shows it, put back by
    ``restore``: the parameter and buffer entries of each module converted inside forward
    (``save``), each parameter's tensor (``p.data``: replaced by a conversion or by
    ``Tensor.set_``, which never reaches ``__torch_function__``), as it was before the
    forward; and FSDP2 parameters sharded before the forward are sharded again."""

    def __init__(self, model: nn.Module) -> None:
        self.modules: dict[int, tuple[nn.Module, dict[str, Any], dict[str, Any]]] = {}
        #: FSDP2 parameter groups sharded before the forward (dtensors.py)
        self.sharded = sharded_fsdp_groups(model)
        #: id -> (parameter, the tensor it held before the forward)
        self.params: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        with _Disable():
            for m in _modules(model):
                for p in m._parameters.values():
                    if p is not None and id(p) not in self.params:
                        self.params[id(p)] = (p, p.data)

    def swapped(self, p: torch.Tensor) -> bool:
        """Parameter ``p`` holds another tensor than before the forward (``Tensor.set_``)."""
        entry = self.params.get(id(p))
        return entry is not None and _key(p) != _key(entry[1])

    def save(self, module: nn.Module) -> None:
        """``module`` is about to be converted: note its tree's entries."""
        for m in _modules(module):
            if id(m) not in self.modules:
                self.modules[id(m)] = (m, dict(m._parameters), dict(m._buffers))

    def restore(self, kept: Any) -> None:
        """Put everything back, before ``kept.restore`` (keep.py): a value it saved from
        another tensor than the one put back here (written after the conversion) is
        dropped, one saved from the same tensor (written before) is then copied into it."""
        reshard(self.sharded)
        modules, self.modules = self.modules, {}
        params, self.params = self.params, {}
        with _Disable(), torch.no_grad():
            for m, parameters, buffers in modules.values():
                m._parameters.clear()
                m._parameters.update(parameters)
                m._buffers.clear()
                m._buffers.update(buffers)
            for p, data in params.values():
                if _key(p) != _key(data):
                    p.data = data
                    entry = kept.saved.get(id(p)) if kept is not None else None
                    if entry is not None and _key(entry[-1]) != _key(data):
                        del kept.saved[id(p)]


def _modules(model: nn.Module) -> list[nn.Module]:
    """The modules of ``model``'s tree, each once, walked without recursion (a model nested
    as deep as its forward can run must not overflow the stack here)."""
    seen: dict[int, nn.Module] = {}
    stack = [model]
    while stack:
        m = stack.pop()
        if id(m) not in seen:
            seen[id(m)] = m
            stack.extend(c for c in m._modules.values() if c is not None)
    return list(seen.values())


def method_name(fn: Any) -> str:
    """``to`` for the ``convert`` closure of ``Module.to``, ``half`` for ``Module.half``'s
    lambda: the method that called ``_apply``; ``_apply`` for another caller."""
    parts = getattr(fn, "__qualname__", "").split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "Module" and parts[2] == "<locals>" else "_apply"


def convert(session: Any, original: Callable[..., Any], module: nn.Module, fn: Any, args: Any, kwargs: Any) -> Any:
    """``module._apply(fn, ...)`` inside the root call of ``session``."""
    with _Disable():
        tree = _modules(module)
        own = {id(t) for m in tree for t in (*m._parameters.values(), *m._buffers.values()) if t is not None}
        if session.undo is not None:
            session.undo.save(module)
    made: list[tuple[torch.Tensor, torch.Tensor]] = []

    def convert_one(t: torch.Tensor) -> Any:
        out = fn(t)
        if id(t) in own and isinstance(out, torch.Tensor) and out is not t:
            made.append((t, out))
        return out

    with _Disable():
        result = original(module, convert_one, *args, **kwargs)
        if not made:  # nothing converted (``.to`` the device it is on): nothing to draw
            return result
        calls, b = session.calls, session.bindings
        if not calls.frames()[-1].leaf:  # the method calling ``_apply`` (``router.to``) is a
            session.methods.resync(sys._getframe(1), None)  # method call of its module (methods.py)
        scope = calls.scope()
        name = method_name(fn)
        converted: dict[tuple[int, Any], Any] = {}
        for t, out in made:
            op = session.builder.add_function(name, scope, [b.node_of(t).id])
            converted[_key(out)] = b.new_result(out, scope, op)
        # the modules now hold the converted values (``p.data = out``, ``_buffers[k] = out``,
        # or new Parameter objects): later reads of them read the conversion's result
        for m in tree:
            for held in (*m._parameters.values(), *m._buffers.values()):
                if held is not None:
                    node = converted.get(_key(held))
                    if node is not None:
                        b.track(held, node)
    return result


def _key(t: torch.Tensor) -> tuple[int, Any]:
    """The tensor's storage (its C++ object: meta storages all have address 0) and dtype."""
    try:
        return t.untyped_storage()._cdata, t.dtype
    except (RuntimeError, NotImplementedError):  # no storage (sparse): the object itself
        return id(t), t.dtype


def _make_apply(original: Callable[..., Any]) -> Callable[..., Any]:
    def _apply(self: nn.Module, fn: Any, *args: Any, **kwargs: Any) -> Any:
        session = getattr(_tls, "session", None)
        if session is None or not session.running or not session.calls.frames() or MODULE_APPLY.installed is not _apply:
            return original(self, fn, *args, **kwargs)
        return convert(session, original, self, fn, args, kwargs)

    _apply.__wrapped__ = original  # type: ignore[attr-defined]
    _apply.__tensorview__ = True  # type: ignore[attr-defined]
    return _apply


MODULE_APPLY = SharedPatch(nn.Module, "_apply", _make_apply)

__all__ = ["MODULE_APPLY", "Undo", "convert"]

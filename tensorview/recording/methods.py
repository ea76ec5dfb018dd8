"""Submodules used through a method other than ``forward``: ``self.enc.embed(x)`` never
goes through ``nn.Module.__call__``, yet what ``embed`` does belongs to ``enc``.

Such a call becomes a ModuleNode like any module call, marked with the method's name
(``method="embed"``), found from the Python stack: before a node is made (an op, a
factory, a module call), the frames between that event and the code of the module call
now running are looked at; a frame running a method (first parameter ``self``) of a
registered submodule of that module opens a method call, which ends at the first event
after its frame returned.  A method call's arguments (the method's parameters) enter it
as a module call's do; its results are the tensors made inside it that are used after it
ended (each gets an edge from the call at its first later use), since its return value
passes no hook.

Cost: the look happens only inside calls of modules that have submodules (leaf modules
such as ``Linear`` skip it) and, per op, is a walk over the few torch and tensorview
frames above the user's code plus one identity test: the stack is analysed again only
when the user's frame changed since the last event (a new function or module call).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ..graph import NodeFactory
from .paths import ModulePaths
from .probes import Probes
from .state import Frame

if TYPE_CHECKING:
    from .calls import Calls
    from .crossings import Crossings

_HERE = os.path.dirname(os.path.abspath(__file__))
_TENSORVIEW = os.path.dirname(_HERE) + os.sep
_TORCH = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_TORCH_MODULES = os.path.join(_TORCH, "nn", "modules") + os.sep
#: the patched ``nn.Module.__call__`` (modulecall.py): a module call's boundary on the stack
_WRAPPER = (os.path.join(_HERE, "modulecall.py"), "__call__")
_MAX_FRAMES = 64
_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08


_FORWARD: dict[type, Any] = {}


def _forward_code(module: nn.Module) -> Any:
    """The code object of ``module``'s class's ``forward`` (False if it has none): of the
    function the decorators on it wrap (``functools.wraps``' ``__wrapped__``), whose frame
    runs the ops of its body (transformers decorates most attention and layer forwards)."""
    cls = type(module)
    code = _FORWARD.get(cls)
    if code is None:
        forward = getattr(cls, "forward", None)
        with contextlib.suppress(ValueError):  # (a cycle of ``__wrapped__``: the function as it is)
            forward = inspect.unwrap(forward) if forward is not None else None
        code = _FORWARD[cls] = getattr(forward, "__code__", False)
    return code


def _internal(filename: str) -> bool:
    """Code between an op and the user's code: tensorview's and torch's own (not torch's
    module classes, whose ``forward`` is a module's code like any other)."""
    return filename.startswith(_TENSORVIEW) or (filename.startswith(_TORCH) and not filename.startswith(_TORCH_MODULES))


class Methods:
    """Opens and closes the method calls of one recording on its call stack."""

    #: file name -> whether its code is torch's or tensorview's own (see ``_internal``)
    _files: dict[str, bool] = {}

    def __init__(self, builder: NodeFactory, probes: Probes | None, crossings: Crossings, paths: ModulePaths) -> None:
        self.builder = builder
        self.probes = probes
        self._leak = crossings.leak
        self._known_path = paths.known
        self._stack: list[Frame] = []
        self._calls: Calls | None = None

    def connect(self, calls: Calls) -> None:
        """The call stack the method calls go on (read here; changed through ``calls``)."""
        self._calls = calls
        self._stack = calls.frames()

    def close(self) -> None:
        """The recording ended: the call stack is let go (no reference cycle)."""
        self._calls = None

    def sync_methods(self, callee: nn.Module | None = None) -> None:
        """Before an event makes nodes: open and close method calls so that the top of
        ``stack`` is where the event happens (``callee``: the module an event calls;
        a ``__call__`` of its own class on the way is part of that call).
        Called from ``_op``, ``_factory`` and ``sub_call``, whose caller's caller is the
        user's code for a torch function called directly or a module call."""
        top = self._stack[-1]
        f: Any = sys._getframe(4)  # sync_methods <- _op <- handle <- __torch_function__ <- user
        code = None
        if top.pyframe is None:  # no method call open
            code = top.code
            if code is None:
                code = top.code = _forward_code(top.module)
            if f.f_code is code:  # right in the running module's forward
                return
        if f is top.seen:  # the same user frame as the last event: nothing changed
            return
        f = sys._getframe(2)
        files = self._files
        while f is not None:  # past torch's and tensorview's own frames
            name = f.f_code.co_filename
            inside = files.get(name)
            if inside is None:
                inside = files[name] = _internal(name)
            if not inside:
                break
            f = f.f_back
        if f is None or f is top.seen:
            return
        if code is not None:  # functions (not methods) called from the module's forward
            g: Any = f
            while g is not None and g.f_code is not code:
                c = g.f_code
                if c.co_argcount and c.co_varnames[0] == "self":
                    break
                g = g.f_back
            if g is not None and g.f_code is code:
                top.seen = f
                return
        self.resync(f, callee)

    def resync(self, f: Any, callee: nn.Module | None) -> None:
        """Open and close method calls for an event whose user frame is ``f``."""
        stack, calls = self._stack, self._calls
        assert calls is not None
        i = len(stack) - 1
        while stack[i].pyframe is not None:
            i -= 1
        real = stack[i]
        real_code = real.code or _forward_code(real.module)
        known = {fr.pyframe: fr.module for fr in stack[i + 1 :]} if i < len(stack) - 1 else {}
        files = self._files
        # frames running methods of other modules, from the event out to the running call
        chain: list[tuple[Any, nn.Module]] = []
        g, n = f, 0
        while g is not None and n < _MAX_FRAMES:
            code = g.f_code
            if code is real_code:  # the running module's forward
                break
            if (code.co_filename, code.co_name) == _WRAPPER:
                break
            if code.co_argcount and code.co_varnames[0] == "self":
                inside = files.get(code.co_filename)
                if inside is None:
                    inside = files[code.co_filename] = _internal(code.co_filename)
                s = known[g] if g in known else None if inside else g.f_locals.get("self")
                if s is real.module:  # the running module's own code
                    break
                # the module called by the event is no method call of its own, but one of
                # its methods calling it (``def encode(self, x): return self(x) * 2``) is
                if isinstance(s, nn.Module) and (s is not callee or code.co_name != "__call__"):
                    if chain and chain[-1][1] is s:
                        chain[-1] = (g, s)  # methods of one module calling each other: one call
                    else:
                        chain.append((g, s))
            g, n = g.f_back, n + 1
        wanted: list[tuple[Any, nn.Module]] = []
        outer = real.node.path
        for g, s in reversed(chain):  # keep registered submodules, each inside the one before
            path = self._known_path(s)
            if path is not None and path != outer and (not outer or path.startswith(outer + ".")):
                wanted.append((g, s))
                outer = path
        k = 0
        opened = stack[i + 1 :]
        while k < len(opened) and k < len(wanted) and opened[k].pyframe is wanted[k][0]:
            k += 1
        while len(stack) > i + 1 + k:
            self._close_method(calls.pop(), failed=False)
        for g, s in wanted[k:]:
            self._open_method(g, s)
        stack[-1].seen = f

    def _open_method(self, pyframe: Any, module: nn.Module) -> None:
        code = pyframe.f_code
        cls = type(module)
        calls = self._calls
        assert calls is not None
        path = self._known_path(module)
        assert path is not None
        m = self.builder.add_module(path, cls.__name__, cls.__module__, calls.scope(), method=code.co_name)
        # the method's parameters, as they are now (its first event): they enter the call
        n = code.co_argcount + code.co_kwonlyargcount
        n += bool(code.co_flags & _CO_VARARGS) + bool(code.co_flags & _CO_VARKEYWORDS)
        values = pyframe.f_locals
        params = {k: values[k] for k in code.co_varnames[1:n] if k in values}
        frame = Frame(module, m, pyframe=pyframe)
        calls.enter_args(m, (), params, frame)
        calls.push(frame)
        if self.probes is not None:
            self.probes.enter_call(m, module)

    def _close_method(self, frame: Frame, failed: bool) -> None:
        m = frame.node
        b = self.builder
        b.end_call(m)
        if failed:
            b.fail_call(m)
        self._leak(m.id, set())  # its return value passes no hook: results are found when read
        if self.probes is not None:
            self.probes.exit_call(m)

    def close_methods(self, failed: bool) -> None:
        """End the method calls above the innermost module call (its forward returned or
        raised)."""
        stack, calls = self._stack, self._calls
        while stack and stack[-1].pyframe is not None:
            assert calls is not None
            self._close_method(calls.pop(), failed)

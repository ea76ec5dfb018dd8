"""``torch.fx.GraphModule``s recorded like any module, with the hierarchy fx flattened.

A GraphModule is a runnable module: its ``forward`` is code generated from its graph,
which calls the modules fx did not trace into (``Linear``...) and the torch functions of
the modules it did trace into, all at one level.  Recorded as it is, the leaves' ops are
recorded inside them, but the ops of ``block`` land at the root.  fx keeps where each
node came from in ``node.meta["nn_module_stack"]`` (``symbolic_trace`` and
``torch.export`` both do), so a GraphModule call whose graph has that metadata runs its
graph through an ``fx.Interpreter`` (``ScopedInterpreter``) that opens and closes a
module call per entry of each node's stack before running the node: ``block`` is a call
again, holding its ops and the call of ``block.lin``.  Those calls have no arguments or
results of their own: tensors cross their boundaries where read (crossings.py), as for
method calls.  The GraphModule's own ``__call__`` (and so its hooks) runs as usual: only
its ``forward`` is swapped for the interpreter's, on the instance, for that call.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch.fx
from torch import nn

from .state import Frame

GRAPH_MODULE = torch.fx.GraphModule
_CALLS = ("call_function", "call_method", "call_module")


def scoped(module: nn.Module) -> bool:
    """``module`` is a GraphModule whose nodes say which modules they came from."""
    if not isinstance(module, GRAPH_MODULE):
        return False
    nodes = module.graph.nodes
    return any(n.meta.get("nn_module_stack") for n in nodes if n.op in _CALLS) and not any(
        n.op == "placeholder" and str(n.target).startswith("*") for n in nodes
    )


def _stack_of(node: torch.fx.Node) -> list[tuple[str, Any]]:
    """The (path, class) of the module calls ``node`` runs inside, outermost first; for a
    module call, without the call itself (recorded as it runs)."""
    entries = [v for v in (node.meta.get("nn_module_stack") or {}).values() if isinstance(v, tuple) and len(v) == 2]
    stack = [(str(path), cls) for path, cls in entries if path]
    if node.op == "call_module" and stack and stack[-1][0] == node.target:
        stack.pop()
    return stack


def _class_names(cls: Any) -> tuple[str, str]:
    if isinstance(cls, type):
        return cls.__name__, cls.__module__
    text = str(cls)  # torch.export keeps "package.module.Class"
    module, _, name = text.rpartition(".")
    return name or text, module


class ScopedInterpreter(torch.fx.Interpreter):
    """Runs a GraphModule's graph inside ``session``, one module call per entry of the
    nodes' ``nn_module_stack`` (paths under ``prefix``, the GraphModule's own path)."""

    def __init__(self, gm: torch.fx.GraphModule, session: Any) -> None:
        super().__init__(gm)
        self.session = session
        self.open: list[tuple[str, Frame]] = []
        top = session.calls.scope()
        self.prefix = top.path + "." if top.path else ""

    def run_node(self, n: torch.fx.Node) -> Any:
        if n.op in _CALLS:
            self._sync(_stack_of(n))
        elif n.op == "output":
            self._sync([])
        return super().run_node(n)

    def _sync(self, stack: list[tuple[str, Any]]) -> None:
        k = 0
        while k < len(self.open) and k < len(stack) and self.open[k][0] == stack[k][0]:
            k += 1
        while len(self.open) > k:
            self._close(failed=False)
        for path, cls in stack[k:]:
            self._open(path, cls)

    def _open(self, path: str, cls: Any) -> None:
        s = self.session
        name, module_name = _class_names(cls)
        full = self.prefix + path
        m = s.builder.add_module(full, name, module_name, s.calls.scope())
        try:
            module = self.module.get_submodule(path)
        except AttributeError:  # fx kept only the modules its graph calls
            module = self.module
        frame = Frame(module, m, leaf=True)  # (no method calls to look for inside)
        s.calls.push(frame)
        self.open.append((path, frame))
        if s.probes is not None:
            s.probes.enter_call(m, module)

    def _close(self, failed: bool) -> None:
        s = self.session
        _, frame = self.open.pop()
        frames = s.calls.frames()
        if frames and frames[-1] is frame:
            s.calls.pop()
        m = frame.node
        s.builder.end_call(m)
        if failed:
            s.builder.fail_call(m)
        s.crossings.leak(m.id, set())  # no return value: its results are found when read (crossings.py)
        if s.probes is not None:
            s.probes.exit_call(m)

    def run_forward(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:  # the generated forward's parameters are the placeholders, in order
            forward = type(self.module).forward
            try:
                bound = inspect.signature(forward).bind(self.module, *args, **kwargs)
            except TypeError:  # wrong arguments: the error the forward itself raises
                return forward(self.module, *args, **kwargs)
            bound.apply_defaults()
            args = tuple(bound.arguments.values())[1:]
        try:
            return self.run(*args)
        except BaseException:
            while self.open:
                self._close(failed=True)
            raise


def interpreted(session: Any, call: Callable[..., Any]) -> Callable[..., Any]:
    """``call`` (``nn.Module.__call__``) of a GraphModule, with its ``forward`` run by a
    ``ScopedInterpreter`` in ``session``."""

    def run(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
        d = module.__dict__
        had, old = "forward" in d, d.get("forward")

        def forward(*a: Any, **k: Any) -> Any:
            if had:  # put back at once: a call of the module from inside is its own call
                d["forward"] = old
            else:
                d.pop("forward", None)
            return ScopedInterpreter(module, session).run_forward(*a, **k)  # type: ignore[arg-type]

        d["forward"] = forward
        try:
            return call(module, *args, **kwargs)
        finally:
            if had:
                d["forward"] = old
            else:
                d.pop("forward", None)

    return run

"""``torch.compile``d models, recorded as the eager modules they wrap.

A compiled model runs Dynamo, which would trace tensorview's own recording code (our
``__torch_function__``, the patched ``nn.Module.__call__``) instead of the model.  So,
while a root call is recorded:

* the compiler's stance is ``"force_eager"`` (``torch.compiler.set_stance``): every
  ``torch.compile``d function, method and module runs its original Python code eagerly
  and nothing is compiled or traced (``eager_stance``, shared by the recorders of all
  threads and restored by the last one; other threads' compiled code runs eagerly for that
  time too, its compiled cache is untouched);
* a ``torch.compile(module)`` wrapper (``OptimizedModule``) is transparent: it gets no
  ModuleNode, the module it wraps is recorded in its place, and module and parameter paths
  leave out its ``_orig_mod.`` (``state.model_names``), so the graph equals the eager one;
* the patched ``nn.Module.__call__``, while Dynamo traces it, calls its twin behind
  ``torch._dynamo.disable`` when Dynamo is loaded (``dynamo_disabled``): a compiled caller
  graph-breaks into it instead of tracing it (modulecall.py).

Nothing here imports ``torch._dynamo`` (slow to import): nothing can be compiled before
``torch.compile`` has imported it, so while it is absent a recording only watches for its
import (the forward may compile: ``torch.cond`` does) and sets the stance then.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

from torch import nn

_EVAL_FRAME = "torch._dynamo.eval_frame"


def optimized_module_type() -> type | None:
    """``torch._dynamo.eval_frame.OptimizedModule`` if Dynamo is loaded, else None."""
    ef = sys.modules.get(_EVAL_FRAME)
    return getattr(ef, "OptimizedModule", None) if ef is not None else None


def unwrap(module: nn.Module) -> nn.Module:
    """The eager module inside ``torch.compile(module)`` wrappers (``module`` if none)."""
    cls = optimized_module_type()
    while cls is not None and isinstance(module, cls):
        module = module._modules["_orig_mod"]  # type: ignore[assignment]
    return module


def named_modules(model: nn.Module) -> Iterator[tuple[str, nn.Module]]:
    """``model.named_modules(remove_duplicate=False)`` with compile wrappers left out: a
    wrapped module has the path of its wrapper, as if it had never been compiled."""
    cls = optimized_module_type()
    if cls is None:
        yield from model.named_modules(remove_duplicate=False)
        return

    stack: list[tuple[str, nn.Module]] = [("", model)]
    while stack:  # pre-order, as named_modules, without recursion
        prefix, m = stack.pop()
        m = unwrap(m)
        yield prefix, m
        children = [(f"{prefix}.{k}" if prefix else k, c) for k, c in m._modules.items() if c is not None]
        stack.extend(reversed(children))


def original_callable(fn: Any) -> Any:
    """The function a ``torch.compile``d callable wraps (``fn`` itself if not compiled)."""
    seen = 0
    while seen < 8:
        orig = getattr(fn, "_torchdynamo_orig_callable", None)
        if orig is None:
            break
        fn = orig
        seen += 1
    # torch.compile(bound_method) may wrap the method once more (external_utils.wrap_inline)
    inner = getattr(fn, "__wrapped__", None)
    if isinstance(inner, types.MethodType) and not isinstance(fn, types.MethodType):
        fn = inner
    return fn


class _EagerStance:
    """``torch.compiler.set_stance("force_eager")`` while any recording runs (held by a set of holders:
    the first recorder sets it, the last puts the caller's stance back).

    Dynamo may also be imported by the forward itself, after the stance was due: an eager
    ``torch.cond``/``while_loop``/``flex_attention`` compiles its body with
    ``torch.compile``, as does a ``torch.compile`` called inside ``forward``.  Traced then,
    Dynamo would trace our op handler and fail.  So while recordings run without Dynamo
    loaded, a finder on ``sys.meta_path`` (``_DynamoImportWatch``) sets the stance as soon
    as ``torch._dynamo`` has been imported, before anything can be compiled."""

    def __init__(self, package: str = "torch._dynamo", ready: str = _EVAL_FRAME) -> None:
        self._package = package  # the package to watch for (another one in tests)
        self._ready = ready  # loaded when this module is
        self._lock = threading.RLock()  # RLock: the import it watches may start under it
        #: who holds the stance (a set, not a count: releasing twice, as a clean-up step
        #: retried after an interrupt does, releases once)
        self._holders: set[object] = set()
        self._ctx: Any = None
        self._watch: _DynamoImportWatch | None = None

    def acquire(self, holder: object) -> None:
        """``holder`` holds the stance until ``release(holder)`` (idempotent both)."""
        with self._lock:
            if not self._holders:
                if self._ready in sys.modules:
                    if self._ctx is None:
                        self._set()
                elif self._watch is None:
                    self._watch = _DynamoImportWatch(self._package, self._loaded)
                    sys.meta_path.insert(0, self._watch)
            self._holders.add(holder)

    def _set(self) -> None:
        import torch.compiler

        try:
            self._ctx = torch.compiler.set_stance("force_eager")  # sets it now
        except RuntimeError:  # called while Dynamo traces this thread: leave it be
            self._ctx = None

    def _loaded(self) -> None:
        """``torch._dynamo`` was imported while recordings run."""
        with self._lock:
            self._unwatch()
            if self._holders and self._ctx is None:
                self._set()

    def _unwatch(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            with contextlib.suppress(ValueError):  # someone else took it off
                sys.meta_path.remove(watch)

    @property
    def eager(self) -> bool:
        """The stance is ``force_eager`` now (set by ``acquire``)."""
        return self._ctx is not None

    def release(self, holder: object) -> None:
        """``holder`` is done; the last one puts back the stance found at the first
        ``acquire``.  The holder leaves the set last, so that a release cut short by an
        interrupt is finished by the next call."""
        with self._lock:
            if holder not in self._holders:
                return
            if len(self._holders) == 1:
                self._unwatch()
                if self._ctx is not None:
                    self._ctx.__exit__(None, None, None)  # the stance found at acquire
                    self._ctx = None
            self._holders.discard(holder)


class _DynamoImportWatch:
    """A ``sys.meta_path`` finder that finds nothing itself: when ``package`` is
    imported, it lets the other finders find it and calls ``loaded()`` once the package
    has run (by wrapping that one loader's ``exec_module``; the loader stays the module's
    ``__loader__``)."""

    def __init__(self, package: str, loaded: Callable[[], None]) -> None:
        self.package = package
        self.loaded = loaded

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != self.package:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        run = getattr(loader, "exec_module", None)
        if run is None:
            return spec
        loaded = self.loaded

        def exec_module(module: Any) -> None:
            try:
                run(module)
            finally:
                with contextlib.suppress(AttributeError):
                    del loader.exec_module  # the loader's own method again
            loaded()

        # a loader that takes no attributes is not watched
        with contextlib.suppress(AttributeError, TypeError):
            loader.exec_module = exec_module
        return spec


EAGER_STANCE = _EagerStance()


@contextlib.contextmanager
def eager_stance() -> Iterator[None]:
    holder = object()
    EAGER_STANCE.acquire(holder)
    try:
        yield
    finally:
        EAGER_STANCE.release(holder)


def dynamo_disabled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` behind ``torch._dynamo.disable`` when Dynamo is loaded: Dynamo never traces
    it nor anything it calls (a compiled caller graph-breaks there)."""
    if "torch._dynamo" not in sys.modules:
        return fn
    import torch._dynamo

    return torch._dynamo.disable(fn, recursive=True)


def rebind_compiled_methods(model: nn.Module, clone: nn.Module) -> None:
    """After copying ``model`` (``copy.deepcopy``, or ``copies.tree_copy``, which shares
    attributes): a method stored on a module and bound to a module of ``model``
    (``m.forward = torch.compile(m.forward)``, ``m.compile()``'s ``_compiled_call_impl``,
    ``m.forward = m.other``) would still run the caller's module.  Bind it to the copy
    instead, eagerly for compiled ones (the copy is only recorded, where compiled code runs
    eagerly anyway)."""
    pairs = {id(m): c for (_, m), (_, c) in zip(named_modules(model), named_modules(clone))}
    for m in clone.modules():
        d = m.__dict__
        for k, v in list(d.items()):
            if not isinstance(v, types.MethodType) and getattr(v, "_torchdynamo_orig_callable", None) is None:
                continue
            orig = original_callable(v)
            if isinstance(orig, types.MethodType) and id(orig.__self__) in pairs:
                d[k] = types.MethodType(orig.__func__, pairs[id(orig.__self__)])


__all__ = [
    "EAGER_STANCE",
    "dynamo_disabled",
    "eager_stance",
    "named_modules",
    "original_callable",
    "rebind_compiled_methods",
    "unwrap",
]

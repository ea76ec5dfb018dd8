"""``Recorder``: the context manager users write ``with`` around a forward call."""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from torch import nn

from ..errors import InvalidTypeError, RecordingError, TensorviewError, add_hint, describe, recording_error
from ..graph import Graph
from . import interrupts
from .convert import MODULE_APPLY
from .fake import failure_hint
from .inputs import check_model
from .modulecall import MODULE_CALL
from .probes import Probe
from .session import Session
from .state import Settings
from .tensor import _tls, current_session

#: what a recorder hands back: the IR ``Graph`` here, a drawable graph in ``tensorview``
R = TypeVar("R")


class BaseRecorder(Generic[R]):
    """Record the first call of ``model`` made inside the ``with`` block; ``graph`` is
    the result of ``_result(ir)`` (subclasses decide what users get).

    The output is a plain tensor with the same values as without recording; the model is
    left as it was (no hook, no patch remains, also when ``forward`` raises).  ``device``
    is where tensors made inside ``forward`` without an explicit device are put (default:
    the device of the first input, when that is not the CPU).  ``meta_replay``: on the
    meta device, ops already seen with the same argument shapes are not run again; their
    results' metadata is replayed (see recording/metacache.py), which makes recording large
    meta models several times faster.  Graphs are the same either way.  ``probes`` record
    extra facts per node as annotations (see recording/probes.py).  ``keep_parameters``:
    parameters and buffers of ``model`` that the forward writes in place get their values
    back when the call ends (``draw_graph`` and ``summary`` use it; see recording/keep.py).
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        device: Any = None,
        meta_replay: bool = True,
        probes: Sequence[Probe] = (),
        keep_parameters: bool = False,
    ) -> None:
        check_model(model, "Recorder")
        bad = [p for p in probes if not isinstance(p, Probe)]
        if bad:
            raise InvalidTypeError(f"probes must be tensorview.recording.Probe instances, got {bad[0]!r:.80}")
        self.model = model
        self.device = device
        self.meta_replay = meta_replay
        self.probes = tuple(probes)
        self.keep_parameters = keep_parameters
        self._session: Session | None = None
        self._acquired = False  # holds a share of the nn.Module.__call__ patch
        self._applied = False  # holds a share of the nn.Module._apply patch (convert.py)
        self._guard: interrupts.deferred | None = None

    def _result(self, graph: Graph) -> R:
        raise NotImplementedError

    def __enter__(self) -> BaseRecorder[R]:
        # Ctrl-C waits until the recorder is set up, or torn down again (interrupts.py)
        self._guard = interrupts.deferred(interrupts.caller_frame())
        self._guard.__enter__()
        try:
            if current_session() is not None:
                raise TensorviewError("a Recorder is already active in this thread; recorders do not nest")
            settings = Settings(self.device, self.meta_replay, self.probes, self.keep_parameters)
            self._session = Session(self.model, settings)
            MODULE_CALL.acquire()
            self._acquired = True
            MODULE_APPLY.acquire()
            self._applied = True
            _tls.session = self._session
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: types.TracebackType | None) -> None:
        err = None
        try:
            session = self._session
            if session is not None and getattr(_tls, "session", None) is session:
                _tls.session = None
            if self._acquired:
                self._acquired = False
                MODULE_CALL.release()
            if self._applied:
                self._applied = False
                MODULE_APPLY.release()
            if session is not None and isinstance(exc, Exception) and session.failure_exc is exc:
                err = self._recording_error(session, exc)
            if session is not None:
                session.failure_exc = None  # do not keep the exception (and its frames) alive
        finally:
            guard, self._guard = self._guard, None
            if guard is not None:
                guard.__exit__(None, None, None)  # a deferred Ctrl-C is raised here
        if err is not None:
            raise err from exc

    # -- results ---------------------------------------------------------------------------
    @property
    def ir(self) -> Graph:
        """The recorded IR ``Graph``."""
        if self._session is None or self._session.graph.root is None:
            raise TensorviewError("nothing was recorded: call the model inside the `with Recorder(model)` block")
        return self._session.graph

    @property
    def graph(self) -> R:
        """The recorded graph (see ``_result``)."""
        return self._result(self.ir)

    def _recording_error(self, session: Session, exc: Exception) -> RecordingError:
        g = session.graph
        path, node = session.failure or ("", None)
        op = node.name if node is not None else ""
        where = f"module {path!r}" if path else "the root module"
        cls = next((m.cls_name for m in g.modules() if m.path == path and m.failed), "")
        if cls:
            where += f" ({cls})"
        if op:
            where += f", op {op!r}"
        g.error = describe(exc)
        message = f"forward raised in {where}: {g.error}"
        partial = self._result(g) if g.root is not None else None
        # also an instance of type(exc): `except ValueError` in the caller's code keeps working
        err: RecordingError = recording_error(exc, message, graph=partial, module_path=path)
        hint = failure_hint(exc, op, session.model)  # values needed on meta/fake: what to do
        if hint:
            add_hint(err, hint)
        return err


class Recorder(BaseRecorder[Graph]):
    """The recorder of ``tensorview.recording``: ``graph`` is the IR ``Graph``.  Users
    normally take ``tensorview.Recorder``, whose ``graph`` is a drawable
    ``ComputationGraph`` (same recording).

    >>> import torch
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.ReLU())
    >>> with Recorder(model) as rec:
    ...     out = model(torch.randn(1, 4))
    >>> [m.path for m in rec.graph.modules()]
    ['', '0', '1']
    """

    def _result(self, graph: Graph) -> Graph:
        return graph

    def __enter__(self) -> Recorder:
        super().__enter__()
        return self


def is_patched() -> bool:
    """Whether tensorview's ``nn.Module.__call__`` or ``_apply`` wrapper is installed (for tests)."""
    return bool(
        getattr(nn.Module.__call__, "__tensorview__", False) or getattr(nn.Module._apply, "__tensorview__", False)
    )


__all__ = ["BaseRecorder", "Recorder", "is_patched"]

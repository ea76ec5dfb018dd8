"""``Recorder``: the context manager users write ``with`` around a forward call."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from torch import nn

from ..errors import InvalidTypeError, RecordingError, TensorviewError, cause_first, describe, recording_error, shown
from ..graph import Graph
from . import interrupts
from .convert import MODULE_APPLY
from .fake import failure_hint, script_hint
from .inputs import check_model
from .modulecall import MODULE_CALL
from .probes import Probe
from .redirect import MODULE_GETATTR
from .session import Session
from .state import Settings
from .tensor import _tls, current_session

#: what a recorder hands back: the IR ``Graph`` here, a drawable graph in ``tensorview``
R = TypeVar("R")
_Self = TypeVar("_Self", bound="BaseRecorder[Any]")


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
        for flag, value in (("meta_replay", meta_replay), ("keep_parameters", keep_parameters)):
            if not isinstance(value, bool):
                raise InvalidTypeError(f"{flag} must be True or False, got {type(value).__name__}: {shown(value)}")
        if isinstance(probes, (Probe, str, bytes)) or not isinstance(probes, Iterable):
            raise InvalidTypeError(
                f"probes must be a list of tensorview.recording.Probe instances, got {type(probes).__name__}: "
                f"{shown(probes)}" + (f" (pass [{type(probes).__name__}(...)])" if isinstance(probes, Probe) else "")
            )
        probes = tuple(probes)
        bad = [p for p in probes if not isinstance(p, Probe)]
        if bad:
            raise InvalidTypeError(f"probes must be tensorview.recording.Probe instances, got {shown(bad[0])}")
        self.model = model
        self.device = device
        self.meta_replay = meta_replay
        self.probes = tuple(probes)
        self.keep_parameters = keep_parameters
        self._session: Session | None = None
        self._token: object | None = None  # our share of the nn.Module.__call__ patch
        self._apply_token: object | None = None  # and of the nn.Module._apply patch (convert.py)
        self._getattr_token: object | None = None  # and, recording a copy, of __getattr__ (redirect.py)
        self._guard: interrupts.deferred | None = None

    def _result(self, graph: Graph) -> R:
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        # everything, up to the return, undone by the exit if an exception lands in it (the
        # ``with`` statement calls no exit then)
        try:
            # signals wait until the recorder is set up, or torn down again (interrupts.py)
            self._guard = interrupts.deferred(interrupts.caller_frame())
            self._guard.__enter__()
            if current_session() is not None:
                raise TensorviewError("a Recorder is already active in this thread; recorders do not nest")
            settings = Settings(self.device, self.meta_replay, self.probes, self.keep_parameters)
            self._session = Session(self.model, settings)
            self._token = MODULE_CALL.acquire()
            self._apply_token = MODULE_APPLY.acquire()
            if self._session.stand_ins is not None:
                self._getattr_token = MODULE_GETATTR.acquire()
            _tls.session = self._session
            return self
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: types.TracebackType | None) -> None:
        # the clean-up steps run first thing, each to its end, also when an asynchronous
        # exception lands in one (interrupts.py) or here before they started (then they
        # all run again: they are idempotent)
        try:
            err: list[RecordingError] = []
            caught = interrupts.run_steps(*self._exit_steps(exc, err))
        except BaseException as e:  # noqa: BLE001 - raised below, once everything is undone
            err = []
            caught = interrupts.run_steps(*self._exit_steps(exc, err)) or e
        if caught is not None:
            raise caught
        if self._guard is not None:
            self._guard.deliver()  # a deferred signal is raised here
        if err:
            raise err[0] from exc

    def _exit_steps(self, exc: BaseException | None, err: list[RecordingError]) -> tuple[Callable[[], Any], ...]:
        """The clean-up of ``__exit__``, in order: each step idempotent.  ``err`` gets the
        error to raise for a forward that failed (``exc``)."""
        session = self._session

        def detach() -> None:
            if session is not None and getattr(_tls, "session", None) is session:
                _tls.session = None

        def release() -> None:
            if self._token is not None:
                MODULE_CALL.release(self._token)
                self._token = None
            if self._apply_token is not None:
                MODULE_APPLY.release(self._apply_token)
                self._apply_token = None
            if self._getattr_token is not None:
                MODULE_GETATTR.release(self._getattr_token)
                self._getattr_token = None

        def explain() -> None:
            if session is not None and isinstance(exc, Exception) and session.failure_exc() is exc and not err:
                err.append(self._recording_error(session, exc))
            if session is not None:
                session.forget_failure()  # do not keep the exception (and its frames) alive

        guard = self._guard
        return detach, release, explain, guard.restore if guard is not None else _nothing

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
        path, node = session.failed_at() or ("", None)
        op = g.nodes[node.id].name if node is not None else ""  # (read through the graph: named)
        where = f"module {path!r}" if path else "the root module"
        cls = next((m.cls_name for m in g.modules() if m.path == path and m.failed), "")
        if cls:
            where += f" ({cls})"
        if op:
            where += f", op {op!r}"
        g.error = describe(exc)
        cause, details = cause_first(g.error)  # a long error: its cause first, and what to do
        hint = failure_hint(exc, op, session.model) or script_hint(session.model, path, cause)
        message = f"forward raised in {where}: {cause}" + (f"\n{hint}" if hint else "")
        if details:
            message += f"\n\nthe whole error:\n{details}"
        partial = self._result(g) if g.root is not None else None
        # also an instance of type(exc): `except ValueError` in the caller's code keeps working
        err: RecordingError = recording_error(exc, message, graph=partial, module_path=path)
        err.hint = hint
        return err


def _nothing() -> None:
    pass


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


def is_patched() -> bool:
    """Whether tensorview's ``nn.Module.__call__``, ``_apply`` or ``__getattr__`` wrapper is
    installed (for tests)."""
    return any(getattr(getattr(nn.Module, k), "__tensorview__", False) for k in ("__call__", "_apply", "__getattr__"))


__all__ = ["BaseRecorder", "Recorder", "is_patched"]

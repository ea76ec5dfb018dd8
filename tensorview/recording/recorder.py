"""``Recorder``: the context manager users write ``with`` around a forward call."""

from __future__ import annotations

import types
from typing import Any, Callable

from torch import nn

from ..errors import InvalidTypeError, RecordingError, TensorviewError
from .inputs import check_model, summary
from .patch import SharedPatch
from .session import Session
from .tensor import _tls, current_session


def _make_call(original: Callable[..., Any]) -> Callable[..., Any]:
    def __call__(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        session = getattr(_tls, "session", None)
        if session is None:
            return original(self, *args, **kwargs)
        return session.call_module(original, self, args, kwargs)

    __call__.__wrapped__ = original  # type: ignore[attr-defined]
    __call__.__tensorview__ = True  # type: ignore[attr-defined]
    return __call__


#: ``nn.Module.__call__`` is patched once for all recorders of the process; the wrapper
#: only acts in a thread that is recording
MODULE_CALL = SharedPatch(nn.Module, "__call__", _make_call)


class Recorder:
    """Record the first call of ``model`` made inside the ``with`` block.

    >>> import torch, tensorview as tv
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.ReLU())
    >>> with tv.Recorder(model) as rec:
    ...     out = model(torch.randn(1, 4))
    >>> [m.path for m in rec.graph.graph.modules()]
    ['', '0', '1']

    The output is a plain tensor with the same values as without recording; the model is
    left as it was (no hook, no patch remains, also when ``forward`` raises).  ``device``
    is where tensors made inside ``forward`` without an explicit device are put (default:
    the device of the first input, when that is not the CPU).  ``meta_replay``: on the
    meta device, ops already seen with the same argument shapes are not run again; their
    results' metadata is replayed (see recording/metacache.py), which makes recording large
    meta models several times faster.  Graphs are the same either way.
    """

    def __init__(
        self, model: nn.Module, *, device: Any = None, graph_options: Any = None, meta_replay: bool = True
    ) -> None:
        check_model(model, "Recorder")
        _check_graph_options(graph_options)
        self.model = model
        self.device = device
        self.graph_options = graph_options
        self.meta_replay = meta_replay
        self._session: Session | None = None
        self._previous: Any = None

    def __enter__(self) -> Recorder:
        if current_session() is not None:
            raise TensorviewError("a Recorder is already active in this thread; recorders do not nest")
        self._session = Session(self.model, device=self.device, meta_replay=self.meta_replay)
        MODULE_CALL.acquire()
        _tls.session = self._session
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: types.TracebackType | None) -> None:
        _tls.session = None
        MODULE_CALL.release()
        session = self._session
        if session is not None and isinstance(exc, Exception) and session.failure is not None:
            raise self._recording_error(session, exc) from exc

    # -- results ---------------------------------------------------------------------------
    @property
    def graph(self) -> Any:
        """The recorded graph as a ``ComputationGraph`` (drawable, with views)."""
        from ..drawing import ComputationGraph

        if self._session is None or self._session.graph.root is None:
            raise TensorviewError(
                "nothing was recorded: call the model inside the `with Recorder(model)` block"
            )
        return ComputationGraph(self._session.graph, self.graph_options)

    def _recording_error(self, session: Session, exc: Exception) -> RecordingError:
        from ..drawing import ComputationGraph

        g = session.graph
        path, op = session.failure or ("", "")
        where = f"module {path!r}" if path else "the root module"
        cls = next((m.cls_name for m in g.modules() if m.path == path and m.failed), "")
        if cls:
            where += f" ({cls})"
        if op:
            where += f", op {op!r}"
        g.error = f"{type(exc).__name__}: {exc}"
        msg = f"forward raised in {where}: {type(exc).__name__}: {exc}"
        partial = ComputationGraph(g, self.graph_options) if g.root is not None else None
        err_cls: type[RecordingError] = RecordingError
        if not isinstance(exc, RuntimeError):
            # keep `except ValueError` (or the like) in the caller's code working
            try:
                err_cls = type(f"RecordingError[{type(exc).__name__}]", (RecordingError, type(exc)), {})
            except TypeError:
                err_cls = RecordingError
        try:
            err = err_cls(msg, graph=partial, module_path=path)
        except Exception:
            err = RecordingError(msg, graph=partial, module_path=path)
        return err


def _check_graph_options(options: Any) -> None:
    from ..transform import ViewOptions

    if options is not None and not isinstance(options, ViewOptions):
        raise InvalidTypeError(
            f"graph_options must be a tensorview.ViewOptions (e.g. ViewOptions(depth=2)) or None, "
            f"got {type(options).__name__}: {summary(options)}"
        )


def is_patched() -> bool:
    """Whether tensorview's ``nn.Module.__call__`` wrapper is installed (for tests)."""
    return bool(getattr(nn.Module.__call__, "__tensorview__", False))


__all__ = ["Recorder", "is_patched"]

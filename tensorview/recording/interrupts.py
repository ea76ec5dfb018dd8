"""Interrupts never leave anything behind: asynchronous exceptions are deferred while
tensorview changes or restores process state.

A Ctrl-C (Jupyter's interrupt is a SIGINT), a ``signal.alarm`` time limit whose handler
raises (pytest-timeout's signal method, notebook time limits), a SIGTERM handler raising
``SystemExit``: CPython runs a signal's Python handler between two bytecodes, so its
exception can land anywhere: after ``nn.Module.__call__`` is patched but before the
``try`` that undoes it, at the first bytecode of an ``__exit__``, in the middle of a
``finally``.  No ordering of statements makes all of those safe, so while a recording is
set up and torn down, the Python handler of every signal that has one is swapped for one
that remembers the signal; it is delivered (the original handler is called with it) once
everything is back as it was, or as soon as the model's own ``forward`` starts.

* ``deferred(anchor)`` wraps a whole recording (``draw_graph``, a ``Recorder`` block):
  signals are deferred while tensorview's (or torch's, called by tensorview) code runs,
  and delivered at once in the model's ``forward`` (``allow()`` around it) and in the
  caller's own code inside a ``with Recorder`` block (frames reached from ``anchor``, the
  caller's frame, without passing through tensorview).
* A second signal of a kind already pending is delivered at once (the user insists).
* Only the main thread gets signals, so elsewhere all of this does nothing; a handler
  that is not a Python callable (``SIG_IGN``, ``SIG_DFL``) is left alone, and so is a
  handler somebody installs while we are active.
* An exception no handler raises (``PyThreadState_SetAsyncExc``, as debuggers and thread
  killers use) cannot be deferred: the clean-up steps are idempotent and retried when
  one lands in them (``run_steps``), and every recording first heals what an interrupted
  one left (patch.py).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from .tensor import current_session

#: ``signal.getsignal``/``signal.signal`` without their conversions to and from enums (~1 us
#: a signal, for all 60-odd signals at each recording's start and end)
_getsignal = getattr(signal, "_signal", signal).getsignal
_setsignal = getattr(signal, "_signal", signal).signal
#: every signal number of this platform (SIGKILL and SIGSTOP never have Python handlers)
_SIGNALS = tuple(sorted(signal.valid_signals() - {getattr(signal, "SIGKILL", -1), getattr(signal, "SIGSTOP", -1)}))


class _State:
    """The one guard of the process (signals reach the main thread only)."""

    def __init__(self) -> None:
        self.owner: deferred | None = None  # the outermost ``deferred`` in effect
        self.saved: dict[int, Any] = {}  # the handlers we replaced, by signal number
        self.anchor: FrameType | None = None  # the caller's frame: its own code is not deferred
        self.deferring = False  # False while the model's forward runs
        self.pending: list[int] = []  # signals received and not yet delivered, in order


_STATE = _State()


def _handler(signum: int, frame: FrameType | None) -> None:
    """Our handler of every signal while a recording is set up or torn down."""
    s = _STATE
    if s.deferring and signum not in s.pending and _inside_tensorview(frame, s.anchor):
        s.pending.append(signum)
        return
    if signum in s.pending:
        s.pending.remove(signum)
    saved = s.saved.get(signum)
    if callable(saved):
        saved(signum, frame)


def _inside_tensorview(frame: FrameType | None, anchor: FrameType | None) -> bool:
    """Whether ``frame`` runs tensorview code, or code tensorview called, below ``anchor``."""
    f = frame
    while f is not None and f is not anchor:
        if _ours(f):
            return True
        f = f.f_back
    return False


def _ours(f: FrameType) -> bool:
    name = str(f.f_globals.get("__name__", ""))
    return name == "tensorview" or name.startswith("tensorview.")


def caller_frame() -> FrameType | None:
    """The innermost frame outside tensorview: the user's code that called us."""
    f: FrameType | None = sys._getframe(1)
    while f is not None and _ours(f):
        f = f.f_back
    return f


def _main() -> bool:
    return threading.get_ident() == threading.main_thread().ident


def _deliver() -> None:
    """Hand the deferred signals to their original handlers (which raise, usually)."""
    s = _STATE
    while s.pending:
        signum = s.pending.pop(0)
        saved = s.saved.get(signum)
        if callable(saved):
            saved(signum, sys._getframe(1))


def _python_handlers() -> dict[int, Any]:
    """The signals whose handler is a Python callable now (ours: what it replaced)."""
    s = _STATE
    found: dict[int, Any] = {}
    for signum in _SIGNALS:
        handler = _getsignal(signum)
        if handler is _handler:  # left installed somehow: what it replaced is still saved
            handler = s.saved.get(signum)
        if callable(handler):
            found[signum] = handler
    return found


def _put_back(saved: dict[int, Any]) -> None:
    """Our handler out again wherever it still is (one set meanwhile by others stays)."""
    for signum, handler in saved.items():
        if _getsignal(signum) is _handler:
            _setsignal(signum, handler)


class deferred:
    """``with deferred(anchor):`` defers signals inside tensorview code for the block (see
    the module docstring); nested uses do nothing.  ``anchor`` is the caller's frame."""

    __slots__ = ("anchor", "entered")

    def __init__(self, anchor: FrameType | None) -> None:
        self.anchor = anchor
        self.entered: FrameType | None = None  # the frame that entered it (``_in_effect``)

    def __enter__(self) -> None:
        s = _STATE
        if not _main():
            return
        if s.owner is not None:
            if _in_effect(s.owner):
                return  # nested: the outer one defers
            s.owner.restore()  # left by a recording whose clean-up was cut short: heal first
            s.pending.clear()
        self.entered = sys._getframe(1)
        saved = _python_handlers()
        if not saved:
            return
        s.saved, s.anchor, s.pending, s.deferring = saved, self.anchor, [], True
        s.owner = self  # the exit undoes what follows, whatever part of it happened
        try:
            for signum in saved:  # from here on, that signal waits
                _setsignal(signum, _handler)
        except ValueError:  # not the main interpreter: no signal handling here
            s.owner = None
            _put_back(saved)
        except BaseException:  # one not swapped yet fired (``with`` runs no exit then)
            self.__exit__()
            raise

    def __exit__(self, *exc: object) -> None:
        caught = run_steps(self.restore)
        if caught is not None:  # an asynchronous exception: it stands for the deferred ones
            _STATE.pending.clear()
            raise caught
        self.deliver()

    def restore(self) -> None:
        """The handlers back (idempotent: a clean-up step); signals wait until then.  The
        frames are let go: a kept ``Recorder`` holds its guard, and the caller's frame would
        keep every local of the caller alive after it returned."""
        s = _STATE
        if s.owner is self:
            _put_back(s.saved)
            s.owner = s.anchor = None
        self.anchor = self.entered = None

    def deliver(self) -> None:
        """The signals deferred, to their handlers (after ``restore``)."""
        if _STATE.owner is None:
            _deliver()


def _in_effect(owner: deferred) -> bool:
    """Whether ``owner`` still guards a recording: the frame that entered it is running
    (``draw_graph``), or a ``with Recorder`` block is open in this thread."""
    if current_session() is not None:
        return True
    f: FrameType | None = sys._getframe(1)
    while f is not None:
        if f is owner.entered:
            return True
        f = f.f_back
    return False


def allow() -> None:
    """The model's forward starts: signals act at once (deferred ones are delivered now)."""
    s = _STATE
    if s.owner is not None and _main():
        s.deferring = False
        _deliver()


def block() -> None:
    """The model's forward has ended: defer signals again until tensorview has cleaned up."""
    s = _STATE
    if s.owner is not None and _main():
        s.deferring = True


def run_steps(*steps: Callable[[], Any]) -> BaseException | None:
    """Run the clean-up ``steps`` in order, each to its end: an exception landing in one (an
    asynchronous one, which no handler defers, or a failure) is kept and that step run again
    (at most 3 times; steps are idempotent), then the next one.  Gives back the first
    exception caught, for the caller to raise once everything is done."""
    try:
        return _run_steps(steps)
    except BaseException as e:  # noqa: BLE001 - landed between two steps: all once more
        return _run_steps(steps) or e


def _run_steps(steps: tuple[Callable[[], Any], ...]) -> BaseException | None:
    first: BaseException | None = None
    i = tries = 0
    while True:
        try:
            if i == len(steps):
                return first
            steps[i]()
            i, tries = i + 1, 0
        except BaseException as e:  # noqa: BLE001 - raised by the caller after clean-up
            if first is None:
                first = e
            tries += 1
            if tries == 3:
                i, tries = i + 1, 0


__all__ = ["allow", "block", "caller_frame", "deferred", "run_steps"]

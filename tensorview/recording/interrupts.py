"""Ctrl-C never leaves anything behind: ``KeyboardInterrupt`` is deferred while tensorview
changes or restores process state.

A Ctrl-C (Jupyter's interrupt is a SIGINT) is handled by CPython between two bytecodes,
so it can land anywhere: after ``nn.Module.__call__`` is patched but before the ``try``
that undoes it, at the first bytecode of an ``__exit__``, in the middle of a ``finally``.
No ordering of statements makes all of those safe, so while a recording is set up and
torn down the SIGINT handler is swapped for one that remembers the interrupt; it is
delivered (the original handler is called: ``KeyboardInterrupt``) once everything is
back as it was, or as soon as the model's own ``forward`` starts.

* ``deferred(anchor)`` wraps a whole recording (``draw_graph``, a ``Recorder`` block):
  Ctrl-C is deferred while tensorview's (or torch's, called by tensorview) code runs,
  and delivered at once in the model's ``forward`` (``allowed()`` around it) and in the
  caller's own code inside a ``with Recorder`` block (frames reached from ``anchor``, the
  caller's frame, without passing through tensorview).
* A second Ctrl-C while one is pending is delivered at once (the user insists).
* Only the main thread gets signals, so elsewhere all of this does nothing; a handler
  that is not a Python callable (``SIG_IGN``, ``SIG_DFL``) is left alone, and so is a
  handler somebody installs while we are active.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType
from typing import Any

_SIGINT = signal.SIGINT


class _State:
    """The one guard of the process (signals reach the main thread only)."""

    def __init__(self) -> None:
        self.owner: object | None = None  # the outermost ``deferred`` in effect
        self.saved: Any = None  # the handler we replaced
        self.anchor: FrameType | None = None  # the caller's frame: its own code is not deferred
        self.deferring = False  # False while the model's forward runs
        self.pending = 0  # interrupts received and not yet delivered


_STATE = _State()


def _handler(signum: int, frame: FrameType | None) -> None:
    """Our SIGINT handler while a recording is set up or torn down."""
    s = _STATE
    if s.deferring and not s.pending and _inside_tensorview(frame, s.anchor):
        s.pending += 1
        return
    s.pending = 0
    saved = s.saved
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
    """Hand the deferred interrupt to the original handler (``KeyboardInterrupt``)."""
    s = _STATE
    if s.pending:
        s.pending = 0
        saved = s.saved
        if callable(saved):
            saved(_SIGINT, sys._getframe(1))


class deferred:
    """``with deferred(anchor):`` defers Ctrl-C inside tensorview code for the block (see
    the module docstring); nested uses do nothing.  ``anchor`` is the caller's frame."""

    __slots__ = ("anchor",)

    def __init__(self, anchor: FrameType | None) -> None:
        self.anchor = anchor

    def __enter__(self) -> None:
        s = _STATE
        if s.owner is not None or not _main():
            return
        old = signal.getsignal(_SIGINT)
        if old is _handler:  # left installed somehow: what it replaced is still saved
            old = s.saved
        if not callable(old):
            return
        s.saved, s.anchor, s.pending, s.deferring = old, self.anchor, 0, True
        try:
            signal.signal(_SIGINT, _handler)  # from here on an interrupt waits...
        except ValueError:  # not the main interpreter: no signal handling here
            return
        s.owner = self  # ...for the exit, which undoes this

    def __exit__(self, *exc: object) -> None:
        s = _STATE
        if s.owner is not self:
            return
        s.owner = None  # an interrupt from here on is still deferred, until the handler is back
        if signal.getsignal(_SIGINT) is _handler:
            signal.signal(_SIGINT, s.saved)
        s.anchor = None
        _deliver()


def allow() -> None:
    """The model's forward starts: Ctrl-C acts at once (a deferred one is delivered now)."""
    s = _STATE
    if s.owner is not None and _main():
        s.deferring = False
        _deliver()


def block() -> None:
    """The model's forward has ended: defer Ctrl-C again until tensorview has cleaned up."""
    s = _STATE
    if s.owner is not None and _main():
        s.deferring = True


__all__ = ["allow", "block", "caller_frame", "deferred"]

"""Patches that undo themselves.

``SharedPatch`` installs one wrapper for all users and removes it when the last one is
done (the Recorder releases it on exit, also on exceptions and KeyboardInterrupt).  It
restores the value it found when patching, not a value saved at import time, and leaves
the attribute alone if somebody else replaced our patch in the meantime (so another
tool's later patch is never clobbered).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

_MISSING = object()


def unwrap(value: Any) -> Any:
    """``value`` without the wrappers of ours on top of it (marked ``__tensorview__``, each
    wrapping ``__wrapped__``): a stale wrapper is never taken for the original."""
    for _ in range(64):
        if not getattr(value, "__tensorview__", False) or not hasattr(value, "__wrapped__"):
            break
        value = value.__wrapped__
    return value


class SharedPatch:
    """One patch shared by every recorder in the process, installed by the first user and
    removed by the last (recorders in several threads each count once).

    ``installed`` is our wrapper while it is in place (a wrapper acts only while it is
    this one, so one left in another tool's chain is inert), ``original`` what it wraps:
    never a wrapper of ours, even if one was left installed (see ``unwrap``).  Both steps
    first change the attribute, then the bookkeeping, so an interruption between them
    heals at the next use; tensorview also defers Ctrl-C around them (interrupts.py)."""

    def __init__(
        self, obj: Any, name: str, make: Callable[[Any], Any], state: Callable[[], Any] = lambda: None
    ) -> None:
        #: ``make(original)`` makes the wrapper; it is made again when ``state()`` changed
        self._obj, self._name, self._make, self._state = obj, name, make, state
        self._lock = threading.Lock()
        self._holders: dict[object, int] = {}  # token -> the thread that holds it
        self.installed: Any = None
        self.original: Any = None
        #: (original, ``state()`` then, the wrapper made for them)
        self._made: tuple[Any, Any, Any] | None = None

    @property
    def _users(self) -> int:
        return len(self._holders)

    def acquire(self) -> object:
        """Install the patch unless in place; gives back the token to ``release`` with.

        A holder that never released (an exception landed in its clean-up) is let go here:
        one of this thread (a thread holds one at a time: recorders do not nest) or of a
        thread that has ended."""
        token = object()
        with self._lock:
            me = threading.get_ident()
            if self._holders:
                alive = {t.ident for t in threading.enumerate()}
                for held, thread in list(self._holders.items()):
                    if thread == me or thread not in alive:
                        del self._holders[held]
            if not self._holders or self.installed is None:
                original = unwrap(getattr(self._obj, self._name))
                made, state = self._made, self._state()
                # the wrapper made last time, for the same original in the same state (making
                # one costs ~50 us with Dynamo loaded); a stale one wraps another original
                if made is not None and made[0] is original and made[1] == state:
                    wrapper = made[2]
                else:
                    wrapper = self._make(original)
                self._made = (original, state, wrapper)
                self.original = original
                setattr(self._obj, self._name, wrapper)
                self.installed = wrapper
                self._holders.clear()
            self._holders[token] = me
        return token

    def release(self, token: object) -> None:
        """``token``'s holder is done: the last one puts the original back.  Idempotent, so
        a clean-up interrupted in it can run it again."""
        with self._lock:
            self._holders.pop(token, None)
            if self._holders or self.installed is None:
                return
            current = self._obj.__dict__.get(self._name, _MISSING)
            if current is self.installed:
                setattr(self._obj, self._name, self.original)
            else:
                warnings.warn(
                    f"{getattr(self._obj, '__name__', self._obj)}.{self._name} was replaced by someone else "
                    "while tensorview was recording; leaving their value in place",
                    RuntimeWarning,
                    stacklevel=3,
                )
            self.installed = None

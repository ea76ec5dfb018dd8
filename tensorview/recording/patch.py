"""Patches that undo themselves.

``Patcher`` records each patch and ``restore()`` undoes them in reverse order (the
Recorder calls it on exit, also on exceptions and KeyboardInterrupt).  It restores the
value it found when patching, not a value saved at import time, and leaves an attribute
alone if somebody else replaced our patch in the meantime (so another tool's later patch
is never clobbered).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

_MISSING = object()


class Patcher:
    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any, Any]] = []

    def patch(self, obj: Any, name: str, value: Any) -> None:
        old = obj.__dict__.get(name, _MISSING) if isinstance(obj, type) else getattr(obj, name, _MISSING)
        setattr(obj, name, value)
        self._undo.append((obj, name, old, value))

    def restore(self) -> None:
        while self._undo:
            obj, name, old, ours = self._undo.pop()
            current = obj.__dict__.get(name, _MISSING) if isinstance(obj, type) else getattr(obj, name, _MISSING)
            if current is not ours:
                warnings.warn(
                    f"{getattr(obj, '__name__', obj)}.{name} was replaced by someone else while "
                    "tensorview was recording; leaving their value in place",
                    RuntimeWarning,
                    stacklevel=2,
                )
                continue
            if old is _MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, old)


class SharedPatch:
    """One patch shared by every recorder in the process, installed by the first user and
    removed by the last (recorders in several threads each count once)."""

    def __init__(self, obj: Any, name: str, make: Callable[[Any], Any]) -> None:
        self._obj, self._name, self._make = obj, name, make
        self._lock = threading.Lock()
        self._users = 0
        self._patcher: Patcher | None = None
        self.original: Any = None

    def acquire(self) -> None:
        with self._lock:
            if self._users == 0:
                self.original = getattr(self._obj, self._name)
                self._patcher = Patcher()
                self._patcher.patch(self._obj, self._name, self._make(self.original))
            self._users += 1

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._patcher is not None:
                self._patcher.restore()
                self._patcher = None

"""Progress on stderr: a step that runs longer than ``after`` seconds says what it is
doing when that time has passed, and how long it took when it ends; ``--verbose`` shows
every step, ``--quiet`` none (errors are always printed)."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

#: seconds a step runs before it is announced
AFTER = 1.0


class Progress:
    def __init__(self, *, quiet: bool = False, verbose: bool = False, stream: TextIO | None = None) -> None:
        self.quiet = quiet
        self.verbose = verbose and not quiet
        self.stream = stream if stream is not None else sys.stderr
        self._lock = threading.Lock()

    def say(self, text: str) -> None:
        """A line on stderr unless ``--quiet``."""
        if not self.quiet:
            with self._lock:
                print(f"tensorview: {text}", file=self.stream, flush=True)

    def hint(self, text: str) -> None:
        self.say(f"hint: {text}")

    @contextlib.contextmanager
    def step(self, doing: str, done: str = "") -> Iterator[list[str]]:
        """``with progress.step("recording LlamaModel") as result:`` announces the step
        when it is slow (or always with ``--verbose``) and then prints ``done`` (or
        ``doing``) with the elapsed time; the body may append a more precise end text
        to ``result`` (``"recorded 4905 nodes"``)."""
        start = time.perf_counter()
        announced = threading.Event()

        def announce() -> None:
            announced.set()
            self.say(f"{doing}...")

        timer: threading.Timer | None = None
        if self.verbose:
            announce()
        elif not self.quiet:
            timer = threading.Timer(AFTER, announce)
            timer.daemon = True
            timer.start()
        result: list[str] = []
        try:
            yield result
        finally:
            if timer is not None:
                timer.cancel()
                timer.join()  # an announcement under way is printed before the end line
        if announced.is_set():
            end = result[-1] if result else (done or doing)
            self.say(f"{end} in {time.perf_counter() - start:.2f} s")

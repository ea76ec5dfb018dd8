"""Every graph recorded in any test passes ``Graph.lint()`` (autouse check)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from tensorview.recording import recorder as _recorder


@pytest.fixture(autouse=True)
def _lint_every_recorded_graph(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    graphs = []
    original_exit = _recorder.Recorder.__exit__

    def exit_and_keep(self, *exc):  # type: ignore[no-untyped-def]
        if self._session is not None:
            graphs.append(self._session.graph)
        return original_exit(self, *exc)

    monkeypatch.setattr(_recorder.Recorder, "__exit__", exit_and_keep)
    torch.manual_seed(0)
    yield
    for g in graphs:
        if g.root is not None:
            g.lint()

"""Every graph any test makes passes ``Graph.lint()`` (autouse check).

The lint runs where every graph is finished: ``NodeFactory.close`` calls the close hooks
of ``tensorview.graph.checks``, and every maker of graphs closes its factory (a
recording through any entry point, an imported program, a ``GraphBuilder`` script).  A
graph made some other way (nodes added, never closed) fails the test that made it:
``Graph.__init__`` is watched too.  Graphs made by fixtures of a wider scope are linted
as well, and a failure there fails the first test that uses them.  The terminal summary
says how many graphs were linted in the run.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from tensorview.graph import Graph, checks


class GraphWatch:
    """Graphs made and closed since the last check, and the lint failures among them."""

    def __init__(self) -> None:
        self.made: weakref.WeakSet[Graph] = weakref.WeakSet()
        self.closed: weakref.WeakSet[Graph] = weakref.WeakSet()
        self.errors: list[str] = []
        self.linted = 0
        self.unlinted = 0  # closed with lint=False: built broken on purpose by a test

    def on_close(self, g: Graph, lint: bool) -> None:
        self.closed.add(g)
        if not lint:
            self.unlinted += 1
            return
        if g.root is None:
            return
        self.linted += 1
        try:
            g.lint()
        except Exception as e:  # reported by the test's teardown, after its own failure
            self.errors.append(f"{type(e).__name__}: {e}")

    def check(self) -> None:
        """Fail on a lint error or a graph with a root call that was never closed."""
        errors, self.errors = self.errors, []
        left = [g for g in self.made if g.root is not None and g not in self.closed]
        self.made = weakref.WeakSet()
        assert not errors, f"a graph made here fails lint(): {errors[0]}"
        assert not left, f"{len(left)} graph(s) were made without NodeFactory.close, so never linted"


WATCH = GraphWatch()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "written_for(requirement): the third-party release a test module's names and config fields were written for",
    )
    original_init = Graph.__init__

    def init_and_watch(self: Graph) -> None:
        original_init(self)
        WATCH.made.add(self)

    Graph.__init__ = init_and_watch  # type: ignore[method-assign]
    checks.on_close(WATCH.on_close)


@pytest.fixture(autouse=True)
def graph_watch() -> Iterator[GraphWatch]:
    WATCH.check()  # graphs made by module- or session-scoped fixtures of this test
    torch.manual_seed(0)
    yield WATCH
    WATCH.check()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium (tests/browser.py) for the test module asking for it."""
    from .browser import Browser

    b = Browser()
    try:
        yield b
    finally:
        b.quit()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminalreporter.write_line(
        f"graph lint: {WATCH.linted} graphs linted, {WATCH.unlinted} built broken on purpose (lint=False)"
    )
    from importlib.metadata import PackageNotFoundError, version

    from .fixtures.hf import WRITTEN_FOR

    name, _, wanted = WRITTEN_FOR.partition("==")
    try:
        have = version(name)
    except PackageNotFoundError:
        have = "not installed"
    if have != wanted:  # `make test-latest`: say which release the tests met
        terminalreporter.write_line(f"tests written for {WRITTEN_FOR} ran with {name} {have}")

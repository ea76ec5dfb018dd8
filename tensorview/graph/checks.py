"""Hooks run on every graph when it is closed (no more nodes will be added).

``NodeFactory.close`` (factory.py), the end of every graph's making (a recording, an
imported program, a graph scripted with ``GraphBuilder``), calls ``closed(graph)``.
Nothing is registered by default; the test suite registers a hook that lints every
graph any test makes (tests/conftest.py), so no entry point can bypass the lint.

>>> from tensorview.graph import GraphBuilder
>>> seen = []
>>> remove = on_close(lambda g, lint: seen.append((len(g), lint)))
>>> b = GraphBuilder("Net")
>>> x = b.input((1, 4))
>>> b.output(b.op("relu", x, shape=(1, 4)))
>>> g = b.finish()
>>> remove()
>>> seen
[(4, True)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .graph import Graph

#: ``hook(graph, lint)``: ``lint`` is False where the maker asked for no lint (a graph
#: built broken on purpose by a test: ``GraphBuilder.finish(lint=False)``)
CloseHook = Callable[["Graph", bool], None]

_hooks: list[CloseHook] = []


def on_close(hook: CloseHook) -> Callable[[], None]:
    """Run ``hook`` on every graph closed from now on; returns the function that removes it."""
    _hooks.append(hook)

    def remove() -> None:
        if hook in _hooks:
            _hooks.remove(hook)

    return remove


def closed(graph: Graph, lint: bool = True) -> None:
    """Called by ``NodeFactory.close``: run the registered hooks (none by default)."""
    for hook in tuple(_hooks):
        hook(graph, lint)


__all__ = ["CloseHook", "closed", "on_close"]

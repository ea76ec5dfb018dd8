"""The lint of tests/conftest.py reaches every way a graph is made (issue 18): each entry
point's graph passes through ``NodeFactory.close`` and its hooks, and a graph made
without closing its factory is caught, so a new entry point cannot bypass the lint."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.cli import main
from tensorview.graph import Graph, GraphBuilder, NodeFactory, checks
from tensorview.graph.graph import EdgeList
from tensorview.recording import Recorder as IrRecorder

from .conftest import GraphWatch


def model() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)).eval()


@contextmanager
def closed_graphs() -> Iterator[list[Graph]]:
    seen: list[Graph] = []
    remove = checks.on_close(lambda g, lint: seen.append(g))
    try:
        yield seen
    finally:
        remove()


def record_ir() -> Graph:
    m = model()
    with IrRecorder(m) as rec:
        m(torch.randn(1, 4))
    return rec.graph


def record_tv() -> Graph:
    m = model()
    with tv.Recorder(m) as rec:
        m(torch.randn(1, 4))
    return rec.graph.graph


def export_program() -> Graph:
    program = torch.export.export(model(), (torch.randn(1, 4),))
    return tv.draw_graph(program).graph


def summarised() -> None:  # a Summary keeps no graph to compare: only the closing is checked
    tv.summary(model(), input_size=(1, 4))


def scripted() -> Graph:
    b = GraphBuilder("Net")
    x = b.input((1, 4))
    b.output(b.op("relu", x, shape=(1, 4)))
    return b.finish()


ENTRY_POINTS: dict[str, Callable[[], Graph | None]] = {
    "recording.Recorder": record_ir,
    "tv.Recorder": record_tv,
    "draw_graph": lambda: tv.draw_graph(model(), input_size=(1, 4)).graph,
    "draw_graph on meta": lambda: tv.draw_graph(model(), input_size=(1, 4), device="meta").graph,
    "summary": summarised,
    "record (torchrecorder)": lambda: tv.record(model(), input_data=torch.randn(1, 4)).graph,
    "import of an ExportedProgram": export_program,
    "GraphBuilder": scripted,
}


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_entry_points_graph_is_closed_and_linted(entry: str, graph_watch: GraphWatch) -> None:
    linted = graph_watch.linted
    with closed_graphs() as seen:
        graph = ENTRY_POINTS[entry]()
    assert seen and all(g.root is not None for g in seen)
    if graph is not None:  # the graph the user gets is one of those closed (and so linted)
        assert any(g is graph for g in seen)
    assert graph_watch.linted == linted + len(seen)


def test_the_cli_in_process_is_linted(tmp_path: Path, graph_watch: GraphWatch) -> None:
    linted = graph_watch.linted
    with closed_graphs() as seen:
        code = main(
            [
                "draw",
                "tests.fixtures.cli_models:TinyCNN",
                "--input-size",
                "1,3,8,8",
                "-o",
                str(tmp_path / "g.json"),
                "-q",
            ]
        )
    assert code == 0 and (tmp_path / "g.json").exists()
    assert len(seen) == 1 and graph_watch.linted == linted + 1


def test_a_graph_never_closed_fails_the_check(graph_watch: GraphWatch) -> None:
    factory = NodeFactory()
    factory.add_module("", "Net", "tests", None)
    with pytest.raises(AssertionError, match="made without NodeFactory.close"):
        graph_watch.check()
    factory.close()


def test_a_graph_failing_lint_fails_the_check(graph_watch: GraphWatch) -> None:
    b = GraphBuilder("Net")
    x = b.input((1, 4))
    b.output(b.op("relu", x, shape=(1, 4)))
    b.graph.edges.add(x, x)  # a tensor -> tensor edge: broken
    b.finish(lint=False)  # no lint asked: counted apart, not an error
    assert not graph_watch.errors
    b2 = GraphBuilder("Net")
    y = b2.input((1, 4))
    b2.output(b2.op("relu", y, shape=(1, 4)))
    b2.graph.edges.add(y, y)
    factory = NodeFactory()
    factory.graph = b2.graph  # closed by a factory that lints through the hooks only
    factory.close()
    with pytest.raises(AssertionError, match="fails lint"):
        graph_watch.check()


def test_an_interrupt_between_a_result_and_its_edge_leaves_a_linted_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (any asynchronous exception) after ``add_result`` appended the tensor and
    before the edge from its producer: closing completes the edge (found by this lint on the
    interrupt harness: one graph in 600)."""
    factory = NodeFactory()
    root = factory.add_module("", "Net", "tests", None)
    x = factory.add_tensor("x", root, (1, 4), "float32", "cpu", "input")
    factory.add_input(x)
    fn = factory.add_function("relu", root, [x.id])
    calls: list[Any] = []

    def interrupted_add(self: EdgeList, src: int, dst: int) -> None:
        calls.append((src, dst))
        raise KeyboardInterrupt

    monkeypatch.setattr(EdgeList, "add", interrupted_add)
    with pytest.raises(KeyboardInterrupt):
        factory.add_result("_out", root, (1, 4), "float32", "cpu", fn)
    monkeypatch.undo()
    factory.graph.root = root.id
    factory.close()
    g = factory.graph
    assert calls == [(fn.id, fn.id + 1)] and (fn.id, fn.id + 1) in list(g.edges)
    g.lint()


def test_no_bytecode_between_an_edges_two_ends() -> None:
    """An interrupt is raised between bytecodes: at none of those inside ``EdgeList.add``
    and ``add_into`` is an edge half added (found by this lint on the interrupt harness:
    an edge ``linear -> linear``, its target's id appended after the interrupt)."""
    import sys
    from types import FrameType

    edges = EdgeList()
    odd: list[int] = []

    def trace(frame: FrameType, event: str, arg: object) -> object:
        frame.f_trace_opcodes = True
        if event == "opcode" and len(edges._ids) % 2:
            odd.append(frame.f_lineno)
        return trace

    sys.settrace(trace)
    try:
        edges.add(0, 1)
        edges.add_into([2, 3], 4)
    finally:
        sys.settrace(None)
    assert list(edges) == [(0, 1), (2, 4), (3, 4)] and not odd

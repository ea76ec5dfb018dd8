"""``draw_graph(..., stats=("memory",))`` (tensorview/cost/memlayers.py): tv.memory's numbers
on the module calls of a drawing, in the DOT labels, the JSON and the viewer's data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.render import html as viewer_html
from tensorview.render.compact import decode

from .fixtures import cost_models as cm
from .test_html import Page

BATCH = 512


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 8))


def test_each_module_call_carries_what_it_holds_at_the_peak_and_adds() -> None:
    model = mlp()
    report = tv.memory(model, input_size=(BATCH, 16))
    assert report.peak_phase == "backward"  # the activations are alive at the peak
    g = tv.draw_graph(model, input_size=(BATCH, 16), stats=("memory",))
    notes = {m.path: g.graph.annotations.of(m.id) for m in g.graph.modules()}
    # what each call made that autograd still keeps at the peak: the output of the first
    # Linear (GELU saves it), GELU's (the second Linear saves it), the model's output
    held = {"0": BATCH * 64 * 4, "1": BATCH * 64 * 4, "2": BATCH * 8 * 4}
    assert {p: notes[p]["memory_held"] for p in held} == held
    assert notes[""]["memory_held"] == sum(held.values())  # the model's call holds its calls'
    rows = {m.path: m for m in report.by_module if m.phase == "forward"}
    assert {p: n["memory_added"] for p, n in notes.items()} == {p: rows[p].added_bytes for p in notes}
    assert notes["0"]["memory_added"] == BATCH * 64 * 4  # its output, nothing else at its peak
    assert str(notes["0"]["memory_held"]) == "128 KiB"  # Bytes: human units in labels, ints in JSON
    # the ops get none: the numbers are per module call
    assert not any("memory_held" in g.graph.annotations.of(n.id) for n in g.graph.nodes if n.kind == "function")


def test_the_numbers_are_in_the_dot_labels_the_json_and_the_viewer(tmp_path: Path) -> None:
    model = mlp()
    g = tv.draw_graph(model, input_size=(BATCH, 16), stats="memory")
    first = next(m for m in g.graph.modules() if m.path == "0")
    line = next(line for line in g.source.splitlines() if line.lstrip().startswith("_0 ["))
    assert "\\nmemory_held: 128 KiB\\nmemory_added: 128 KiB" in line
    nodes = {n["id"]: n for n in json.loads(json.dumps(g.to_json()))["nodes"]}
    assert nodes[first.id]["notes"]["memory_held"] == BATCH * 64 * 4
    page = Page(Path(g.save(tmp_path / "m.html")).read_text(encoding="utf-8"))
    data = decode(json.loads(viewer_html.script_json(page.data())))
    assert data["notes"]["memory_held"][first.id] == BATCH * 64 * 4


def test_a_module_called_twice_gets_each_calls_numbers() -> None:
    model = cm.TwiceUsed()
    g = tv.draw_graph(model, input_size=(BATCH, 4), stats=("memory",))
    report = tv.memory(model, input_size=(BATCH, 4))
    calls = sorted((m for m in g.graph.modules() if m.path == "fc"), key=lambda m: m.call_index)
    assert [m.call_index for m in calls] == [0, 1]
    rows = [m for m in report.by_module if m.path == "fc" and m.phase == "forward"]
    assert len(rows) == 2
    got = [(g.graph.annotations.of(m.id)["memory_held"], g.graph.annotations.of(m.id)["memory_added"]) for m in calls]
    assert got == [(r.held_at_peak, r.added_bytes) for r in rows]
    assert got[0][1] == got[1][1] == BATCH * 4 * 4  # each call adds its output


def test_memory_with_other_stats_and_a_bad_name() -> None:
    g = tv.draw_graph(mlp(), input_size=(BATCH, 16), stats=("params", "memory"))
    assert {"params", "memory_held", "memory_added"} <= set(g.graph.annotations.names())
    with pytest.raises(tv.InvalidInputError, match=r"stat.*'memroy'.*memory"):
        tv.draw_graph(mlp(), input_size=(BATCH, 16), stats=("memroy",))


def test_a_frozen_model_gets_the_numbers_of_inference() -> None:
    model = mlp().requires_grad_(False)
    g = tv.draw_graph(model, input_size=(BATCH, 16), stats=("memory",))
    report = tv.memory(model, input_size=(BATCH, 16), mode="eval")
    rows = {m.path: m for m in report.by_module}
    notes = {m.path: g.graph.annotations.of(m.id) for m in g.graph.modules()}
    assert {p: (n["memory_held"], n["memory_added"]) for p, n in notes.items()} == {
        p: (rows[p].held_at_peak, rows[p].added_bytes) for p in notes
    }
    assert set(report.phases) == {"forward"} and report.peak_module == "1"  # GELU makes its output
    # ... while the first Linear's output, its input, is still alive; no activation is kept for backward
    assert notes["0"]["memory_added"] == notes["0"]["memory_held"] == BATCH * 64 * 4
    assert notes["2"]["memory_held"] == 0

"""``tv.diff(..., stats=True)``: each matched call's own FLOPs and bytes saved for backward
(the cost probe's ``flops``/``saved_bytes`` layers, summed over the call's own ops) and the
whole models' totals, in the report, the JSON, the picture and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tensorview as tv
from tensorview.compare.merged import merged_source

from .fixtures.cli import isolated_cli, run  # noqa: F401  (isolated_cli: autouse here)
from .fixtures.diff_models import IDS, Spec, Tiny
from .test_diff import TINY_EDITS, edits

S = Spec()
D, T = S.dim, 8  # width and tokens: a Linear(d, h) on (1, T, d) costs 2 * T * d * h FLOPs
WIDER = S.but(hidden=48)


def kinds(d: Any) -> dict[str, list[str]]:
    return {c.a: sorted(c.kinds) for c in d.changed}


def test_own_flops_and_totals_of_a_wider_mlp() -> None:
    d = tv.diff(Tiny(S), Tiny(WIDER), input_data=IDS, stats=True)
    up = next(c for c in d.changed if c.a == "layers.0.mlp.up")
    flops = [x.detail for x in up.differences if x.kind == "flops"]
    assert flops == [f"{2 * T * D * S.hidden:,} -> {2 * T * D * 48:,}"]
    assert "flops" in kinds(d)["layers.0.mlp.down"] and "flops" not in kinds(d)["layers.0.mlp.act"]
    fa, fb = d.totals["flops"]
    assert fa - fb == S.layers * 2 * (2 * T * D * (S.hidden - 48))  # two Linears per layer
    assert str(d).splitlines()[-2] == f"  total flops {fa:,} -> {fb:,}"
    data = json.loads(d.to_json())
    assert data["totals"]["flops"] == {"a": fa, "b": fb}
    assert {"kind": "flops", "detail": flops[0]} in data["changed"][0]["differences"]
    # no call above is changed by what changed inside it: own costs only
    assert set(kinds(d)) == {f"layers.{i}.mlp.{p}" for i in (0, 1) for p in ("up", "act", "down")}


@pytest.mark.parametrize("name", list(TINY_EDITS))
def test_costs_change_no_other_call_than_the_injected_edit(name: str) -> None:
    spec, expected = TINY_EDITS[name]
    d = tv.diff(Tiny(S), Tiny(spec), input_data=IDS, stats=True)
    got = edits(d)
    assert {k: [x for x in v if x not in ("flops", "saved_bytes")] for k, v in got["changed"].items()} == expected[
        "changed"
    ]
    assert (got["added"], got["removed"], got["renamed"]) == (
        expected["added"],
        expected["removed"],
        expected["renamed"],
    )
    assert edits(tv.diff(Tiny(S), Tiny(spec), input_data=IDS, stats=True, ignore="flops,saved_bytes")) == expected


def test_the_same_architecture_has_the_same_costs() -> None:
    d = tv.diff(Tiny(S), Tiny(S.but(reverse_build=True, attn_name="self_attn")), input_data=IDS, stats=True)
    assert d.same_structure and not d.totals and len(d.renamed) == 2


def test_saved_graphs_with_costs_are_compared_without_asking(tmp_path: Path) -> None:
    paths = []
    for name, spec in (("a", S), ("b", WIDER)):
        path = tmp_path / f"{name}.json"
        tv.draw_graph(Tiny(spec), input_data=IDS, stats=("flops", "saved_bytes")).save(str(path))
        paths.append(str(path))
    d = tv.diff(*paths)
    assert "flops" in d.totals and "flops" in kinds(d)["layers.0.mlp.up"]
    plain = tv.diff(paths[0], Tiny(WIDER), input_data=IDS)  # one side has no costs: none compared
    assert not plain.totals and "flops" not in kinds(plain)["layers.0.mlp.up"]


def test_the_merged_picture_writes_cost_changes_on_the_label() -> None:
    dot = merged_source(tv.diff(Tiny(S), Tiny(WIDER), input_data=IDS, stats=True))
    assert f"flops {2 * T * D * S.hidden:,} -> {2 * T * D * 48:,}" in dot


def test_the_cli_compares_costs_with_stats(capsys: pytest.CaptureFixture[str]) -> None:
    target = "tests.fixtures.cli_models:Showcase"
    code, out, _ = run(capsys, "diff", target, target, "--input-size", "1,3,8,8", "--stats", "-q")
    assert code == 0 and out.strip().endswith("identical")


def test_stats_must_be_a_bool() -> None:
    with pytest.raises(tv.InvalidTypeError, match=r"stats must be True or False, got 'flops'"):
        tv.diff(Tiny(S), Tiny(S), input_data=IDS, stats="flops")  # type: ignore[arg-type]

"""The command's options, inputs, messages and exit statuses, run in this process through
``tensorview.cli.main(argv)`` (test_cli.py runs it as a real process)."""

from __future__ import annotations

import io
import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import torch

import tensorview
import tensorview as tv
from tensorview.cli import progress
from tensorview.cli.values import InputSpec, parse_input, parse_pairs
from tests.fixtures import needs
from tests.fixtures.cli_models import Showcase, Stack

from .fixtures.cli import isolated_cli, run  # noqa: F401  (isolated_cli: autouse here)

HAS_DOT = shutil.which("dot") is not None or shutil.which("graphviz-pure") is not None
FIX = "tests.fixtures.cli_models"
TINY_LLAMA = (
    "num_hidden_layers=2,hidden_size=32,intermediate_size=64,num_attention_heads=4,"
    "num_key_value_heads=2,vocab_size=100,max_position_embeddings=64"
)


def modules_of(path: str) -> dict[str, dict[str, Any]]:
    data = json.loads(Path(path).read_text())
    return {n["path"]: n for n in data["nodes"] if n["kind"] == "module"}


def inputs_of(path: str) -> list[dict[str, Any]]:
    data = json.loads(Path(path).read_text())
    return [data["nodes"][i] for i in data["graph"]["inputs"]]


# -- parsing ---------------------------------------------------------------------------
def test_pairs_are_python_literals_split_outside_brackets() -> None:
    assert parse_pairs("a=1,b=[2, 3],c=(4,5),d='x,y',e=gelu,f=true,g=0.5", "--kwargs") == {
        "a": 1,
        "b": [2, 3],
        "c": (4, 5),
        "d": "x,y",
        "e": "gelu",
        "f": True,
        "g": 0.5,
    }


@pytest.mark.parametrize(
    "text, spec",
    [
        ("1,3,224,224", InputSpec((1, 3, 224, 224))),
        ("1x128:long", InputSpec((1, 128), torch.int64)),
        ("(2, 5):bfloat16", InputSpec((2, 5), torch.bfloat16)),
        ("input_ids=1x8:int32", InputSpec((1, 8), torch.int32, "input_ids")),
    ],
)
def test_input_sizes(text: str, spec: InputSpec) -> None:
    assert parse_input(text) == spec


# -- every view option reaches draw_graph ----------------------------------------------
VIEWS = [
    ([], {}),
    (["--depth", "1"], {"depth": 1}),
    (["--depth", "2", "--expand-nested"], {"depth": 2, "expand_nested": True}),
    (["--roll"], {"roll": True}),
    (["--fold", "false"], {"fold": False}),  # "auto" folds the repeats already
    (["--show-params", "--no-shapes"], {"show_params": True, "show_shapes": False}),
    (
        ["--show-inner-tensors", "--show-module-functions"],
        {"hide_inner_tensors": False, "hide_module_functions": False},
    ),
    (["--graph-dir", "LR", "--graph-name", "net"], {"graph_dir": "LR", "graph_name": "net"}),
    (["--style", "paper"], {"style": "paper"}),
    (["--fold", "true", "--open-folds"], {"fold": True, "open_folds": True}),
    (["--fold", "true", "--open-folds", "-1"], {"fold": True, "open_folds": -1}),
]


def test_every_view_option_has_a_flag() -> None:
    """The view flags are made from ViewOptions' fields (issue 21 C3): none can be missing."""
    import dataclasses

    from tensorview.cli.parser import VIEW_OPTIONS, build_parser
    from tensorview.graph import ViewOptions

    fields = [f.name for f in dataclasses.fields(ViewOptions)]
    assert "open_folds" in fields and list(VIEW_OPTIONS) == fields
    draw = build_parser().commands["draw"]
    flagged = {a.dest: a for a in draw._actions if a.option_strings}
    for f in dataclasses.fields(ViewOptions):
        assert f.name in flagged, f.name
        assert draw.get_default(f.name) == f.default, f.name  # the dataclass's default, not a copy


@pytest.mark.parametrize("flags, options", VIEWS, ids=[" ".join(f) or "defaults" for f, _ in VIEWS])
def test_view_options_match_draw_graph(
    capsys: pytest.CaptureFixture[str], flags: list[str], options: dict[str, Any]
) -> None:
    code, _, err = run(capsys, "draw", f"{FIX}:Showcase", "--input-size", "1,3,8,8", "-o", "x.gv", *flags)
    assert code == 0, err
    options = {"graph_name": "Showcase", **options}
    expected = tv.draw_graph(Showcase(), input_size=(1, 3, 8, 8), device="meta", **options)
    assert Path("x.gv").read_text() == expected.source
    if flags:  # each option changes the drawing
        assert expected.source != tv.draw_graph(Showcase(), input_size=(1, 3, 8, 8), graph_name="Showcase").source


def test_number_nodes_layout_and_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "draw", f"{FIX}:instance", "--input-size", "1,3,4,4", "--number-nodes", "-o", "-")
    assert code == 0 and out.startswith("digraph instance {") and "#1 " in out
    assert "error" not in err and "wrote" not in err  # stdout: no file written
    code, _, _ = run(capsys, "draw", f"{FIX}:instance", "--input-size", "1,3,4,4", "--format", "json", "-q")
    assert code == 0 and modules_of("instance.json")[""]["class"] == "TinyCNN"  # default name: the target's


def test_factory_and_kwargs(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "draw", f"{FIX}:build_model", "--kwargs", "width=6", "--kwargs", "depth=4",
                       "--input-size", "1x3x4x4", "-o", "m.json")  # fmt: skip
    assert code == 0, err
    modules = modules_of("m.json")
    assert "blocks.3" in modules and "blocks.4" not in modules
    assert modules["stem"]["output_shapes"] == [[1, 6, 4, 4]]


def test_named_inputs_and_dtypes(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "draw", f"{FIX}:Masked", "--input-size", "2x5:long", "--input-size", "mask=2x5",
                       "-o", "m.json", "--device", "cpu")  # fmt: skip
    assert code == 0, err
    ids, mask = inputs_of("m.json")
    assert (ids["output_shapes"], ids["dtypes"], ids["device"]) == ([[2, 5]], ["int64"], "cpu")
    assert (mask["output_shapes"], mask["dtypes"], mask.get("source_name")) == ([[2, 5]], ["float32"], "mask")


# -- transformers ----------------------------------------------------------------------
def test_hf_defaults_follow_the_config(capsys: pytest.CaptureFixture[str]) -> None:
    vit = "hidden_size=32,num_hidden_layers=1,num_attention_heads=4,intermediate_size=64,image_size=32,patch_size=8"
    code, _, err = run(capsys, "draw", "hf:vit", "--config", vit, "--config", "num_channels=2", "-o", "v.json")
    assert code == 0, err
    (pixels,) = inputs_of("v.json")
    assert pixels["output_shapes"] == [[1, 2, 32, 32]] and pixels["dtypes"] == ["float32"]
    t5 = "d_model=32,d_kv=8,d_ff=64,num_layers=1,num_heads=4,vocab_size=100,use_cache=False"
    code, _, err = run(capsys, "draw", "hf:t5", "--config", t5, "--seq-len", "6", "--batch-size", "2", "-o", "t.json")
    assert code == 0, err
    assert [(i["source_name"], i["output_shapes"]) for i in inputs_of("t.json")] == [
        ("input_ids", [[2, 6]]),
        ("decoder_input_ids", [[2, 6]]),
    ]


def test_hf_moe_on_meta_keeps_its_default_experts_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    """Drawn as from_config builds it (grouped_mm, float32), which torch 2.13's meta kernel
    alone refuses (recording/metafills.py fills it in)."""
    moe = (
        "num_hidden_layers=1,hidden_size=32,intermediate_size=64,num_attention_heads=4,num_key_value_heads=2,"
        "vocab_size=100,num_local_experts=4,num_experts_per_tok=2"
    )
    code, _, err = run(capsys, "draw", "hf:mixtral", "--config", moe, "--seq-len", "8", "-o", "moe.json")
    assert code == 0, err
    ops = [n["op"] for n in json.loads(Path("moe.json").read_text())["nodes"] if n["kind"] == "function"]
    assert ops.count("_grouped_mm") == 2 and "bmm" not in ops


def test_hf_task_and_unnamed_input_size(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "draw", "hf:llama", "--config", TINY_LLAMA, "--task", "causal-lm",
                       "--input-size", "1x7", "-o", "l.json")  # fmt: skip
    assert code == 0, err
    assert modules_of("l.json")[""]["class"] == "LlamaForCausalLM"
    (ids,) = inputs_of("l.json")
    assert ids["output_shapes"] == [[1, 7]] and ids["dtypes"] == ["int64"]  # took the default's name and dtype


# -- errors: one message, an exit status, no traceback ----------------------------------
USAGE_ERRORS = [
    (["draw", f"{FIX}:TinyCNN"], "has no default inputs: give their shapes with --input-size"),
    (["draw", f"{FIX}:Nope", "--input-size", "1,3"], "has no 'Nope'; models and factories there: ['Block', 'Broken'"),
    (["draw", f"{FIX}:NUMBER", "--input-size", "1,3"], "is a int, not an nn.Module"),
    (["draw", f"{FIX}:not_a_model_factory", "--input-size", "1"], "returned a int, not an nn.Module"),
    (["draw", f"{FIX}:instance", "--kwargs", "width=3", "--input-size", "1"], "is a model instance"),
    (["draw", f"{FIX}:TinyCNN", "--kwargs", "widht=3", "--input-size", "1"], "unexpected keyword argument 'widht'"),
    (["draw", f"{FIX}:TinyCNN", "--kwargs", "3", "--input-size", "1"], "bad --kwargs item '3'"),
    (["draw", "no_such_pkg.models:X", "--input-size", "1"], "no module named 'no_such_pkg'"),
    (["draw", "missing.py:X", "--input-size", "1"], "no such file: 'missing.py'"),
    (["draw", "noname", "--input-size", "1"], "bad target 'noname'"),
    (["draw", f"{FIX}:TinyCNN", "--input-size", "1,3,8,8", "-o", "x.bmpx"], "unknown save format: 'bmpx'"),
    (["draw", f"{FIX}:TinyCNN", "--input-size", "1,3,8,8", "-o", "noext"], "has no extension"),
    (["draw", f"{FIX}:TinyCNN", "--input-size", "1x3:flaot"], "unknown dtype 'flaot'"),
    (["draw", f"{FIX}:TinyCNN", "--input-size", "1,3", "--config", "a=1"], "--config and --task apply to hf:"),
    (["draw", f"{FIX}:TinyCNN", "--depth", "-1"], "bad depth '-1'"),
    (["draw", f"{FIX}:TinyCNN", "--fold", "maybe"], "bad fold 'maybe'"),
    (["draw", "hf:lama"], "unknown transformers model type 'lama'; did you mean llama"),
    (["draw", "hf:llama", "--config", "num_hidden_layer=2"], "did you mean num_hidden_layers?"),
    (["draw", "hf:meta-llama/Llama-3-8B"], "nothing is downloaded"),
    (["draw", "hf:llama", "--task", "dance"], "unknown --task 'dance'"),
    (["draw", "hf:"], "names no model after hf:"),
    (["frobnicate", "x"], "invalid choice: 'frobnicate'"),
    # issue 21 C3
    (["summary", f"{FIX}:TinyCNN", "--input-size", "1,3,8,8", "-o", "x.svg"], "bad summary output 'x.svg'"),
    (["draw", f"{FIX}:TinyCNN", "--quiet", "--verbose"], "argument -v/--verbose: not allowed with argument -q/--quiet"),
    (["draw", f"{FIX}:TinyCNN", "--dpeth", "2"], "unrecognized arguments: --dpeth 2 (did you mean --depth?)"),
    (["summary", f"{FIX}:TinyCNN", "--seqlen", "2"], "unrecognized arguments: --seqlen 2 (did you mean --seq-len?)"),
    (["draw", f"{FIX}:TinyCNN", "--open-folds", "first"], "bad open-folds 'first'"),
    (["draw", "hf:llama", "--device", "gpu"], "bad device 'gpu'"),
]


@pytest.mark.parametrize("argv, message", USAGE_ERRORS, ids=[" ".join(a) for a, _ in USAGE_ERRORS])
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2, err
    assert re.search(r"^tensorview: error: .*" + re.escape(message), err, re.M), err
    assert "Traceback" not in err and out == ""


MODEL_ERRORS = [
    (["draw", f"{FIX}:Broken", "--input-size", "2,4"], "forward raised in the root module (Broken), op 'view'"),
    (["draw", f"{FIX}:failing_factory", "--input-size", "2,4"], "factory exploded"),
    (["draw", "bad.py:X", "--input-size", "2,4"], "importing bad.py failed: ZeroDivisionError"),
]


@pytest.mark.parametrize("argv, message", MODEL_ERRORS, ids=[a[1] for a, _ in MODEL_ERRORS])
def test_model_errors_exit_1(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    Path("bad.py").write_text("x = 1 / 0\n")
    code, _, err = run(capsys, *argv)
    assert code == 1 and message in err and "Traceback" not in err, err
    code, _, err = run(capsys, *argv, "--debug")
    assert code == 1 and "Traceback (most recent call last)" in err and message in err


def test_meta_failures_suggest_the_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    Path("item.py").write_text(
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x * int(x.sum().item())\n"
    )
    code, _, err = run(capsys, "draw", "item.py:M", "--input-size", "2")
    assert code == 1 and "try --device cpu" in err, err
    code, _, err = run(capsys, "draw", "item.py:M", "--input-size", "2", "--device", "cpu", "-o", "m.json")
    assert code == 0, err


# -- summary: there when the cost model is ---------------------------------------------
def test_summary_without_the_cost_model(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tensorview, "summary", None)  # deleted, a lazy name would load again
    code, out, err = run(capsys, "summary", f"{FIX}:TinyCNN", "--input-size", "1,3,8,8")
    assert code == 2 and "the cost model (tensorview.summary), which is not available" in err and out == ""


def test_summary_calls_the_cost_model(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    class Result:
        def __str__(self) -> str:
            return "TABLE"

        def to_dict(self) -> dict[str, Any]:
            return {"total_params": 7}

    def summary(model: torch.nn.Module, input_size: Any = None, input_data: Any = None, *, device: Any = None,
                mode: str = "eval") -> Result:  # fmt: skip
        calls.append({"model": model, "input_data": input_data, "device": device, "mode": mode})
        return Result()

    monkeypatch.setattr(tensorview, "summary", summary, raising=False)
    code, out, err = run(capsys, "summary", "hf:llama", "--config", TINY_LLAMA, "--seq-len", "4", "--depth", "2")
    assert code == 0 and out == "TABLE\n", err
    (call,) = calls
    assert type(call["model"]).__name__ == "LlamaModel" and call["device"] == "meta"
    assert call["input_data"]["input_ids"].shape == (1, 4)  # depth is left out: this summary takes none
    code, _, _ = run(capsys, "summary", "hf:llama", "--config", TINY_LLAMA, "-o", "s.json", "-q")
    assert code == 0 and json.loads(Path("s.json").read_text()) == {"total_params": 7}
    code, _, _ = run(capsys, "summary", "hf:llama", "--config", TINY_LLAMA, "-o", "s.txt", "-q")
    assert code == 0 and Path("s.txt").read_text() == "TABLE\n"
    code, _, err = run(capsys, "summary", "hf:llama", "--config", TINY_LLAMA, "-o", "s.svg", "-q")
    assert code == 2 and "expected a .json file (the data) or a .txt file (the table)" in err
    assert not Path("s.svg").exists() and len(calls) == 3  # refused before anything ran


# -- progress and hints ----------------------------------------------------------------
def test_verbose_lists_every_step_and_quiet_none(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "draw", f"{FIX}:TinyCNN", "--input-size", "1,3,8,8", "-o", "x.json", "-v")
    assert code == 0
    lines = err.splitlines()
    for expected in ("building", "built TinyCNN (", "recording TinyCNN on meta with 1x3x8x8:float32",
                     "recorded", "view of", "wrote x.json"):  # fmt: skip
        assert any(expected in line for line in lines), (expected, lines)
    code, _, err = run(capsys, "draw", f"{FIX}:TinyCNN", "--input-size", "1,3,8,8", "-o", "x.json", "-q")
    assert code == 0 and err == ""


def test_a_slow_step_is_announced_with_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(progress, "AFTER", 0.0)
    with progress.Progress(stream=stream).step("laying out 9 nodes", "laid out 9 nodes"):
        while "laying out" not in stream.getvalue():  # until the announcement came
            time.sleep(0.001)
    assert stream.getvalue().splitlines()[0] == "tensorview: laying out 9 nodes..."
    assert stream.getvalue().splitlines()[1].startswith("tensorview: laid out 9 nodes in ")
    quiet = io.StringIO()
    monkeypatch.setattr(progress, "AFTER", 60.0)
    with progress.Progress(stream=quiet).step("fast"):
        pass
    assert quiet.getvalue() == ""


@pytest.mark.skipif(not HAS_DOT, reason=needs.DOT)
def test_hints_for_big_views(capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["draw", f"{FIX}:Stack", "--kwargs", "blocks=80", "--input-size", "1,4", "--depth", "1"]
    code, _, err = run(capsys, *flags, "--show-inner-tensors", "--fold", "false", "--layout", "exact", "-o", "s.svg")
    big = len(
        tv.draw_graph(Stack(80), input_size=(1, 4), depth=1, hide_inner_tensors=False, fold=False).get_view().nodes
    )
    folded = len(
        tv.draw_graph(Stack(80), input_size=(1, 4), depth=1, hide_inner_tensors=False, fold=True).get_view().nodes
    )
    assert code == 0 and big > 150 and folded < 10
    assert f"hint: --fold true draws {folded} nodes instead of {big}" in err
    assert "hint: --layout auto bounds Graphviz's work" in err
    code, _, err = run(capsys, *flags, "--fold", "true", "-o", "s.svg")
    assert code == 0 and "hint" not in err

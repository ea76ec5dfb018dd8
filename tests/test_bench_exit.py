"""`make bench` fails when a target fails (issue 18: it printed FAIL and exited 0)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bench_module(name: str):  # type: ignore[no-untyped-def]
    """bench/<name>.py, loaded with bench/ on the path as when it runs."""
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location(f"tv_bench_{name}", ROOT / "bench" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return module


def bench_run():  # type: ignore[no-untyped-def]
    return bench_module("run")


def test_a_failed_target_is_a_failed_exit_status(capsys) -> None:  # type: ignore[no-untyped-def]
    run = bench_run()
    assert run.exit_status([("fast", True, "1 s"), ("noted", None, "info")]) == 0
    assert run.exit_status([("fast", True, "1 s"), ("slow", False, "30 us/op > 15")]) == 1
    assert "1 target(s) failed: slow" in capsys.readouterr().err


def test_the_script_exits_with_mains_status() -> None:
    source = (ROOT / "bench" / "run.py").read_text()
    assert source.rstrip().endswith('if __name__ == "__main__":\n    sys.exit(main())')
    assert "    return exit_status(results)\n" in source


def test_the_anatomy_measures_each_piece_against_the_floor() -> None:
    """bench/anatomy.py (in docs/benchmarks.md): one row per piece, each isolated by its
    own model and measured for tensorview and the floor (timings are not checked here)."""
    anatomy = bench_module("anatomy")
    rows = anatomy.anatomy(n=20, repeats=1)
    assert [r[0] for r in rows] == ["op", "module call", "module held, not called", "per recording (a one-op model)"]
    assert all(isinstance(v, float) for r in rows for v in r[1:])
    held = anatomy.Ops(3, held=2)
    assert len(list(held.modules())) == 4 and held.n == 3  # three ops in forward, two modules never called
    text = anatomy.table(rows).splitlines()
    assert text[0].split() == ["piece", "tensorview", "us", "floor", "us", "difference"] and len(text) == 5


def test_the_gpu_results_are_reported_without_a_gpu() -> None:
    """bench/gpu.py: a machine without a GPU reports the results last measured on one
    (bench/gpu_results.json), each case with its ratio, device and date; a failed case is
    said, not dropped.  The measuring itself runs on a GPU only (tests/test_cuda.py's machine)."""
    import json

    gpu = bench_module("gpu")
    saved = json.loads((ROOT / "bench" / "gpu_results.json").read_text())
    assert {r["model"] for r in saved["overhead"]} == set(gpu.CASES)
    text = "\n".join(gpu.lines(saved))
    for r in saved["overhead"]:
        assert f"{r['model']}: {r['ops']} ops" in text and f"**{r['ratio']:.2f}x**" in text
    ((name, ok, detail),) = gpu.targets(saved)
    assert ok is None and saved["device"] in detail and saved["date"] in detail
    saved["overhead"][0] = {"model": "broken", "failed": "RuntimeError: out of memory"}
    assert "broken: failed: RuntimeError: out of memory" in "\n".join(gpu.lines(saved))

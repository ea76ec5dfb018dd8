"""tensorview vs torchview on the same models, in one process: prints one table and the
targets of issue 4 with pass/fail (``--write-docs`` also writes docs/benchmarks.md).

Columns: recorded ops (function nodes), plain forward, tensorview ``Recorder`` (record
only), tensorview ``draw_graph`` (record + DOT source), ``tv.summary`` (record with the
cost probe, grad enabled, on a copy: the cost table), torchview ``draw_graph`` (its
defaults, + ``visual_graph.source``), Graphviz ``dot -Tsvg`` of tensorview's default view,
and the ratios Recorder/plain and torchview/tensorview.  Times are medians of several runs
after a warm-up; judge by the ratios, which are taken in the same run.

The HTML viewer (open time of Llama-3-70B in headless Chromium, page size, a 100k-node
recording) and the cost of source locations are measured by bench/viewer.py, the layout
engines and a notebook of ten viewers by bench/layouts.py; start-up
(``tensorview --help``, ``import tensorview`` against ``import torch``) by bench/startup.py;
``tv.summary`` against torchinfo's ``summary`` by bench/summary_speed.py.

    python bench/run.py [--write-docs] [--only SUBSTRING] [--quick] [--no-viewer]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import time
import tracemalloc
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu  # noqa: E402
import summary_speed  # noqa: E402
from backward import measure as measure_backward  # noqa: E402
from backward import targets as backward_targets  # noqa: E402
from floor import as_recorded, minimal_recording  # noqa: E402
from models import CASES, Case, deep_mlp  # noqa: E402
from pictures import measure as measure_pictures  # noqa: E402
from pictures import targets as picture_targets  # noqa: E402
from startup import measure as measure_startup  # noqa: E402
from startup import targets as startup_targets  # noqa: E402
from timing import least_cpu_interleaved  # noqa: E402

from tensorview.api import draw_graph, summary  # noqa: E402
from tensorview.cost import CostProbe  # noqa: E402
from tensorview.recording import Recorder  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TORCHVIEW_BUDGET_S = 60.0  # per torchview call; a slower one is reported as "timeout"
DOT_TIMEOUT_S = 60.0
PROBE_US = 20  # issue 22: what the cost probe may add per recorded op on the CPU


class Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise Timeout


def timed(fn: Callable[[], Any], budget: float | None = None) -> float:
    """Seconds one call of ``fn`` takes; raises Timeout past ``budget`` (SIGALRM, main thread)."""
    gc.collect()
    if budget is not None:
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, budget)
    try:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    finally:
        if budget is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)


def median_time(fn: Callable[[], Any], repeats: int, budget: float | None = None) -> float:
    """Median of ``repeats`` timed runs after one warm-up (the warm-up is also the budget check)."""
    first = timed(fn, budget)
    if repeats <= 1:
        return first
    return statistics.median(timed(fn, budget) for _ in range(repeats))


# -- one model ------------------------------------------------------------------------------
def run_case(case: Case, repeats: int | None) -> dict[str, Any]:
    n = repeats or case.repeats
    row: dict[str, Any] = {"model": case.name, "device": case.device}
    model, inputs = case.build()
    device = case.device

    def plain() -> None:
        with torch.no_grad():
            model(**inputs)

    def record() -> Any:
        with torch.no_grad(), Recorder(model) as rec:
            model(**inputs)
        return rec

    def tv_draw() -> Any:
        g = draw_graph(model, input_data=inputs, device=device)
        return g, g.source

    rec = record()
    assert rec._session is not None
    row["ops"] = sum(1 for _ in rec._session.graph.functions())
    del rec
    row["plain"] = median_time(plain, n)
    row["record"] = median_time(record, n)
    if device == "cpu":  # the overhead per op: a difference of small numbers, taken the quiet way

        def floor() -> None:  # the least a recorder of this design costs (floor.py)
            with torch.no_grad(), minimal_recording([]):
                model(**recorded_inputs)

        recorded_inputs = as_recorded(inputs)
        times = least_cpu_interleaved([plain, record, floor], max(n, 7))
        row["plain_cpu"], row["record_cpu"], row["floor_cpu"] = times
    try:
        row["tv_draw"] = median_time(tv_draw, n)
        g, source = tv_draw()
        row["tv_nodes"] = source.count("\n")
    except Exception as e:  # report, do not hide
        row["tv_draw"] = f"failed: {type(e).__name__}: {e}"[:80]
        source = None
    try:
        row["tv_summary"] = median_time(lambda: summary(model, input_data=inputs, device=device, verbose=0), n)
    except Exception as e:  # report, do not hide
        row["tv_summary"] = f"failed: {type(e).__name__}: {e}"[:80]
    row["torchview"] = torchview_time(model, inputs, device, n)
    # torchlens keeps every op's record and does not honour the time budget on huge graphs
    row["torchlens"] = torchlens_time(model, inputs, device, n) if row["ops"] <= 20_000 else "skipped (>20k ops)"
    row["dot"] = dot_time(source) if source is not None else "n/a"
    return row


def torchview_time(model: Any, inputs: dict[str, Any], device: str, n: int) -> Any:
    try:
        import torchview
    except ImportError:
        return "not installed"

    def tv() -> Any:
        g = torchview.draw_graph(model, input_data=inputs, device=device)
        return g.visual_graph.source

    try:
        # the warm-up doubles as the budget check; the huge ones are timed once
        return median_time(tv, min(n, 3), TORCHVIEW_BUDGET_S)
    except Timeout:
        return "timeout"
    except Exception as e:
        return f"failed: {type(e).__name__}"


def torchlens_time(model: Any, inputs: dict[str, Any], device: str, n: int) -> Any:
    """``torchlens.trace(model, **inputs)`` with its defaults (it refuses meta tensors)."""
    if device == "meta":
        return "n/a (meta)"
    try:
        import torchlens
    except ImportError:
        return "not installed"

    # one input goes positionally (torchlens passes its own positional default otherwise)
    args = list(inputs.values()) if len(inputs) == 1 else None

    def tl() -> Any:
        return torchlens.trace(model, input_args=args, input_kwargs=None if args else inputs)

    try:
        return median_time(tl, min(n, 3), TORCHVIEW_BUDGET_S)
    except Timeout:
        return "timeout"
    except Exception as e:
        return f"failed: {type(e).__name__}"


def dot_time(source: str) -> Any:
    """CPU seconds ``dot -Tsvg`` spends on ``source`` (its own user + system time: load on
    the machine from other processes does not count)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        subprocess.run(
            ["dot", "-Tsvg", "-o", os.devnull],
            input=source.encode(),
            check=True,
            timeout=DOT_TIMEOUT_S,
            capture_output=True,
        )
    except subprocess.TimeoutExpired:
        return f">{DOT_TIMEOUT_S:.0f}"
    except subprocess.CalledProcessError as e:
        why = (e.stderr or b"").decode(errors="replace").strip().splitlines()
        return f"failed (rc {e.returncode}: {why[-1][:30] if why else 'no message'})"
    except FileNotFoundError:
        return "failed (no dot program)"
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


# -- scaling and memory ------------------------------------------------------------------------
def linearity() -> dict[str, Any]:
    """Recorder time per op at 1k and 100k ops (same MLP family, on the CPU)."""
    out: dict[str, Any] = {}
    for ops, reps in ((1_000, 7), (100_000, 2)):
        model, inputs = deep_mlp(ops)()

        def record(model: Any = model, inputs: Any = inputs) -> None:
            with torch.no_grad(), Recorder(model) as rec:
                model(**inputs)
            del rec

        out[ops] = median_time(record, reps) / ops
    out["ratio"] = out[100_000] / out[1_000]
    return out


def probe_cost(ops: int = 2_000, reps: int = 15) -> dict[str, float]:
    """What the cost probe adds per recorded op on the CPU (least CPU time of ``reps``,
    each way, without and with grad), and what the Recorder itself takes per op."""
    model, inputs = deep_mlp(ops)()

    def cpu_time(fn: Callable[[], Any]) -> float:
        gc.collect()
        t0 = time.process_time()
        fn()
        return time.process_time() - t0

    out: dict[str, float] = {}
    for grad in (False, True):
        best = {False: float("inf"), True: float("inf")}
        for _ in range(reps):
            for with_probe in (False, True):
                probes = [CostProbe()] if with_probe else []

                def record(probes: list[Any] = probes, grad: bool = grad) -> None:
                    with torch.set_grad_enabled(grad), Recorder(model, probes=probes):
                        model(**inputs)

                best[with_probe] = min(best[with_probe], cpu_time(record))
        key = "grad" if grad else "no_grad"
        out[key] = (best[True] - best[False]) / ops
        out[key + "_recorder"] = best[False] / ops
    return out


def graph_memory() -> dict[int, float]:
    """tracemalloc bytes held by one recorded graph, per recorded op."""
    out: dict[int, float] = {}
    for ops in (1_000, 10_000, 100_000):
        model, inputs = deep_mlp(ops)()
        with torch.no_grad(), Recorder(model) as rec:  # warm up
            model(**inputs)
        del rec
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            with torch.no_grad(), Recorder(model) as rec:
                model(**inputs)
            gc.collect()
            size = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert rec._session is not None
        if ops == 1_000:
            out["tensors_in_graph"] = len(tensors_reachable(rec._session.graph))
        out[ops] = size / ops
        del rec, model
    return out


def tensors_reachable(root: Any) -> list[Any]:
    found, seen, stack = [], set(), [root]
    skip = (
        type,
        types.ModuleType,
        types.FunctionType,
        types.BuiltinFunctionType,
        types.MethodType,
        str,
        bytes,
        int,
        float,
        bool,
        type(None),
    )
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, skip):
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            found.append(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
            stack.extend(obj.keys())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        else:
            for cls in type(obj).__mro__:
                stack.extend(getattr(obj, s) for s in getattr(cls, "__slots__", ()) if hasattr(obj, s))
            stack.extend(getattr(obj, "__dict__", {}).values())
    return found


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def repeated_draws(calls: int = 100) -> dict[str, Any]:
    """RSS and tracemalloc growth over ``calls`` draw_graph calls (after 10 warm-up calls)."""
    case = next(c for c in CASES if c.name.startswith("bert"))
    model, inputs = case.build()

    def draw() -> None:
        g = draw_graph(model, input_data=inputs, device="meta")
        assert g.source

    for _ in range(10):
        draw()
    gc.collect()
    rss0 = rss_bytes()
    tracemalloc.start()
    try:
        gc.collect()
        t0 = tracemalloc.get_traced_memory()[0]
        for _ in range(calls):
            draw()
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] - t0
    finally:
        tracemalloc.stop()
    gc.collect()
    return {"model": case.name, "calls": calls, "rss": rss_bytes() - rss0, "traced": traced}


# -- report ------------------------------------------------------------------------------------
def fmt_s(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}" if v < 10 else f"{v:.1f}"
    return str(v)


def ratio(a: Any, b: Any) -> float | None:
    return a / b if isinstance(a, float) and isinstance(b, float) and b > 0 else None


COLUMNS = [
    "model",
    "ops",
    "plain s",
    "Recorder s",
    "tv draw_graph s",
    "tv summary s",
    "torchview s",
    "torchlens s",
    "dot -Tsvg s",
    "Recorder/plain",
    "us/op",
    "floor us/op",
    "torchview/tv",
]


def us_per_op(r: dict[str, Any]) -> float | None:
    """Recording overhead per recorded op: (Recorder - plain) / ops, in microseconds, from
    the least CPU times of interleaved runs where measured (CPU models), else the medians."""
    if "record_cpu" in r and r["ops"]:
        return (r["record_cpu"] - r["plain_cpu"]) / r["ops"] * 1e6
    if isinstance(r["record"], float) and isinstance(r["plain"], float) and r["ops"]:
        return (r["record"] - r["plain"]) / r["ops"] * 1e6
    return None


def floor_per_op(r: dict[str, Any]) -> float | None:
    """The overhead per op of the design's floor (floor.py), measured with ``us_per_op``'s
    CPU times."""
    if "floor_cpu" in r and r["ops"]:
        return (r["floor_cpu"] - r["plain_cpu"]) / r["ops"] * 1e6
    return None


def table_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for r in rows:
        rp = ratio(r["record"], r["plain"])
        tt = ratio(r["torchview"], r["tv_draw"])
        if tt is None and r["torchview"] == "timeout" and isinstance(r["tv_draw"], float):
            tt_s = f">{TORCHVIEW_BUDGET_S / r['tv_draw']:.0f}x"
        else:
            tt_s = f"{tt:.2f}x" if tt is not None else "-"
        out.append(
            [
                f"{r['model']}",
                f"{r['ops']}",
                fmt_s(r["plain"]),
                fmt_s(r["record"]),
                fmt_s(r["tv_draw"]),
                fmt_s(r["tv_summary"]),
                fmt_s(r["torchview"]),
                fmt_s(r["torchlens"]),
                fmt_s(r["dot"]),
                f"{rp:.2f}x" if rp is not None else "-",
                f"{us_per_op(r):.1f}" if us_per_op(r) is not None else "-",
                f"{floor_per_op(r):.1f}" if floor_per_op(r) is not None else "-",
                tt_s,
            ]
        )
    return out


def text_table(rows: list[list[str]]) -> str:
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(COLUMNS)]  # also with no rows (--only)
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return "\n".join([line(COLUMNS), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def md_table(rows: list[list[str]]) -> str:
    head = "| " + " | ".join(COLUMNS) + " |\n|" + "|".join(["---"] + ["---:"] * (len(COLUMNS) - 1)) + "|\n"
    return head + "".join("| " + " | ".join(r) + " |\n" for r in rows)


def targets(
    rows: list[dict[str, Any]],
    lin: dict[str, Any] | None,
    mem: dict[Any, Any] | None,
    rep: dict[str, Any] | None,
    probe: dict[str, float] | None = None,
) -> list[tuple[str, bool | None, str]]:
    out: list[tuple[str, bool | None, str]] = []
    meta_ratios = [ratio(r["record"], r["plain"]) for r in rows if r["device"] == "meta"]
    meta_ratios = [x for x in meta_ratios if x is not None]
    if meta_ratios:
        m = statistics.median(meta_ratios)
        out.append(
            (
                "Recorder <= 0.5x plain forward on meta (median)",
                m <= 0.5,
                f"median {m:.2f}x over {len(meta_ratios)} meta models (worst {max(meta_ratios):.2f}x)",
            )
        )
    cpu = [(r["model"], us_per_op(r)) for r in rows if r["device"] == "cpu"]
    cpu_ok = [(m, u) for m, u in cpu if u is not None]
    if cpu_ok:
        out.append(
            (
                "recording overhead on real CPU tensors <= 15 us per op",
                all(u <= 15 for _, u in cpu_ok) and len(cpu_ok) == len(cpu),
                ", ".join(
                    f"{r['model']}: {u:.1f} (design floor {f:.1f})"
                    if (f := floor_per_op(r)) is not None
                    else f"{r['model']}: {u:.1f}"
                    for r in rows
                    if r["device"] == "cpu" and (u := us_per_op(r)) is not None
                ),
            )
        )
    speed = []
    for r in rows:
        tt = ratio(r["torchview"], r["tv_draw"])
        if tt is not None:
            speed.append(tt)
        elif r["torchview"] == "timeout" and isinstance(r["tv_draw"], float):
            speed.append(TORCHVIEW_BUDGET_S / r["tv_draw"])  # a lower bound
    if speed:
        med = statistics.median(speed)
        out.append(("draw_graph >= 2x faster than torchview (median)", med >= 2, f"median {med:.2f}x"))
        out.append(("draw_graph never slower than torchview", min(speed) >= 1, f"slowest {min(speed):.2f}x"))
    failed = [r["model"] for r in rows if not isinstance(r["tv_draw"], float)]
    if failed:
        out.append(("tensorview draw_graph works on every model", False, ", ".join(failed)))
    if lin is not None:
        out.append(
            (
                "time per op at 100k ops <= 1.3x time per op at 1k",
                lin["ratio"] <= 1.3,
                f"{lin[1_000] * 1e6:.1f} us/op at 1k, {lin[100_000] * 1e6:.1f} us/op at 100k: {lin['ratio']:.2f}x",
            )
        )
    if mem is not None:
        mr = mem[100_000] / mem[1_000]
        out.append(
            (
                "graph memory linear in ops (bytes/op at 100k <= 1.3x at 1k)",
                mr <= 1.3,
                f"{mem[1_000]:.0f} / {mem[10_000]:.0f} / {mem[100_000]:.0f} B/op at 1k / 10k / 100k ops",
            )
        )
        out.append(
            (
                "recorded graph memory <= 1 KB per op",
                max(mem[k] for k in (1_000, 10_000, 100_000)) <= 1024,
                f"at most {max(mem[k] for k in (1_000, 10_000, 100_000)):.0f} B/op",
            )
        )
        out.append(
            (
                "recorded graph holds no tensor",
                mem["tensors_in_graph"] == 0,
                f"{mem['tensors_in_graph']} tensors reachable from the graph",
            )
        )
    if rep is not None:
        ok = rep["traced"] < 1 << 20 and rep["rss"] < 16 << 20
        out.append(
            (
                f"{rep['calls']} repeated draw_graph calls do not grow memory",
                ok,
                f"{rep['model']}: tracemalloc {rep['traced'] / 1024:+.0f} KiB, RSS {rep['rss'] / 1024 / 1024:+.1f} MiB",
            )
        )
    llama = next((r for r in rows if r["model"].startswith("llama3-70b")), None)
    if llama is not None:
        tv = llama["torchview"]
        out.append(
            (
                "Llama-3-70B (80 layers) records on meta in < 0.5 s",
                llama["record"] < 0.5,
                f"Recorder {llama['record']:.2f} s, draw_graph {fmt_s(llama['tv_draw'])} s, torchview {fmt_s(tv)} s",
            )
        )
        s = llama["tv_summary"]
        out.append(
            (
                "tv.summary of Llama-3-70B (80 layers) on meta in < 3 s (issue 9)",
                isinstance(s, float) and s < 3,
                f"tv.summary {fmt_s(s)} s, draw_graph {fmt_s(llama['tv_draw'])} s, plain forward "
                f"{fmt_s(llama['plain'])} s",
            )
        )
    if probe is not None:
        out.append(
            (
                f"cost probe <= {PROBE_US} us per recorded op on the CPU, without and with grad",
                max(probe["no_grad"], probe["grad"]) * 1e6 <= PROBE_US,
                f"+{probe['no_grad'] * 1e6:.1f} us/op without grad, +{probe['grad'] * 1e6:.1f} us/op with grad "
                f"(Recorder alone {probe['no_grad_recorder'] * 1e6:.1f} / {probe['grad_recorder'] * 1e6:.1f} us/op)",
            )
        )
    dots = [(r["model"], r["dot"]) for r in rows]
    slow = [f"{m} ({fmt_s(d)})" for m, d in dots if not (isinstance(d, float) and d < 5)]
    worst = max((d for _, d in dots if isinstance(d, float)), default=0.0)
    out.append(
        (
            "default view lays out with dot -Tsvg in < 5 s (dot's CPU time) on every model",
            not slow,
            f"slowest {worst:.2f} s" + (f"; over: {', '.join(slow)}" if slow else ""),
        )
    )
    return out


def machine() -> str:
    import torchview

    return (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"torch {torch.__version__}, torchview {getattr(torchview, '__version__', '0.2.x')}, "
        f"{subprocess.run(['dot', '-V'], capture_output=True, text=True).stderr.strip()}"
    )


def profile_section() -> str:
    """Where recording time goes on CPU tensors, now and before the work on it (issue 12)."""
    now = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "profile_recording.py")], capture_output=True, text=True, check=False
    ).stdout.strip()
    before = (ROOT / "bench" / "profile_before.txt").read_text().strip()
    pieces = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "anatomy.py")], capture_output=True, text=True, check=False
    ).stdout.strip()
    return (
        "\n## Where recording time goes, piece by piece (bench/anatomy.py)\n\n"
        "Each piece isolated by a model built for it, tensorview next to the design floor (floor.py), least CPU "
        "time of interleaved runs on CPU tensors: **op** one more ``x.relu()`` in a forward; **module call** one more "
        "call of a one-op submodule, less its op and its share of the walks; **module held** one more submodule "
        "the forward never calls (the module-tree walks at a recording's start and end); **per recording** a "
        "one-op model's whole overhead (each run starts after ``gc.collect()``, with cold caches).\n\n"
        f"```\n{pieces}\n```\n"
        "\n## Where recording time goes (bench/profile_recording.py)\n\n"
        "The deep MLP (Linear, ReLU) on CPU tensors; overhead is the minimum CPU time over repeats, "
        "the table cProfile's top entries by own time.\n\n"
        f"Now:\n\n```\n{now}\n```\n\nBefore (the tree of the first landing, bench/profile_before.txt):\n\n"
        f"```\n{before}\n```\n"
    )


def main() -> int:
    """Run the benchmarks; 1 when a target failed (`make bench` then fails too), else 0."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write-docs", action="store_true", help="write the result to docs/benchmarks.md")
    ap.add_argument("--only", help="run only the models whose name contains this")
    ap.add_argument("--repeats", type=int, help="timed runs per model (default: per model)")
    ap.add_argument("--quick", action="store_true", help="skip the scaling and memory measurements")
    ap.add_argument("--no-viewer", action="store_true", help="skip the HTML viewer in headless Chromium")
    opts = ap.parse_args()

    started = time.perf_counter()
    cases = [c for c in CASES if not opts.only or opts.only in c.name]
    rows = []
    for case in cases:
        t0 = time.perf_counter()
        rows.append(run_case(case, opts.repeats))
        print(f"  {case.name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    lin = mem = rep = None
    probe = probe_cost()
    if not opts.quick:
        lin = linearity()
        mem = graph_memory()
        rep = repeated_draws()
    viewer_lines: list[str] = []
    cells = table_rows(rows)
    results = targets(rows, lin, mem, rep, probe)
    if not opts.only or opts.only in "llama3-70b pictures":
        results += picture_targets(measure_pictures())  # issue 11: readable pictures of the 70B
    if not opts.only or opts.only in "llama3-70b backward":
        results += backward_targets(measure_backward())  # issue 25: the joint graph of the 70B on meta
    if not opts.only or opts.only in "startup":
        results += startup_targets(measure_startup())  # issue 22: --help and import times (bench/startup.py)
    summaries = summary_speed.measure(only=opts.only)  # issue 22: tv.summary against torchinfo
    results += summary_speed.targets(summaries)
    on_gpu = gpu.saved_or_measured() if not opts.only else None  # issue 22: a CUDA model, where there is a GPU
    results += gpu.targets(on_gpu)
    if not opts.no_viewer:
        import viewer

        sys.path.insert(0, str(ROOT))
        from tests.browser import why_no_browser

        reason = why_no_browser()
        if reason is None:
            measured = viewer.run()
            viewer_lines = viewer.lines(measured)
            results += viewer.targets(measured)
            import layouts  # the layout engines: size, time, quality; the notebook's size (issue 20)

            engines = layouts.run()
            viewer_lines += layouts.lines(engines)
            results += layouts.targets(engines)
        else:
            viewer_lines = [f"HTML viewer not measured: {reason}"]
    total = time.perf_counter() - started

    print(text_table(cells))
    print()
    print("\n".join(viewer_lines) + ("\n" if viewer_lines else ""))
    print("\n".join(summary_speed.lines(summaries)) + "\n")
    for name, ok, detail in results:
        print(f"[{'INFO' if ok is None else 'PASS' if ok else 'FAIL'}] {name}: {detail}")
    print(f"\n(total {total:.0f} s)")

    if opts.write_docs:
        doc = ROOT / "docs" / "benchmarks.md"
        doc.write_text(
            "# Benchmarks\n\n"
            "Written by `python bench/run.py --write-docs` (`make bench` prints the same).  tensorview and "
            "torchview run on the same models in one process; times are medians (seconds) of several runs "
            "after a warm-up: 5 for most models, 3 for Llama-3-70B and the 10k MLP, 2 for the 100k MLP "
            "(torchview at most 3, and cut off after "
            f"{TORCHVIEW_BUDGET_S:.0f} s: `timeout`).  Timings on this machine are noisy: judge by the "
            "ratios, which are taken in the same run.\n\n"
            "- **ops**: recorded function calls (FunctionNodes).\n"
            "- **plain**: the model's forward without recording; **Recorder**: `with Recorder(model): "
            "model(**x)`, record only; **tv draw_graph**: `draw_graph(...)` + `.source` (record, default view, "
            "DOT text); **tv summary**: `tv.summary(...)` (record with the cost probe, grad enabled, on a copy "
            "of the model: parameters, FLOPs, saved-for-backward bytes); **torchview**: `torchview.draw_graph(...)` with its defaults + `visual_graph.source`.\n"
            "- **dot -Tsvg**: CPU seconds of Graphviz laying out tensorview's default view (one run, cut off "
            f"at {DOT_TIMEOUT_S:.0f} s); **torchlens**: `torchlens.trace(model, x)` with its defaults (CPU "
            "models only: it refuses meta tensors); **us/op**: (Recorder - plain) / ops, the recording overhead "
            "per recorded op; on CPU models from the least CPU time (`process_time`, one intra-op thread) of "
            "7+ runs of each, alternated (the other columns are medians of wall time); **floor us/op**: the same "
            "for a minimal recorder of the same design (bench/floor.py: a torch-function mode, results re-wrapped "
            "as RecorderTensors, a patched `nn.Module.__call__`, one tuple per op and call, nothing else), the "
            "least any Python recorder built this way costs.\n"
            "- densenet201 and raft_small with torchvision's layout are torchvision-free replicas "
            "(bench/replicas.py): same module tree and control flow.\n"
            "- Transformers models are full-size configs built on meta with inputs on meta (sequence length "
            "128, 32 decoder tokens for T5); the MLPs run on the CPU with 4x4 layers, because a meta op costs "
            "~350 us of dispatch here and would hide the recording overhead.\n"
            "- On meta, Recorder is faster than the plain forward because it replays the results of ops it "
            "has already seen with the same argument metadata instead of rerunning torch's slow meta kernels "
            "(docs/recording.md, `meta_replay`); torchview and the plain forward run every kernel.\n\n"
            f"Machine: {machine()}.  Total run time {total:.0f} s.\n\n"
            + md_table(cells)
            + (
                "\n## HTML viewer, source locations (bench/viewer.py) and layout engines (bench/layouts.py)\n\n"
                + "".join(f"- {line}\n" for line in viewer_lines)
                if viewer_lines
                else ""
            )
            + (
                "\n## tv.summary against torchinfo (bench/summary_speed.py)\n\n"
                + (summary_speed.__doc__ or "").split("\n\n    python")[0].strip()
                + "\n\n"
                + "".join(f"- {line}\n" for line in summary_speed.lines(summaries))
                if summaries
                else ""
            )
            + (
                "\n## Recording on a CUDA GPU (bench/gpu.py)\n\n"
                + gpu.SECTION
                + "\n\n"
                + "".join(f"{line}\n" for line in gpu.lines(on_gpu))
                if on_gpu
                else ""
            )
            + "\n## Targets\n\n"
            + "".join(
                f"- {'info' if ok is None else '**pass**' if ok else '**FAIL**'}: {name}: {detail}\n"
                for name, ok, detail in results
            )
            + profile_section()
        )
        print(f"wrote {doc.relative_to(ROOT)}")
    return exit_status(results)


def exit_status(results: list[tuple[str, bool | None, str]]) -> int:
    """1 when a target failed (said on stderr), else 0: `make bench` fails with it."""
    failed = [name for name, ok, _ in results if ok is False]
    if failed:
        print(f"\n{len(failed)} target(s) failed: {'; '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Run torchinfo's own test calls and README examples through ``tv.summary``.

    git clone https://github.com/TylerYep/torchinfo /tmp/torchinfo
    PYTHONPATH=. python tools/torchinfo_suite.py /tmp/torchinfo [--json out.json] [-k NAME]

Nothing of torchinfo is copied here: its test modules (``tests/torchinfo_test.py``,
``tests/exceptions_test.py``, ``tests/half_precision_test.py``) and the python blocks
of its README are imported or run from the checkout given, with the name ``summary``
bound to a stand-in that calls, with the same arguments,

* ``tv.summary`` (our result is what the test's own asserts then check), and
* ``torchinfo.summary`` of the installed torchinfo (the peer; ``pip install torchinfo``),

and compares the two: parameter totals must be equal (torchinfo is right about them),
multiply-adds are reported where they differ (ours count every op with a FLOP formula:
functional matmuls and attention too; torchinfo counts module weights, bias adds
included), and our table must have a header for every column asked for.  Byte-exact
comparisons of torchinfo's printed text (its ``tests/test_output/*.out``) are skipped:
our table has its own layout (docs/migrating-torchinfo.md).

Each test ends as ``pass`` (our result passed the test's asserts and agrees on totals),
``differs`` (ran, but an assert or a total differs: the reason is printed), ``error``
(tv.summary raised where torchinfo did not) or ``not run`` (needs a GPU, torchvision or
a pytest fixture).  The exit status is 1 when some test is ``error`` or has different
parameter totals.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import io
import json
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torchinfo
from _pytest.outcomes import OutcomeException

import tensorview as tv
from tensorview.cost.columns import COLUMNS

TEST_MODULES = ("tests.torchinfo_test", "tests.exceptions_test", "tests.half_precision_test")
#: module-level helpers of torchinfo's tests that compare printed text byte by byte
TEXT_CHECKS = ("verify_output_str", "verify_output")


class Comparison:
    """What one call of the stand-in ``summary`` found."""

    def __init__(self) -> None:
        self.calls = 0
        self.param_diffs: list[str] = []
        self.notes: list[str] = []
        self.missing_columns: list[str] = []


def _theirs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    with contextlib.redirect_stdout(io.StringIO()):
        return torchinfo.summary(*args, **{**kwargs, "verbose": 0})


def stand_in(found: Comparison) -> Callable[..., Any]:
    """``summary`` as torchinfo's tests call it: ours (returned), compared with theirs."""

    def summary(*args: Any, **kwargs: Any) -> Any:
        found.calls += 1
        ours = tv.summary(*args, **kwargs)
        try:
            theirs = _theirs(args, kwargs)
        except Exception as e:  # noqa: BLE001 - the peer fails on what we run: say so
            found.notes.append(f"torchinfo {torchinfo.__version__} raised {type(e).__name__}")
            theirs = None
        if theirs is not None:
            for name in ("total_params", "trainable_params"):
                a, b = getattr(ours, name), getattr(theirs, name)
                if a != b:
                    found.param_diffs.append(f"{name}: ours {a:,}, torchinfo {b:,}")
            if ours.forward and ours.total_mult_adds != theirs.total_mult_adds:
                found.notes.append(f"MACs ours {ours.total_mult_adds:,} torchinfo {theirs.total_mult_adds:,}")
        header = str(ours).splitlines()[0]
        for c in ours.options.columns:
            if COLUMNS[c].header not in header:
                found.missing_columns.append(c)
        return ours

    return summary


def _runnable(fn: Callable[..., Any]) -> str | None:
    """Why a test function cannot be called plainly (None: it can)."""
    params = inspect.signature(fn).parameters
    if params:
        return f"needs pytest fixtures {list(params)}"
    source = inspect.getsource(fn)
    if re.search(r"\.cuda\(|device=\"cuda", source) and not torch.cuda.is_available():
        return "needs a GPU"
    if "torchvision" in source or "transformers" in source or "compressai" in source:
        return "needs torchvision/transformers/compressai"
    return None


def run_one(name: str, call: Callable[[], Any], found: Comparison) -> dict[str, Any]:
    out: dict[str, Any] = {"test": name}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            call()
        status = "pass"
        reason = ""
    except (AssertionError, OutcomeException) as e:  # a test's assert, pytest.raises that did not
        status, reason = "differs", f"assert: {str(e).splitlines()[0] if str(e) else _where(e)}"
    except Exception as e:  # noqa: BLE001 - the report says which and why
        status, reason = "error", f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else _where(e)}"
    if status == "pass" and (found.param_diffs or found.missing_columns):
        status = "differs"
    if found.param_diffs:
        reason = "; ".join(found.param_diffs)
    if found.missing_columns:
        reason += f" columns not shown: {found.missing_columns}"
    out.update(status=status, reason=reason.strip(), calls=found.calls, notes=found.notes)
    out["params_differ"] = bool(found.param_diffs)
    return out


def _where(e: BaseException) -> str:
    frame = traceback.extract_tb(e.__traceback__)[-1]
    return f"{Path(frame.filename).name}:{frame.lineno} {frame.line}"


def run_tests(select: str | None) -> list[dict[str, Any]]:
    results = []
    for mod_name in TEST_MODULES:
        try:
            mod = importlib.import_module(mod_name)
        except Exception as e:  # noqa: BLE001
            results.append({"test": mod_name, "status": "not run", "reason": f"import: {e}"})
            continue
        for helper in TEXT_CHECKS:
            if hasattr(mod, helper):
                setattr(mod, helper, lambda *a, **k: None)
        for name, fn in sorted(vars(mod).items()):
            if not name.startswith("test_") or not callable(fn) or (select and select not in name):
                continue
            why = _runnable(fn)
            if why:
                results.append({"test": f"{mod_name.split('.')[-1]}::{name}", "status": "not run", "reason": why})
                continue
            found = Comparison()
            mod.summary = stand_in(found)
            results.append(run_one(f"{mod_name.split('.')[-1]}::{name}", fn, found))
    return results


def run_readme(repo: Path, select: str | None) -> list[dict[str, Any]]:
    """The README's python blocks that call ``summary``, with the names they assume
    (``ConvNet``, ``your_model``...) bound to torchinfo's test models."""
    from tests.fixtures import models  # torchinfo's, from the checkout

    text = (repo / "README.md").read_text(encoding="utf-8")
    results = []
    for i, block in enumerate(re.findall(r"```python\n(.*?)```", text, re.S)):
        if "summary(" not in block or block.lstrip().startswith("def summary("):
            continue
        name = f"README[{i}]"
        if select and select not in name:
            continue
        if "torchvision" in block:
            results.append({"test": name, "status": "not run", "reason": "needs torchvision"})
            continue
        found = Comparison()
        ns: dict[str, Any] = {**vars(models), "torch": torch, "nn": torch.nn, "F": torch.nn.functional}
        # the names the README assumes: a ConvNet for (16, 1, 28, 28), any model for (1, 3, 28, 28)
        ns.update(
            ConvNet=getattr(models, "SingleInputNet", None), your_model=torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3))
        )
        code = block.replace("from torchinfo import summary\n", "").replace(", ...]", "]")  # "..." is prose
        classes = re.findall(r"^class (\w+)\(nn\.Module\)", code, re.M)
        if classes and not re.search(r"^model = ", code, re.M):  # the example's model, made as the text says
            at = code.index("\nsummary(")
            code = code[:at] + f"\nmodel = {classes[0]}()" + code[at:]

        def call(code: str = code, ns: dict[str, Any] = ns, found: Comparison = found, name: str = name) -> None:
            ns["summary"] = stand_in(found)
            exec(compile(code, name, "exec"), ns)

        results.append(run_one(name, call, found))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path, help="a checkout of github.com/TylerYep/torchinfo")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("-k", dest="select", help="only tests whose name contains this")
    ns = parser.parse_args(argv)
    sys.path.insert(0, str(ns.repo.resolve()))
    for key in [k for k in sys.modules if k == "tests" or k.startswith("tests.")]:
        del sys.modules[key]  # torchinfo's tests package, not ours
    results = run_tests(ns.select) + run_readme(ns.repo, ns.select)
    for r in results:
        print(f"{r['status']:8} {r['test']}" + (f"  -- {r['reason']}" if r.get("reason") else ""))
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    ran = [r for r in results if r["status"] != "not run"]
    agree = sum(1 for r in ran if not r.get("params_differ") and r["status"] != "error")
    print(f"\n{len(results)} tests and README examples: {counts}; parameter totals agree in {agree} of {len(ran)} run")
    if ns.json:
        ns.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 1 if any(r["status"] == "error" or r.get("params_differ") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())

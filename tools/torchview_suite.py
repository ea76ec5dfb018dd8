"""Run torchview's own test suite against tensorview, comparing structure instead of DOT text.

    python tools/torchview_suite.py /path/to/torchview            # tensorview as `torchview`
    python tools/torchview_suite.py /path/to/torchview --reference # torchview itself (checks the comparison)
    python tools/torchview_suite.py /path/to/torchview --options '{"fold": false}'  # torchview's picture

``/path/to/torchview`` is a checkout of https://github.com/mert-kurttutan/torchview (its
``tests/`` and ``src/``); nothing of it is copied into this repository.  The tests are
copied into a temporary folder where ``import torchview`` finds a small package that
re-exports ``tensorview.torchview`` (``--reference``: torchview's own ``src/``), and
where ``conftest.py``'s byte-exact golden check is replaced by a structural one: every
golden ``.gv`` file is read back into nodes (kind, name, depth, input and output shapes)
and edges between them, and a drawing passes when it has the same multiset of nodes and
the same set of edges.  Node ids, colours, fonts, sizes and cluster boxes are not
compared.  Our side of the comparison reads the drawn view (``ComputationGraph.get_view()``
and the recorded IR), so it measures tensorview at any commit, with or without the
compatibility layer.

Tests that cannot run here (a missing package such as torchvision, model weights to
download) are counted apart as "not runnable".  Prints one line per test (a failure on
purpose with its row of docs/migrating.md, ``EXPECTED``), the totals and the failures
that are not differences on purpose; ``--json FILE`` writes the outcomes.  torchvision
from PyPI beside a CPU-only torch: ``pip install --target DIR torchvision pillow`` and
``--site DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

SHIM = '''"""`import torchview` for torchview's test suite: tensorview under torchview's names."""
import functools
import json
import os

try:
    from tensorview.torchview import *  # noqa: F401,F403
    from tensorview.torchview import __all__  # noqa: F401
except ImportError:  # a tensorview without the compatibility layer
    from tensorview import ComputationGraph, draw_graph  # noqa: F401
if os.environ.get("TV_SUITE_OPTIONS"):  # --options: tensorview options for every draw_graph
    draw_graph = functools.partial(draw_graph, **json.loads(os.environ["TV_SUITE_OPTIONS"]))
'''
SUBMODULE = """try:
    from tensorview.torchview import *  # noqa: F401,F403
except ImportError:
    from tensorview import ComputationGraph, FunctionNode, ModuleNode, TensorNode  # noqa: F401
"""

CONFTEST = """# structural comparison (tools/torchview_suite.py), replacing the byte-exact one
import sys
from pathlib import Path

import pytest

sys.path.insert(0, {tools!r})
import torchview_suite as suite  # noqa: E402

suite.import_torchvision()


def pytest_addoption(parser):
    parser.addoption("--overwrite", action="store_true", default=False)
    parser.addoption("--no-output", action="store_true", default=False)


@pytest.fixture()
def verify_result(request):
    def _func(graphs):
        name = request.node.name.replace("test_", "")
        if name == "input_size_half_precision":
            return
        golden = Path(f"tests/test_output/{{name}}.gv")
        if not golden.exists():
            return
        suite.compare(list(graphs), golden.read_text(encoding="utf-8"), {reference!r})
    return _func
"""

NODE = re.compile(r"^\s*(\w+) \[label=<(.*?)> fillcolor=(\w+)\]", re.S | re.M)
EDGE = re.compile(r"^\s*(\w+) -> (\w+)", re.M)
TD = re.compile(r"<TD[^>]*>(.*?)</TD>", re.S)
KIND_OF_COLOUR = {"lightyellow": "tensor", "darkseagreen1": "module", "aliceblue": "function"}


def parse_dot(text: str) -> tuple[Counter, set]:
    """Nodes ``(kind, name, depth, inputs, outputs)`` and edges between them, of torchview DOT
    (several graphs concatenated)."""
    nodes: Counter = Counter()
    edges: set = set()
    for part in re.split(r"(?m)^(?=(?:strict )?digraph)", text):
        sig = {}
        for m in NODE.finditer(part):
            cells = [c.strip() for c in TD.findall(m.group(2))]
            name, _, depth = cells[0].partition("<BR/>depth:")
            kind = KIND_OF_COLOUR[m.group(3)]
            if kind == "tensor":
                shapes = (cells[1],) if len(cells) > 1 else ()
            else:
                shapes = (cells[2], cells[4]) if len(cells) > 4 else ()
            sig[m.group(1)] = (kind, name, int(depth), *shapes)
            nodes[sig[m.group(1)]] += 1
        edges |= {(sig[a], sig[b]) for a, b in EDGE.findall(part)}
    return nodes, edges


def import_torchvision() -> None:
    """Import torchvision where its C++ ops do not load (a PyPI build beside a CPU-only
    torch): its fake-kernel registrations for those ops are skipped; the models work."""
    try:
        import torch
    except ImportError:
        return
    orig = torch.library.register_fake

    def lenient(op, func=None, /, *args, **kwargs):
        if func is not None:
            try:
                return orig(op, func, *args, **kwargs)
            except RuntimeError:
                return func
        inner = orig(op, *args, **kwargs)

        def deco(fn):
            try:
                return inner(fn)
            except RuntimeError:
                return fn

        return deco

    torch.library.register_fake = lenient
    try:
        import torchvision  # noqa: F401
    except ImportError:
        pass
    finally:
        torch.library.register_fake = orig


def compact(shapes: list) -> str:
    """torchview's ``compact_list_repr``: ``(1, 2)``, ``2 x (1, 2)``."""
    return ", ".join(f"{e}" if n == 1 else f"{n} x {e}" for e, n in Counter(shapes).items())


def our_picture(graph) -> tuple[Counter, set]:
    """The drawn view of a tensorview ``ComputationGraph`` as torchview would label it."""
    nodes: Counter = Counter()
    view = graph.get_view()
    ir = graph.graph
    show = graph.options.show_shapes
    sig = {}
    ins_of: dict = {}
    outs_of: dict = {}
    for s, d in ir.edges:
        ins_of.setdefault(d, []).append(s)
        outs_of.setdefault(s, []).append(d)
    for n in view.nodes:
        node = n.ir
        kind = type(node).__name__.replace("Node", "").lower()
        if kind == "tensor":
            role = "input" if node.role == "input" else "output" if n.is_output else node.role
            name = {"input": "input-tensor", "output": "output-tensor"}.get(role, "hidden-tensor")
            made_by = [ir[i].depth for i in ins_of.get(node.id, ())]  # the op and the module calls returning it
            depth = 0 if role in ("input", "output") else min(made_by, default=node.depth)
            s = (kind, name, depth, str(tuple(node.shape))) if show else (kind, name, depth)
        else:
            name = node.cls_name if kind == "module" else node.op
            ins = [ir[i] for i in ins_of.get(node.id, ())]
            outs = [ir[o] for o in outs_of.get(node.id, ())]
            # torchview sees the tensors passed in and returned, not parameters and buffers
            ins = [tuple(t.shape) for t in ins if getattr(t, "shape", None) is not None and not t.is_param]
            outs = [tuple(t.shape) for t in outs if getattr(t, "shape", None) is not None]
            s = (kind, name, node.depth, compact(ins), compact(outs)) if show else (kind, name, node.depth)
        sig[n.id] = s
        nodes[s] += 1
    edges = {(sig[e.src], sig[e.dst]) for e in view.edges}
    return nodes, edges


def their_picture(graph) -> tuple[Counter, set]:
    return parse_dot(graph.visual_graph.source)


def compare(graphs: list, golden: str, reference: bool) -> None:
    want_nodes, want_edges = parse_dot(golden)
    got_nodes: Counter = Counter()
    got_edges: set = set()
    for g in graphs:
        n, e = their_picture(g) if reference else our_picture(g)
        got_nodes += n
        got_edges |= e
    missing, extra = want_nodes - got_nodes, got_nodes - want_nodes
    assert not missing and not extra, f"nodes differ:\n  missing {dict(missing)}\n  extra {dict(extra)}"
    assert got_edges == want_edges, (
        f"edges differ:\n  missing {sorted(want_edges - got_edges)[:8]}\n  extra {sorted(got_edges - want_edges)[:8]}"
    )


#: the tests that fail on purpose: the rows of docs/migrating.md's differences table (and
#: issue 19 part C's defects), by test name
EXPECTED = {
    "test_input_size_possible_exceptions": "size-0 dimensions are valid input_size",
    "test_meta_LSTM": "outputs grouped by returned field",
    "test_simple_LSTM": "outputs grouped by returned field",
    "test_input_inplace_changed": "outputs grouped by returned field",
    "test_meta_simple_OutputReused": "an input returned unchanged is one node",
    "test_simple_OutputReused": "an input returned unchanged is one node",
    "test_meta_ldc_model": "an output reused inside forward: edges leave the output node",
    "test_ldc_model": "an output reused inside forward: edges leave the output node",
    "test_meta_ViT_model": "created tensors drawn; torch's op names (getitem)",
    "test_simple_ViT_model": "created tensors drawn; torch's op names (getitem)",
    "test_simple_custom_attention": "created tensors drawn (the mask made from a buffer)",
    "test_fully_scalar_net": "a module call on no tensor is drawn",
    "test_meta_recursive_net": "roll merges by module path",
    "test_simple_recursive_net": "roll merges by module path",
    "test_meta_roll_recursive_net": "roll merges by module path; created tensors drawn",
    "test_roll_recursive_net": "roll merges by module path; created tensors drawn",
    "test_meta_expand_nested_recursive_net": "roll merges by module path; created tensors drawn",
    "test_expand_nested_recursive_net": "roll merges by module path; created tensors drawn",
    "test_expand_nested_explicit_recursive_net": "roll merges by module path; created tensors drawn",
    "test_inplace_recursive_net": "roll merges by module path; created tensors drawn",
    "test_meta_roll_recursive_relu": "roll merges by module path",
    "test_roll_recursive_relu": "roll merges by module path",
    "test_meta_explicit_siamese_nets": "roll merges by module path",
    "test_explicit_siamese_nets": "roll merges by module path",
    "test_meta_resnet_model": "fold (fold=False draws torchview's picture)",
    "test_simple_resnet_model": "fold (fold=False draws torchview's picture)",
    "test_expand_nested_resnet_model": "fold (fold=False draws torchview's picture)",
    "test_expand_nested_tower": "fold (fold=False draws torchview's picture)",
    "test_meta_custom_attention": "issue 19 part C: a submodule called through a closure, on meta",
    "test_traced_mlp": "issue 19 part C: a TorchScript method labelled ScriptMethod",
}

#: failures that say the test cannot run here, not that the library is wrong
NOT_RUNNABLE = re.compile(
    r"ModuleNotFoundError|No module named|huggingface\.co|We couldn't connect|LocalEntryNotFoundError|"
    r"OfflineModeIsEnabled|Can't load tokenizer|Connection|Cannot find an appropriate cached snapshot"
)


def run(checkout: Path, reference: bool, pytest_args: list[str], site: list[Path], options: str = "") -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="tv-torchview-suite-") as tmp:
        root = Path(tmp)
        shutil.copytree(checkout / "tests", root / "tests")
        for made in (root / "tests" / "test_output").glob("save_output_*"):  # what a test must write itself
            made.unlink()
        (root / "tests" / "conftest.py").write_text(
            CONFTEST.format(tools=str(HERE / "tools"), reference=reference), encoding="utf-8"
        )
        path = [str(root), *map(str, site)]
        if reference:
            path.append(str(checkout / "src"))
        else:
            pkg = root / "torchview"
            pkg.mkdir()
            (pkg / "__init__.py").write_text(SHIM, encoding="utf-8")
            for sub in ("computation_graph", "computation_node", "utils"):
                (pkg / f"{sub}.py").write_text(SUBMODULE, encoding="utf-8")
            path.append(str(HERE))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "HF_HUB_OFFLINE": "1", "TV_SUITE_OPTIONS": options}
        report = root / "report.xml"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "tests",
            "-q",
            "-p",
            "no:cacheprovider",
            "--continue-on-collection-errors",
            f"--junitxml={report}",
        ]
        subprocess.run(cmd + pytest_args, cwd=root, env=env, check=False)
        return outcomes(report)


def outcomes(report: Path) -> dict[str, str]:
    """``{test id: passed | failed | skipped | not runnable}`` from a junit report."""
    out: dict[str, str] = {}
    for case in ET.parse(report).iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        if case.find("skipped") is not None:
            out[name] = "skipped"
        elif problem is None:
            out[name] = "passed"
        else:
            text = (problem.get("message") or "") + (problem.text or "")
            out[name] = "not runnable" if NOT_RUNNABLE.search(text) else "failed"
    # a test module that cannot be imported is one error entry: count it, named by file
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a torchview checkout (with tests/ and src/)")
    parser.add_argument("--reference", action="store_true", help="run torchview itself")
    parser.add_argument("--json", type=Path, help="write {test: outcome} here")
    parser.add_argument(
        "--options", default="", help='tensorview options for every draw_graph, as JSON: {"fold": false}'
    )
    parser.add_argument("--site", type=Path, action="append", default=[], help="a folder put on the path (torchvision)")
    args, rest = parser.parse_known_args()
    results = run(args.checkout.resolve(), args.reference, rest, args.site, args.options)
    unexpected = []
    for name, outcome in sorted(results.items()):
        why = EXPECTED.get(name.rpartition("::")[2], "") if outcome == "failed" else ""
        if outcome == "failed" and not why:
            unexpected.append(name)
        print(f"{outcome:13} {name}" + (f"  [{why}]" if why else ""))
    counts = Counter(results.values())
    runnable = counts["passed"] + counts["failed"]
    print(f"\n{counts['passed']} of {runnable} runnable tests pass ({dict(counts)})")
    if not args.reference:
        print(f"failures not listed as differences: {unexpected or 'none'}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True), encoding="utf-8")


if __name__ == "__main__":
    main()

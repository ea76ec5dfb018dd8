"""The stage contracts of docs/architecture.md, read from the source.

record -> graph <- transform; render -> graph; only ``api``/``drawing`` compose stages.
Each rule lists what a stage may import from tensorview and from third parties; a new
import that breaks a rule fails here with the file and line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tensorview
from tensorview.graph import KINDS

PACKAGE = Path(tensorview.__file__).parent
#: stage -> tensorview stages it may import (``errors`` and ``_version`` are leaves anyone may use)
ALLOWED: dict[str, set[str]] = {
    "graph": {"graph"},
    "transform": {"graph", "transform"},
    "render": {"graph", "render"},
    "recording": {"graph", "recording"},
    "taps": {"graph", "recording", "taps"},
    "cost": {"graph", "recording", "transform", "cost"},  # transform: the table folds as the graph does
    # the autograd graph as the IR (reads saved bytes as the cost model counts them)
    "backward": {"graph", "recording", "cost", "backward"},
    "importers": {"graph", "recording", "importers"},
    # torchview's and torchrecorder's API beside ours: node objects, options, a probe
    "compat": {"graph", "render", "recording", "compat"},
    "drawing": {"graph", "transform", "render", "cost", "compat"},
    "api": {
        "graph",
        "transform",
        "render",
        "recording",
        "importers",
        "drawing",
        "cost",
        "compat",
        "backward",
        "autograd",
        "probing",
    },
    # the probes and stats the entry points add when asked for, each imported on first use
    "probing": {"recording", "cost", "backward", "compat"},
    # tv.autograd_graph and the joint graph of a recording, as ComputationGraphs
    "autograd": {"drawing", "backward"},
    # torchview's names for torchview users' code, gathered from the public API
    "torchview": {"api", "drawing", "compat", "recording"},
    # torchrecorder's record/make_dot/render_network on draw_graph and the renderer
    "torchrecorder": {"api", "drawing", "graph", "render", "transform"},
    # the command line and the Sphinx directive use anything public, like a user would
    # the architecture diff: plain graphs in, models recorded through the public API
    "compare": {"graph", "transform", "render", "importers", "drawing", "api", "compare"},
    "cli": {"tensorview", "graph", "transform", "render", "recording", "importers", "drawing", "api", "compare", "cli"},
    "sphinx": {"tensorview", "graph", "transform", "render", "recording", "importers", "drawing", "api", "cli"},
}
LEAVES = {"errors", "_version"}
#: stages that must stay plain data: no torch, no graphviz
PURE = {"graph", "transform"}
#: stages that must not need graphviz (render and what composes it may)
NO_GRAPHVIZ = {"graph", "transform", "recording", "taps", "cost", "importers", "backward"}
MAX_LINES = 300


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def stage_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imports(path: Path) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in ``path``, type-only ones included."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
                if not node.module:  # from . import x
                    found.extend((node.lineno, f"{name}.{a.name}") for a in node.names)
                    continue
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def test_every_module_belongs_to_a_stage_with_rules() -> None:
    stages = {stage_of(p) for p in modules()} - {"__init__", "__main__", "demo"} - LEAVES
    assert stages <= set(ALLOWED), f"stages without import rules: {sorted(stages - set(ALLOWED))}"


def violations(stage: str, found: list[tuple[int, str]]) -> list[str]:
    """What breaks the rules of ``stage`` among ``(line, module)`` imports."""
    allowed = ALLOWED[stage] | LEAVES
    bad = []
    for line, name in found:
        parts = name.split(".")
        if parts[0] == "tensorview":
            target = parts[1] if len(parts) > 1 else "tensorview"
            if target not in allowed:
                bad.append(f"{line}: {name} (stage {stage!r} may import only {sorted(allowed)})")
        if stage in PURE and parts[0] == "torch":
            bad.append(f"{line}: {name} ({stage} must not import torch)")
        if stage in NO_GRAPHVIZ and parts[0] == "graphviz":
            bad.append(f"{line}: {name} ({stage} must not import graphviz)")
    return bad


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_the_stage_rules(path: Path) -> None:
    stage = stage_of(path)
    if stage in {"__init__", "__main__", "demo"} | LEAVES:
        return
    assert not violations(stage, imports(path)), f"{path.relative_to(PACKAGE)}: {violations(stage, imports(path))}"


def test_the_rules_catch_violations() -> None:
    """The checker itself, on the imports the tree had before the stages were separated."""
    assert violations("render", [(9, "tensorview.transform.view")])
    assert violations("recording", [(3, "tensorview.drawing")])
    assert violations("graph", [(1, "torch")]) and violations("transform", [(1, "graphviz")])
    assert not violations("render", [(1, "tensorview.graph.view"), (2, "graphviz")])
    # relative imports resolve to absolute names
    assert "tensorview.graph" in [n for _, n in imports(PACKAGE / "render" / "dot.py")]


def test_no_kind_string_comparisons_outside_the_node_types() -> None:
    """Kinds are dispatched by type (``match``/``isinstance``); ``x.kind == "tensor"`` or a
    comparison with a kind name would silently misdraw a new kind."""
    offenders = []
    for path in modules():
        if path == PACKAGE / "graph" / "nodes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            kind_name = any(
                (isinstance(s, ast.Constant) and s.value in KINDS)
                or (isinstance(s, ast.Name) and s.id in ("TENSOR", "FUNCTION", "MODULE"))
                for s in sides
            )
            if kind_name:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not offenders, f"kind-string comparisons: {offenders}"


def test_nodes_are_constructed_only_by_the_node_factory() -> None:
    offenders = []
    node_types = {"TensorNode", "FunctionNode", "ModuleNode"}
    for path in [*modules(), *sorted((PACKAGE.parent / "tests").rglob("*.py"))]:
        if path.name in ("factory.py", "nodes.py"):
            continue
        text = path.read_text(encoding="utf-8")
        on_purpose = {i + 1 for i, line in enumerate(text.splitlines()) if "outside the builder on purpose" in line}
        for node in ast.walk(ast.parse(text)):
            if getattr(node, "lineno", 0) in on_purpose:
                continue
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in node_types:
                offenders.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append":
                target = node.func.value
                if isinstance(target, ast.Attribute) and target.attr in ("nodes", "edges") and path.name != "graph.py":
                    offenders.append(f"{path.name}:{node.lineno} appends to .{target.attr}")
    assert not offenders, f"nodes/edges made outside GraphBuilder: {offenders}"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_too_long(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines (split it by concern)"


# -- recording/: collaborators, not layers (issue 22) ------------------------------------------
RECORDING = PACKAGE / "recording"
#: how the session's collaborators are held (``self.<name>``, ``session.<name>``): attribute
#: name -> class; each is read by the others through its methods only
COLLABORATORS = {
    "bindings": "Bindings",
    "calls": "Calls",
    "crossings": "Crossings",
    "methods": "Methods",
    "transforms": "Transforms",
    "ops": "Ops",
    "runner": "OpRunner",
    "boundary": "Boundary",
    "paths": "ModulePaths",
    "originals": "Originals",
    "failure": "Failure",
    "probes": "Probes",
}
#: the names through which collaborators are reached
HOLDERS = {"self", "session", "s"}


def recording_classes(sources: dict[str, str]) -> dict[str, tuple[str, list[str], set[str]]]:
    """Class name -> (file, names of its bases, its methods) for the classes of ``sources``."""
    found: dict[str, tuple[str, list[str], set[str]]] = {}
    for name, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                bases = [
                    b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                    for b in node.bases
                ]
                methods = {
                    f.name
                    for f in node.body
                    if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and not any(isinstance(d, ast.Name) and d.id == "property" for d in f.decorator_list)
                }
                found[node.name] = (name, bases, methods)
    return found


def too_deep(classes: dict[str, tuple[str, list[str], set[str]]], limit: int = 2) -> list[str]:
    """Classes whose chain of bases defined among ``classes`` is more than ``limit`` long."""

    def depth(name: str) -> int:
        return 1 + max((depth(b) for b in classes[name][1] if b in classes and b != name), default=0)

    return [f"{classes[c][0]}: class {c} is {depth(c)} levels deep" for c in classes if depth(c) > limit]


def foreign_reads(sources: dict[str, str], classes: dict[str, tuple[str, list[str], set[str]]]) -> list[str]:
    """``self.<collaborator>.<name>`` (or ``session.``/``s.``) where ``name`` is no method of
    the collaborator's class: state read or written across collaborators."""
    bad = []
    for name, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Attribute):
                continue
            held = node.value
            if not (isinstance(held, ast.Attribute) and isinstance(held.value, ast.Name) and held.value.id in HOLDERS):
                continue
            cls = COLLABORATORS.get(held.attr)
            if cls is not None and node.attr not in classes[cls][2]:
                bad.append(f"{name}:{node.lineno}: {held.value.id}.{held.attr}.{node.attr} is no method of {cls}")
    return bad


def recording_sources() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(RECORDING.glob("*.py"))}


def test_recording_class_hierarchies_are_at_most_two_levels_deep() -> None:
    classes = recording_classes(recording_sources())
    assert {"Session", *COLLABORATORS.values()} <= set(classes)
    assert too_deep(classes) == []


def test_recording_collaborators_reach_each_other_only_through_methods() -> None:
    sources = recording_sources()
    assert foreign_reads(sources, recording_classes(sources)) == []


def test_the_recording_rules_catch_violations() -> None:
    layered = {"x.py": "class A:\n    pass\nclass B(A):\n    pass\nclass C(B):\n    pass\n"}
    assert too_deep(recording_classes(layered)) == ["x.py: class C is 3 levels deep"]
    reader = {
        "y.py": "class Calls:\n    def scope(self): ...\n"
        "class Ops:\n    def f(self):\n        self.calls.scope()\n        return self.calls.stack\n"
    }
    assert foreign_reads(reader, recording_classes(reader)) == ["y.py:6: self.calls.stack is no method of Calls"]

"""What ``tensorview draw`` and ``tensorview summary`` do, step by step (the Sphinx
directive uses ``record`` too)."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import sys
from typing import Any

import tensorview

from ..api import draw_graph
from ..drawing import ComputationGraph
from ..recording.placement import as_device
from ..render import find_dot, is_big
from ..render.executable import INSTALL_HINT
from ..render.formats import Format, format_for
from . import inputs
from .parser import VIEW_OPTIONS
from .progress import Progress
from .targets import Request, Target, build
from .values import UsageError, merge_pairs

#: a folded view this much smaller than the one asked for is worth a hint
FOLD_HINT_RATIO = 0.7


def request_of(ns: argparse.Namespace) -> Request:
    return Request(
        spec=ns.target,
        kwargs=merge_pairs(ns.kwargs, "--kwargs"),
        config=merge_pairs(ns.config, "--config"),
        task=ns.task,
        device=ns.device,
        seq_len=ns.seq_len,
        batch_size=ns.batch_size,
    )


def build_target(ns: argparse.Namespace, progress: Progress) -> Target:
    as_device(ns.device)  # an unknown or absent device is a usage error, before anything is built
    request = request_of(ns)
    with progress.step(f"building {ns.target} on {ns.device}") as result:
        target = build(request)
        params = sum(p.numel() for p in target.model.parameters())
        result.append(f"built {type(target.model).__name__} ({_count(params)} parameters)")
    return target


def record(ns: argparse.Namespace, target: Target, progress: Progress) -> ComputationGraph:
    """Record the target's forward with the view options of ``ns``."""
    specs = inputs.choose(ns.input_size or [], target.inputs, ns.target)
    view = {k: getattr(ns, k) for k in VIEW_OPTIONS}
    name = ns.graph_name or target.name
    model = type(target.model).__name__
    with progress.step(f"recording {model} on {ns.device} with {inputs.describe(specs)}") as result:
        graph = draw_graph(
            target.model,
            device=ns.device,
            mode=ns.mode,
            graph_dir=ns.graph_dir,
            graph_name=name,
            style=ns.style,
            **view,
            **inputs.call_arguments(specs, ns.device),
        )
        result.append(f"recorded {len(graph.graph.nodes)} nodes")
    if ns.number_nodes or ns.layout != "auto":
        graph = graph.view(number_nodes=ns.number_nodes, layout=ns.layout)
    return graph


def output_format(ns: argparse.Namespace) -> Format:
    ext = ns.format or ("gv" if ns.output == "-" else os.path.splitext(ns.output or "x.svg")[1].lstrip("."))
    if not ext:
        raise UsageError(f"-o {ns.output!r} has no extension: add one (.svg, .png, .pdf, .gv, .json) or give --format")
    return format_for(ext)


def draw(ns: argparse.Namespace, progress: Progress) -> int:
    fmt = output_format(ns)  # checked before anything slow runs
    if fmt.needs_dot and find_dot() is None:
        raise UsageError(f"{fmt.name} output needs Graphviz: {INSTALL_HINT}")
    if ns.style == "paper" and fmt.name not in ("svg", "pdf"):
        progress.hint(f"the paper style is made for vector output (.svg, .pdf); {fmt.name} is {fmt.mime}")
    target = build_target(ns, progress)
    graph = record(ns, target, progress)
    with progress.step("computing the view") as result:
        view = graph.get_view()
        result.append(f"view of {len(view.nodes)} nodes and {len(view.edges)} edges")
    if fmt.needs_dot:
        _layout_hints(ns, graph, progress)
    path = ns.output or _safe(target.name) + "." + fmt.extensions[0]
    n = len(view.nodes)
    doing, done = (
        (f"laying out {n} nodes with Graphviz", f"laid out {n} nodes")
        if fmt.needs_dot
        else (f"making {fmt.name}", f"made {fmt.name}")
    )
    with progress.step(doing, done):
        data = graph.produce(fmt)
    if path == "-":
        if isinstance(data, str):
            sys.stdout.write(data)
        else:
            sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return 0
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    mode, encoding = ("w", "utf-8") if isinstance(data, str) else ("wb", None)
    with open(path, mode, encoding=encoding) as f:
        f.write(data)
    progress.say(f"wrote {path} ({n} nodes drawn)")
    return 0


def _layout_hints(ns: argparse.Namespace, graph: ComputationGraph, progress: Progress) -> None:
    """Say what would lay out faster: a bounded layout, a folded view."""
    view = graph.get_view()
    if not is_big(view) or progress.quiet:
        return
    n = len(view.nodes)
    if ns.layout == "exact":
        progress.hint(f"--layout auto bounds Graphviz's work on a view this big ({n} nodes); exact can take minutes")
    if ns.fold is not True:
        folded = len(graph.view(fold=True).get_view().nodes)
        if folded < FOLD_HINT_RATIO * n:
            progress.hint(f"--fold true draws {folded} nodes instead of {n} (repeated blocks as one xN box), faster")
    elif ns.depth > 1:
        progress.hint(f"{n} nodes: a smaller --depth draws fewer (and lays out faster)")


def summary(ns: argparse.Namespace, progress: Progress) -> int:
    fn = getattr(tensorview, "summary", None)
    if not callable(fn):
        raise UsageError(
            f"tensorview summary needs the cost model (tensorview.summary), which is not available in "
            f"this version of tensorview ({tensorview.__version__}); `tensorview draw` works"
        )
    target = build_target(ns, progress)
    specs = inputs.choose(ns.input_size or [], target.inputs, ns.target)
    options: dict[str, Any] = {"device": ns.device, "mode": ns.mode, "depth": ns.depth, "verbose": 0}
    accepted = _parameters(fn)
    options = {k: v for k, v in options.items() if v is not None and (accepted is None or k in accepted)}
    with progress.step(f"costing {type(target.model).__name__} on {ns.device} with {inputs.describe(specs)}"):
        result = fn(target.model, **options, **inputs.call_arguments(specs, ns.device))
    if ns.output:
        with open(ns.output, "w", encoding="utf-8") as f:
            if ns.output.lower().endswith(".txt"):
                f.write(f"{result}\n")
            else:
                json.dump(result.to_dict(), f, indent=1)
        progress.say(f"wrote {ns.output}")
    else:
        print(result)
    return 0


def _parameters(fn: Any) -> set[str] | None:
    """Names ``fn`` takes by keyword (``None``: anything, it has ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", name).strip("._") or "model"


def _count(n: int) -> str:
    for unit, size in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return str(n)


__all__ = ["build_target", "draw", "record", "request_of", "summary"]

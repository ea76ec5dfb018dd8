"""``tensorview diff A B`` and ``tensorview fingerprint TARGET``: the architecture diff for
people and CI (docs/diff.md).

``A``/``B`` are any targets of ``draw`` or saved graph JSONs (``tensorview draw ... -o
x.json``).  ``diff`` prints the report and exits 0 when the two are identical, 1 when they
differ, 2 on a usage error; ``-o`` also writes it (``.json``, ``.txt``, ``.html``, or
a picture: ``.svg``, ``.gv``, ``.png``, ``.pdf``).  ``fingerprint`` prints a structural hash
that is the same for the same architecture on any run, machine and device.
"""

from __future__ import annotations

import argparse
import os

from ..api import draw_graph
from ..compare import KINDS, diff, fingerprint
from ..compare.index import COSTS
from ..graph import Graph, load
from . import inputs
from .commands import build_target
from .progress import Progress
from .values import UsageError

#: exit statuses of ``diff``
SAME, DIFFERENT = 0, 1


def graph_of(ns: argparse.Namespace, spec: str, progress: Progress) -> tuple[Graph, str]:
    """The recorded graph of one target (or the saved graph ``spec``) and its name."""
    if spec.endswith(".json"):
        if not os.path.isfile(spec):
            raise UsageError(f"no such graph JSON: {spec!r}")
        with progress.step(f"reading {spec}"):
            return load(spec), os.path.basename(spec)
    sub = argparse.Namespace(**{**vars(ns), "target": spec})
    target = build_target(sub, progress)
    specs = inputs.choose(ns.input_size or [], target.inputs, spec)
    with progress.step(f"recording {type(target.model).__name__} on {ns.device} with {inputs.describe(specs)}"):
        graph = draw_graph(
            target.model,
            device=ns.device,
            mode=ns.mode,
            source=False,
            stats=COSTS if getattr(ns, "stats", False) else (),
            **inputs.call_arguments(specs, ns.device),
        )
    return graph.graph, spec


def run_diff(ns: argparse.Namespace, progress: Progress) -> int:
    ignore = [k.strip() for k in ns.ignore.split(",") if k.strip()]
    bad = [k for k in ignore if k not in KINDS]
    if bad:
        raise UsageError(f"--ignore: unknown kind {bad[0]!r} (allowed: {', '.join(KINDS)})")
    if ns.output:
        _check_output(ns.output, ns.layout)
    ga, na = graph_of(ns, ns.target, progress)
    gb, nb = graph_of(ns, ns.other, progress)
    with progress.step("comparing"):
        d = diff(ga, gb, level=ns.level, ignore=ignore)
        d.names = (na, nb)
    print(d)
    if ns.output:
        path = d.save(ns.output, depth=ns.depth, layout=ns.layout)
        progress.say(f"wrote {path}")
    return SAME if d.identical else DIFFERENT


def run_fingerprint(ns: argparse.Namespace, progress: Progress) -> int:
    graph, name = graph_of(ns, ns.target, progress)
    print(f"{fingerprint(graph)}  {name}")
    return 0


def _check_output(path: str, layout: str | None) -> None:
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    if ext not in ("json", "txt", "html", "svg", "gv", "dot", "png", "pdf"):
        raise UsageError(f"-o {path!r}: the diff is written as .json, .txt, .html, .svg, .gv, .png or .pdf")
    if layout == "viewer" and ext != "html":
        raise UsageError(f"--layout viewer is the .html page's (-o {path!r}): pictures are merged or side")

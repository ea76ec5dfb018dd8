"""Running the Graphviz ``dot`` program (or ``graphviz-pure``, a pip build of it with the
same command line and no PDF output)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import warnings
from typing import Any

from ..errors import RenderError
from .escape import attr_list

PROGRAMS = ("dot", "graphviz-pure")
INSTALL_HINT = (
    "the Graphviz 'dot' program was not found on PATH; install Graphviz "
    "(apt-get install graphviz, brew install graphviz, conda install graphviz) "
    "or `pip install graphviz-pure`. The DOT source (.source, save('x.gv')) and "
    "the JSON (.to_json(), save('x.json')) work without it"
)


def find_dot() -> str | None:
    """Path of ``dot``, else of ``graphviz-pure``, else ``None``."""
    for name in PROGRAMS:
        path = shutil.which(name)
        if path:
            return path
    return None


#: graph attributes tried, in order, when ``dot`` crashes on a source (it segfaults on
#: some big graphs with ``splines=polyline``, e.g. torchvision's RAFT); the last one asks
#: for straight edges, which needs no edge routing at all
SAFER_LAYOUTS: tuple[dict[str, str], ...] = ({"splines": "line"}, {"splines": "false"})


def run_dot(source: str, fmt: str, timeout: float | None = None) -> bytes:
    """Lay out ``source`` with dot and return the ``fmt`` output (``svg``, ``png``, ...).

    When ``dot`` crashes (killed by a signal), the drawing is laid out again with the
    attributes of ``SAFER_LAYOUTS`` and a ``RuntimeWarning`` says so; a crash with every
    one of them is a ``RenderError`` naming the signal."""
    exe = find_dot()
    if exe is None:
        raise RenderError(INSTALL_HINT)
    if fmt == "pdf" and os.path.basename(exe).startswith("graphviz-pure"):
        raise RenderError("PDF output needs the Graphviz 'dot' program (graphviz-pure has no PDF); install Graphviz")
    proc = _run(exe, fmt, source, timeout)
    if proc.returncode == 0:
        return proc.stdout
    crash = _crash(proc.returncode)
    if crash is None:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise RenderError(f"dot -T{fmt} failed with exit status {proc.returncode}: {err}")
    for attrs in SAFER_LAYOUTS:
        retry = _run(exe, fmt, with_graph_attrs(source, attrs), timeout)
        if retry.returncode == 0:
            given = " ".join(f"{k}={v}" for k, v in attrs.items())
            warnings.warn(
                f"the Graphviz 'dot' program crashed ({crash}) laying out this drawing; "
                f"it was laid out again with {given}",
                RuntimeWarning,
                stacklevel=2,
            )
            return retry.stdout
    tried = ", ".join(" ".join(f"{k}={v}" for k, v in a.items()) for a in SAFER_LAYOUTS)
    raise RenderError(
        f"the Graphviz 'dot' program crashed ({crash}) laying out this drawing, also with {tried}; "
        "draw less of it (a smaller depth, fold=True, hide_inner_tensors=True) or save the DOT "
        "source (save('model.gv')) and lay it out with another Graphviz version"
    )


def _run(exe: str, fmt: str, source: str, timeout: float | None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run([exe, f"-T{fmt}"], input=source.encode("utf-8"), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise RenderError(f"dot did not finish within {timeout} s") from e


def _crash(returncode: int) -> str | None:
    """How a process died, when it was killed by a signal (``SIGSEGV``), else ``None``."""
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if number <= 0:
        return None
    try:
        return f"{signal.Signals(number).name}, signal {number}"
    except ValueError:
        return f"signal {number}"


def with_graph_attrs(source: str, attrs: dict[str, str]) -> str:
    """``source`` with graph attributes set at its end (the last setting wins in DOT)."""
    body = source.rstrip()
    if not body.endswith("}"):
        raise RenderError("not a DOT graph: the source does not end with '}'")
    return f"{body[:-1]}\tgraph{attr_list(attrs)}\n}}\n"


def render_digraph(dot: Any, path: str, fmt: str) -> str:
    """Write a ``graphviz.Digraph`` (or DOT text) to ``path`` as ``fmt``; ``gv``/``dot``
    write the source itself.  Returns ``path``."""
    source = dot if isinstance(dot, str) else dot.source
    if fmt in ("gv", "dot"):
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        return path
    data = run_dot(source, fmt)
    with open(path, "wb") as f:
        f.write(data)
    return path

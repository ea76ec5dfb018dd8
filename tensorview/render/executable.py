"""Running the Graphviz ``dot`` program (or ``graphviz-pure``, a pip build of it with the
same command line and no PDF output)."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

from ..errors import RenderError

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


def run_dot(source: str, fmt: str, timeout: float | None = None) -> bytes:
    """Lay out ``source`` with dot and return the ``fmt`` output (``svg``, ``png``, ...)."""
    exe = find_dot()
    if exe is None:
        raise RenderError(INSTALL_HINT)
    if fmt == "pdf" and os.path.basename(exe).startswith("graphviz-pure"):
        raise RenderError("PDF output needs the Graphviz 'dot' program (graphviz-pure has no PDF); install Graphviz")
    try:
        proc = subprocess.run([exe, f"-T{fmt}"], input=source.encode("utf-8"), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise RenderError(f"dot did not finish within {timeout} s") from e
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise RenderError(f"dot -T{fmt} failed with exit status {proc.returncode}: {err}")
    return proc.stdout


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

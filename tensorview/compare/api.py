"""``diff(a, b)`` and ``fingerprint(x)``: the entry points, turning what users hold into
graphs (recording models, importing programs, reading saved JSON) before comparing."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Any

from ..api import draw_graph
from ..drawing import ComputationGraph
from ..errors import InvalidInputError, InvalidTypeError
from ..graph import Graph, load
from ..importers import is_program
from .index import COSTS, Tree
from .report import KINDS, LEVELS, GraphDiff
from .walk import compare


def diff(
    a: Any,
    b: Any,
    *,
    input_size: Any = None,
    input_data: Any = None,
    device: Any = "meta",
    level: str = "module",
    ignore: str | Sequence[str] = (),
    stats: bool = False,
) -> GraphDiff:
    """The architecture diff of ``a`` and ``b``: each a model (recorded with the given
    inputs, on ``device``, meta by default), a ``ComputationGraph``, a ``Graph``, the path
    of a saved graph JSON, an ``ExportedProgram`` or an ``fx.GraphModule``.

    Module calls are matched by path, then by structure where paths were renamed; ops
    inside matched calls are aligned as sequences.  ``level="op"`` lists every op edit,
    ``"module"`` one summary per call.  ``ignore``: kinds of differences to leave out
    (``KINDS``: class, shape, dtype, params, flops, saved_bytes, ops, flow, order, wrap,
    names).  ``stats=True``: models are recorded with the cost probe, and each matched
    call's own FLOPs and bytes saved for backward are compared (also for recordings and
    saved graphs that carry the ``flops``/``saved_bytes`` layers, on both sides), as are
    the whole models' (``GraphDiff.totals``).  docs/diff.md.

    >>> import torch, tensorview as tv
    >>> old = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU())
    >>> new = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.SiLU())
    >>> print(tv.diff(old, new, input_size=(1, 4)))
    Sequential vs Sequential (module level): 1 changed
      1: class GELU -> SiLU; ops 1 changed (gelu -> silu)
    """
    level = _check_level(level)
    ignore = _check_ignore(ignore)
    if not isinstance(stats, bool):
        raise InvalidTypeError(f"stats must be True or False, got {stats!r:.80}")
    ga, na = graph_of(a, input_size=input_size, input_data=input_data, device=device, stats=stats)
    gb, nb = graph_of(b, input_size=input_size, input_data=input_data, device=device, stats=stats)
    costs = tuple(k for k in COSTS if k in ga.annotations and k in gb.annotations)
    return compare(Tree(ga, na, costs), Tree(gb, nb, costs), level, ignore)


def fingerprint(x: Any, *, input_size: Any = None, input_data: Any = None, device: Any = "meta") -> str:
    """A stable structural hash of ``x`` (anything ``diff`` takes): the same architecture
    gives the same hash on any device, run and machine; module names are part of it."""
    g, _ = graph_of(x, input_size=input_size, input_data=input_data, device=device)
    t = Tree(g)
    names = sorted((c.path, c.cls) for c in t.calls.values())
    return hashlib.sha256(repr((t.stable_sig(), names)).encode()).hexdigest()[:16]


def graph_of(
    x: Any, *, input_size: Any = None, input_data: Any = None, device: Any = "meta", stats: bool = False
) -> tuple[Graph, str]:
    """The recorded graph of ``x`` and a name for it (a model's with the cost layers of
    ``COSTS`` when ``stats``)."""
    if isinstance(x, Graph):
        return x, _root_class(x)
    if isinstance(x, ComputationGraph):
        return x.graph, _root_class(x.graph)
    if isinstance(x, (str, os.PathLike)):
        path = os.fspath(x)
        if not path.endswith(".json"):
            raise InvalidInputError(f"diff reads saved graphs from .json files, got {path!r}")
        if not os.path.exists(path):
            raise InvalidInputError(f"no such graph JSON: {path!r}")
        return load(path), os.path.basename(path)
    given = input_size is not None or input_data is not None
    if is_program(x, given):
        return draw_graph(x, input_size=input_size, input_data=input_data).graph, type(x).__name__
    import torch

    if isinstance(x, torch.nn.Module):
        costs = COSTS if stats else ()
        graph = draw_graph(x, input_size=input_size, input_data=input_data, device=device, source=False, stats=costs)
        return graph.graph, type(x).__name__
    raise InvalidTypeError(
        "diff compares models (nn.Module), ComputationGraphs, Graphs, saved graph .json paths, "
        f"ExportedPrograms and fx.GraphModules, got {type(x).__name__}: {x!r:.80}"
    )


def _root_class(g: Graph) -> str:
    return g.nodes[g.root].cls_name if g.root is not None and hasattr(g.nodes[g.root], "cls_name") else "graph"  # type: ignore[union-attr]


def _check_level(level: Any) -> str:
    if level not in LEVELS:
        raise InvalidInputError(f"level must be one of {list(LEVELS)}, got {level!r:.80}")
    return str(level)


def _check_ignore(ignore: Any) -> tuple[str, ...]:
    if isinstance(ignore, str):
        ignore = [p.strip() for p in ignore.split(",") if p.strip()]
    try:
        kinds = tuple(ignore)
    except TypeError:
        raise InvalidTypeError(f"ignore must be kinds of differences {list(KINDS)}, got {ignore!r:.80}") from None
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise InvalidInputError(f"ignore: unknown kind {bad[0]!r:.80} (allowed: {', '.join(KINDS)})")
    return kinds

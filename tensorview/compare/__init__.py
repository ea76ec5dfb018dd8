"""Architecture diff: ``tv.diff(a, b)`` matches the module calls and ops of two recordings
and says what differs (docs/diff.md).

``index.py`` reads what is compared from each ``Graph``, ``align.py`` matches calls (a tree
alignment) and ops (an edit script), ``walk.py`` compares matched pairs, ``report.py`` holds
the result (``GraphDiff``), ``picture.py`` and ``merged.py`` draw it; ``api.py`` turns models, recordings,
programs and saved JSON into graphs.  Everything but ``api.py`` works on plain graphs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .report import KINDS, LEVELS, Change, Difference, Edit, GraphDiff

if TYPE_CHECKING:
    from .api import diff, fingerprint, graph_of


def __getattr__(name: str) -> Any:
    """``diff``, ``fingerprint`` and ``graph_of`` (api.py, which records models and so
    imports torch) load on first use: the CLI's parser reads ``KINDS``/``LEVELS`` without
    torch (``tensorview --help`` imports none)."""
    if name in ("diff", "fingerprint", "graph_of"):
        return getattr(importlib.import_module(".api", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["KINDS", "LEVELS", "Change", "Difference", "Edit", "GraphDiff", "diff", "fingerprint", "graph_of"]

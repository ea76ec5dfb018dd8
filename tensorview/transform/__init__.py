"""Transform: pure functions from a recorded ``Graph`` to a ``View`` (what gets drawn).

``build_view(graph, ViewOptions(depth=2, roll=True))`` collapses module calls to a depth,
hides inner tensors, merges repeated calls and folds repeated blocks; the graph itself is
never changed, so any number of views can be taken from one recording.  The data types
(``View``, ``ViewOptions``) live beside the IR in ``tensorview.graph``; they are
re-exported here for convenience.
"""

from ..graph import Cluster, View, ViewEdge, ViewNode, ViewOptions
from .build import FOLD_AUTO_REPEATS, FOLD_AUTO_THRESHOLD, build_view

__all__ = [
    "FOLD_AUTO_REPEATS",
    "FOLD_AUTO_THRESHOLD",
    "Cluster",
    "View",
    "ViewEdge",
    "ViewNode",
    "ViewOptions",
    "build_view",
]

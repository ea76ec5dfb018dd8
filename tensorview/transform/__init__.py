"""Transform: pure functions from a recorded ``Graph`` to a ``View`` (what gets drawn).

``build_view(graph, ViewOptions(depth=2, roll=True))`` collapses module calls to a depth,
hides inner tensors, merges repeated calls and folds repeated blocks; the graph itself is
never changed, so any number of views can be taken from one recording.
"""

from .build import FOLD_AUTO_THRESHOLD, build_view
from .options import GRAPH_DIRS, LAYOUTS, OPTION_NAMES, ViewOptions
from .view import Cluster, View, ViewEdge, ViewNode

__all__ = [
    "FOLD_AUTO_THRESHOLD",
    "GRAPH_DIRS",
    "LAYOUTS",
    "OPTION_NAMES",
    "Cluster",
    "View",
    "ViewEdge",
    "ViewNode",
    "ViewOptions",
    "build_view",
]

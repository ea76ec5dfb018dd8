"""Architecture diff: ``tv.diff(a, b)`` matches the module calls and ops of two recordings
and says what differs (docs/diff.md).

``index.py`` reads what is compared from each ``Graph``, ``align.py`` matches calls (a tree
alignment) and ops (an edit script), ``walk.py`` compares matched pairs, ``report.py`` holds
the result (``GraphDiff``), ``picture.py`` draws it; ``api.py`` turns models, recordings,
programs and saved JSON into graphs.  Everything but ``api.py`` works on plain graphs.
"""

from .api import diff, fingerprint, graph_of
from .report import KINDS, LEVELS, Change, Difference, Edit, GraphDiff

__all__ = ["KINDS", "LEVELS", "Change", "Difference", "Edit", "GraphDiff", "diff", "fingerprint", "graph_of"]

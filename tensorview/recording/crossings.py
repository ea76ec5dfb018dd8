"""Tensors that cross a module call's boundary where no hook sees them.

A call's arguments enter it and its return value leaves it (calls.py).  A tensor can
also get in or out another way: held by an object among the arguments (torchvision's
``ImageList.tensors``), stored in one (a KV cache the call fills), kept in a module
attribute or a closure, or returned by a submodule's method (methods.py), whose return
value passes no hook.  ``read_late`` repairs the boundaries when such a tensor is read:

* made before a running call it never entered: it enters that call (an edge into it),
  and each enclosing call started after it was made;
* made inside an ended *leaky* call (one that got objects among its arguments, or a
  method call) and not among its results: it becomes a result of that call.

Reads are checked where they happen (ops, module-call arguments, results), at the cost of
one comparison and one set lookup per tensor read; each call remembers the tensors it
checked (``Frame.known``), so the slow path runs once per tensor and call.  Objects are
never walked for this: only the tensors actually read cross a boundary, so a layer given
a KV cache holding every earlier layer's keys gets an edge from none of them.
"""

from __future__ import annotations

import itertools

from ..graph import PARAM_ROLES, SOURCE_ROLES, TensorNode
from .state import Frame, SessionState


class Crossings(SessionState):
    def read_late(self, node: TensorNode, frame: Frame | None = None) -> None:
        """``node`` is read in the running call (or, with ``frame``, returned by the call
        of ``frame``, which just ended) and was neither made there nor checked before."""
        nid = node.id
        add_edge = self.builder.add_edge
        if node.role not in PARAM_ROLES:  # weights enter nothing, as everywhere
            frames = reversed(self.stack) if frame is None else itertools.chain((frame,), reversed(self.stack))
            for f in frames:
                if nid > f.node.id or nid in f.known:
                    break
                add_edge(nid, f.node.id)
                f.known.add(nid)
        leaky = self.leaky
        if leaky and node.role not in SOURCE_ROLES:  # a source has no producer, also here
            module = self.graph.module
            p = node.parent
            while p is not None:
                call = module(p)
                if call.end < 0:  # still running: the read is inside it
                    break
                results = leaky.get(p)
                if results is not None and nid not in results:
                    add_edge(p, nid)
                    results.add(nid)
                p = call.parent
        (frame or self.stack[-1]).known.add(nid)

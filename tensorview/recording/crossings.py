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
from typing import TYPE_CHECKING

import torch

from ..graph import PARAM_ROLES, SOURCE_ROLES, NodeFactory, TensorNode
from .optable import version
from .state import Frame
from .tensor import RecorderTensor

if TYPE_CHECKING:
    from .bindings import Bindings
    from .calls import Calls

_RT = RecorderTensor


class Crossings:
    """The leaky calls of one recording and the checks of each tensor read."""

    def __init__(self, builder: NodeFactory, bindings: Bindings, token: object) -> None:
        self.builder = builder
        self.graph = builder.graph
        self.token = token
        #: ended calls whose results may have left where no hook sees (objects among their
        #: arguments, method calls): call id -> ids of its results so far
        self.leaky: dict[int, set[int]] = {}
        self._stack: list[Frame] = []
        self._node_of = bindings.node_of

    def connect(self, calls: Calls) -> None:
        """The call stack whose frames reads cross (read, never changed, here)."""
        self._stack = calls.frames()

    def table(self) -> dict[int, set[int]]:
        """The leaky calls (read, never written, by the per-call hot path of calls.py: no
        check is needed while it is empty)."""
        return self.leaky

    def leak(self, call_id: int, results: set[int]) -> None:
        """The ended call ``call_id`` may have handed out tensors where no hook sees; its
        results so far are ``results``."""
        self.leaky[call_id] = results

    def read(self, ins: list[torch.Tensor], top: Frame) -> list[int]:
        """The node ids of the tensors ``ins`` (op arguments, or a call's tensor arguments),
        read inside the call of ``top``."""
        ids: list[int] = []
        sid, known, leaky, token = top.node.id, top.known, self.leaky, self.token
        for t in ins:
            if type(t) is _RT and t._tv_tok is token:
                try:
                    v = t._version  # (version() inlined: it is this, but for inference tensors)
                except RuntimeError:
                    v = version(t)
                n = t._tv_node if t._tv_ver == v else self._node_of(t)
            else:
                n = self._node_of(t)
            nid = n.id
            if (nid < sid or (leaky and n.parent != sid)) and nid not in known:
                self.read_late(n)  # made before this call, or maybe left a leaky one
            ids.append(nid)
        return ids

    def check(self, node: TensorNode, caller: Frame) -> None:
        """``node`` is read by the call of ``caller`` (to pass it on to a call)."""
        cid = caller.node.id
        nid = node.id
        if (nid < cid or (self.leaky and node.parent != cid)) and nid not in caller.known:
            self.read_late(node)

    def held(self, node: TensorNode) -> None:
        """``node``, held by an object a call returned or filled, was made inside it: it
        may have left a leaky call inside that one too."""
        if self.leaky:
            self.read_late(node)

    def clear(self) -> None:
        self.leaky.clear()

    def read_late(self, node: TensorNode, frame: Frame | None = None) -> None:
        """``node`` is read in the running call (or, with ``frame``, returned by the call
        of ``frame``, which just ended) and was neither made there nor checked before."""
        nid = node.id
        add_edge = self.builder.add_edge
        if node.role not in PARAM_ROLES:  # weights enter nothing, as everywhere
            frames = reversed(self._stack) if frame is None else itertools.chain((frame,), reversed(self._stack))
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
        (frame or self._stack[-1]).known.add(nid)

"""``run_backward``: run the backward of a recording's outputs once, timing each autograd
node (``draw_graph(..., backward=True, run_backward=True)``).

``torch.autograd.grad`` differentiates the outputs (with gradients of ones) with respect to
the leaves the autograd graph reaches, so no ``.grad`` is written anywhere; a pre-hook and a
hook on every autograd node take the wall time between them (microseconds: the node's own
work, as the engine runs one node at a time on one thread per device).  The hooks are
removed before it returns, also on an exception.  It frees what the forward saved:
``join.py`` reads the saved bytes first.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import torch

#: the annotation layer of the measured times (microseconds per autograd node)
BACKWARD_US = "backward_us"


def run_backward(outputs: Sequence[torch.Tensor], fns: Sequence[Any]) -> dict[Any, float]:
    """``{autograd node: microseconds}`` for one backward of ``outputs`` (module docstring);
    ``fns``: the autograd nodes they reach."""
    outs = [t for t in outputs if t.grad_fn is not None]
    leaves = [fn.variable for fn in fns if isinstance(getattr(fn, "variable", None), torch.Tensor)]
    if not outs or not leaves:
        return {}
    starts: dict[Any, float] = {}
    times: dict[Any, float] = {}
    clock = time.perf_counter
    handles = []
    try:
        for fn in fns:
            if hasattr(fn, "variable"):
                continue  # AccumulateGrad: autograd.grad captures the gradient instead
            handles.append(fn.register_prehook(lambda grads, fn=fn: starts.__setitem__(fn, clock())))
            handles.append(fn.register_hook(lambda gi, go, fn=fn: times.__setitem__(fn, (clock() - starts[fn]) * 1e6)))
        torch.autograd.grad(outs, leaves, grad_outputs=[torch.ones_like(o) for o in outs], allow_unused=True)
    finally:
        for h in handles:
            h.remove()
    return times

"""The backward pass on the public side: ``tv.autograd_graph`` (torchviz's picture of any
tensor's autograd graph) and the joint forward + backward graph of a recording
(``draw_graph(..., backward=True)``, ``tv.Recorder(..., backward=True).with_backward``),
as ``ComputationGraph``s, built by ``tensorview/backward`` (docs/backward.md)."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_leaves

from .backward import autograd_ir, join_backward
from .drawing import ComputationGraph


def joined(graph: ComputationGraph, probe: Any, returned: list[Any], run: bool) -> ComputationGraph:
    """The joint graph of a recording made with ``probe`` (backward/join.py)."""
    outs = [t for t in tree_leaves(returned) if isinstance(t, torch.Tensor)]
    pair = join_backward(graph.graph, probe, outs, run=run)
    return ComputationGraph(pair[False], graph.options, graph.render_options, backward=pair)


def autograd_graph(
    output: Any, params: Any = None, *, show_attrs: bool = False, show_saved: bool = False, **options: Any
) -> ComputationGraph:
    """The autograd graph of ``output`` (any tensor, or a tuple/list of them, recorded or
    not), as torchviz's ``make_dot(output, params, show_attrs=..., show_saved=...)`` draws
    it: backward nodes, ``AccumulateGrad`` into the leaves named from ``params``
    (``dict(model.named_parameters())`` or ``model.named_parameters()``), saved tensors with
    their bytes; ``options``: view and render options.  Nothing runs.  docs/backward.md."""
    graph = ComputationGraph(autograd_ir(output, params, show_attrs=show_attrs, show_saved=show_saved))
    return graph.view(**{"show_params": True, "hide_module_functions": False, **options})


__all__ = ["autograd_graph", "joined"]

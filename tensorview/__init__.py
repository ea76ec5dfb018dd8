"""tensorview: record any PyTorch forward pass eagerly and draw it as a graph.

The pipeline, one subpackage each:

1. **record** (``tensorview.recording``): ``Recorder`` runs the forward with a tensor
   subclass and a torch-function mode and builds nodes as the ops run;
2. **graph** (``tensorview.graph``): the recorded IR, tensor/function/module nodes with
   shapes and module paths, kept whole (all depths, all tensors);
3. **transform** (``tensorview.transform``): pure functions from the graph to a view
   (depth collapse, hidden inner tensors, rolled and folded repeats);
4. **render** (``tensorview.render``): Graphviz DOT, JSON, or a renderer of your own.

>>> import torch, tensorview as tv
>>> model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
>>> graph = tv.draw_graph(model, input_size=(2, 8))
>>> [n.name for n in graph.graph.modules()]
['model', '_0', '_1']
>>> "digraph" in graph.source
True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__

if TYPE_CHECKING:  # what the lazy names below are, for type checkers and editors
    from . import taps
    from .api import Recorder, draw_graph, summary
    from .autograd import autograd_graph
    from .compare import GraphDiff, diff
    from .cost.memreport import MemoryReport
    from .cost.step import memory
    from .drawing import ComputationGraph
    from .errors import (
        GraphLintError,
        InvalidInputError,
        InvalidTypeError,
        RecordingError,
        RenderError,
        TensorviewError,
    )
    from .graph import FunctionNode, Graph, ModuleNode, TensorNode, ViewOptions
    from .recording import RecorderTensor
    from .render import GraphvizStyler, Renderer, RenderOptions
    from .torchrecorder import make_dot, record, render_network

#: public name -> the module defining it, imported on first use (PEP 562), so that
#: ``import tensorview`` imports no torch and ``tensorview --help`` starts at once
#: (docs/architecture.md, "Lazy loading")
_LAZY = {
    **dict.fromkeys(("Recorder", "draw_graph", "summary"), "api"),
    "ComputationGraph": "drawing",
    "autograd_graph": "autograd",
    **dict.fromkeys(("GraphDiff", "diff"), "compare"),
    "MemoryReport": "cost.memreport",
    "memory": "cost.step",
    **dict.fromkeys(
        (
            "GraphLintError",
            "InvalidInputError",
            "InvalidTypeError",
            "RecordingError",
            "RenderError",
            "TensorviewError",
        ),
        "errors",
    ),
    **dict.fromkeys(("FunctionNode", "Graph", "ModuleNode", "TensorNode", "ViewOptions"), "graph"),
    "RecorderTensor": "recording",
    **dict.fromkeys(("GraphvizStyler", "Renderer", "RenderOptions"), "render"),
    **dict.fromkeys(("make_dot", "record", "render_network"), "torchrecorder"),
}
#: subpackages reachable as attributes (``tv.cost.fmt_flops``), imported on first use
_SUBMODULES = (
    "api",
    "autograd",
    "backward",
    "compare",
    "compat",
    "cost",
    "drawing",
    "errors",
    "graph",
    "importers",
    "recording",
    "render",
    "taps",
    "torchrecorder",
    "transform",
)

__all__ = [
    "ComputationGraph",
    "FunctionNode",
    "Graph",
    "GraphDiff",
    "GraphLintError",
    "GraphvizStyler",
    "InvalidInputError",
    "InvalidTypeError",
    "MemoryReport",
    "ModuleNode",
    "Recorder",
    "RecorderTensor",
    "RecordingError",
    "RenderError",
    "RenderOptions",
    "Renderer",
    "TensorNode",
    "TensorviewError",
    "ViewOptions",
    "autograd_graph",
    "diff",
    "draw_graph",
    "make_dot",
    "memory",
    "record",
    "render_network",
    "summary",
    "taps",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # found once: later reads do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBMODULES})

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

from . import taps
from ._version import __version__ as __version__
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

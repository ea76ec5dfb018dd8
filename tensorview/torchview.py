"""torchview's names, for code written against torchview: change ``import torchview`` to
``from tensorview import torchview`` (or ``from torchview import draw_graph`` to
``from tensorview import draw_graph``: the same function).

``draw_graph``, ``ComputationGraph`` and ``RecorderTensor`` are tensorview's own; ``Node``, ``TensorNode``,
``ModuleNode``, ``FunctionNode`` and ``NodeContainer`` are the types of the objects in
``graph.node_hierarchy``, ``graph.edge_list`` and ``graph.traverse_graph(...)`` (they are
not tensorview's IR nodes, ``tensorview.TensorNode`` & co.).  Where the pictures differ on
purpose, and the option that gives torchview's: docs/migrating.md.

>>> import torch
>>> from tensorview import torchview
>>> g = torchview.draw_graph(torch.nn.Linear(3, 2), torch.randn(1, 3))
>>> [n.name for n in g.root_container], g.visual_graph.filename
(['input-tensor'], 'model.gv')
"""

from .api import draw_graph
from .compat.nodes import FunctionNode, ModuleNode, Node, NodeContainer, OrderedSet, TensorNode
from .drawing import ComputationGraph
from .recording import RecorderTensor

__all__ = [
    "ComputationGraph",
    "FunctionNode",
    "ModuleNode",
    "Node",
    "NodeContainer",
    "OrderedSet",
    "RecorderTensor",
    "TensorNode",
    "draw_graph",
]

"""The recorded graph (IR) and the view data type: nodes, edges, the builder, lint,
annotations, listings.  Imports neither torch nor graphviz, so every later stage
(transform, render) works on plain data."""

from .annotations import BACKWARD_LAYER, SOURCE_LAYER, WARNING_LAYER, AnnotationPass, Annotations, annotate
from .builder import GraphBuilder
from .factory import NodeFactory
from .graph import Graph, ir_of
from .load import from_dict, load
from .names import Namespace
from .nodes import (
    KINDS,
    NODE_TYPES,
    PARAM_ROLES,
    ROLES,
    SOURCE_ROLES,
    BaseNode,
    Dim,
    FunctionNode,
    ModuleNode,
    Node,
    Shape,
    TensorNode,
    unhandled,
)
from .view import VIEW_OPTION_NAMES, Cluster, Fold, View, ViewEdge, ViewNode, ViewOptions

__all__ = [
    "KINDS",
    "NODE_TYPES",
    "PARAM_ROLES",
    "ROLES",
    "BACKWARD_LAYER",
    "SOURCE_LAYER",
    "WARNING_LAYER",
    "SOURCE_ROLES",
    "VIEW_OPTION_NAMES",
    "AnnotationPass",
    "Annotations",
    "BaseNode",
    "Cluster",
    "Dim",
    "Fold",
    "FunctionNode",
    "Graph",
    "GraphBuilder",
    "ModuleNode",
    "Namespace",
    "Node",
    "NodeFactory",
    "Shape",
    "TensorNode",
    "View",
    "ViewEdge",
    "ViewNode",
    "ViewOptions",
    "annotate",
    "from_dict",
    "ir_of",
    "load",
    "unhandled",
]

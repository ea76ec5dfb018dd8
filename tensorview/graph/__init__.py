"""The recorded graph (IR): nodes, edges, lint, listings.  Imports neither torch nor
graphviz, so every later stage (transform, render) works on plain data."""

from .graph import Graph, Namespace
from .nodes import (
    FUNCTION,
    KINDS,
    MODULE,
    ROLES,
    SOURCE_ROLES,
    TENSOR,
    FunctionNode,
    ModuleNode,
    Node,
    TensorNode,
)

__all__ = [
    "FUNCTION",
    "KINDS",
    "MODULE",
    "ROLES",
    "SOURCE_ROLES",
    "TENSOR",
    "FunctionNode",
    "Graph",
    "ModuleNode",
    "Namespace",
    "Node",
    "TensorNode",
]

"""The backward pass: the autograd graph of a tensor as the IR (``walk.py``), what
``tv.autograd_graph`` draws (torchviz's ``make_dot`` picture, docs/backward.md)."""

from .walk import ATTRS, SAVED_BYTES, autograd_ir

__all__ = ["ATTRS", "SAVED_BYTES", "autograd_ir"]

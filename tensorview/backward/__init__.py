"""The backward pass: the autograd graph of a tensor as the IR (``walk.py``, what
``tv.autograd_graph`` draws: torchviz's ``make_dot`` picture), and a recorded forward
joined with its backward pass (``probe.py`` finds which op made each autograd node,
``join.py`` builds the joint graph of ``draw_graph(backward=True)``).  docs/backward.md."""

from .join import BACKWARD, join_backward
from .probe import BackwardProbe
from .walk import ATTRS, SAVED_BYTES, autograd_ir

__all__ = ["ATTRS", "BACKWARD", "SAVED_BYTES", "BackwardProbe", "autograd_ir", "join_backward"]

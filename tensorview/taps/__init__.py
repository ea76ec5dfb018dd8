"""Data taps: record the values flowing through chosen modules while a model trains or
evaluates as usual (what torchfunc's ``hooks.recorders`` did).

>>> import torch
>>> from torch import nn
>>> from tensorview.taps import ForwardOutput
>>> model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
>>> with ForwardOutput().modules(model, types=nn.Linear) as tap:
...     _ = model(torch.randn(5, 3))
>>> tap.paths, [t.shape for t in tap[0]]
(['0', '2'], [torch.Size([5, 4])])

``ForwardInput``/``ForwardOutput`` record what goes into/comes out of a module call;
``BackwardInput``/``BackwardOutput`` record the gradients with respect to the module's
inputs/outputs (torch's ``grad_input``/``grad_output`` of full backward hooks).
See docs/taps.md.
"""

from .tap import BackwardInput, BackwardOutput, ForwardInput, ForwardOutput, Tap

__all__ = ["BackwardInput", "BackwardOutput", "ForwardInput", "ForwardOutput", "Tap"]

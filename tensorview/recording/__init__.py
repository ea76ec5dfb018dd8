"""Recording: the only part of tensorview that touches torch internals.

``Recorder`` patches ``nn.Module.__call__`` (undone on exit), pushes a TorchFunctionMode
for the root call and wraps the root inputs as ``RecorderTensor``; see session.py."""

from .recorder import Recorder, is_patched
from .tensor import RecorderTensor

__all__ = ["Recorder", "RecorderTensor", "is_patched"]

"""Recording: the only part of tensorview that touches torch internals.

``Recorder`` patches ``nn.Module.__call__`` (undone on exit), pushes a TorchFunctionMode
for the root call and wraps the root inputs as ``RecorderTensor``; its ``graph`` is the
IR ``Graph``.  Pieces: session.py (one recording, composed of collaborators that own
their state: ops.py, bindings.py, calls.py, crossings.py, methods.py, transforms.py,
originals.py, boundary.py), optable.py (what torch functions are), metacache.py (meta
replay), tree.py (nested values), inputs.py (model inputs and placement), patch.py,
interrupts.py (Ctrl-C deferred while state is set up and torn down), copies.py (the
module tree copied to run in another mode)."""

from .probes import Probe
from .recorder import BaseRecorder, Recorder, is_patched
from .source import SourceProbe
from .tensor import RecorderTensor

__all__ = ["BaseRecorder", "Probe", "Recorder", "RecorderTensor", "SourceProbe", "is_patched"]

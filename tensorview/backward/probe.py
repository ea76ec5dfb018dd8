"""``BackwardProbe``: which recorded op made each autograd node.

Autograd numbers the nodes it creates from a per-thread counter (``_sequence_nr``); the
probe reads the counter before and after every recorded op and module call
(``torch._C._autograd._get_sequence_nr``, a few nanoseconds), so every autograd node the
forward created falls in the interval of the op that created it (a composite op such as
``linear`` makes ``TBackward0`` and ``AddmmBackward0``: both belong to it), or else of the
innermost module call running (a hook, an op on a tensor the recorder does not follow).
Nothing in the recording core changes, and nothing is kept but integers.
``AccumulateGrad`` nodes have no number: they belong to their parameter.

Ops run inside ``torch.utils.checkpoint`` are recomputed when the backward runs: the
``recomputed`` layer marks them (``"checkpoint"``).  Non-reentrant checkpointing is seen
from its saved-tensor hooks on top of autograd's stack; the reentrant kind runs its
forward without grad inside ``CheckpointFunction.forward``, found on the Python stack
(looked for only in ops run without grad).
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import torch
from torch import nn

from ..cost.memory import ON_META
from ..graph import FunctionNode, ModuleNode
from ..recording import Probe

_seq = torch._C._autograd._get_sequence_nr
_top_hooks = torch._C._autograd._top_saved_tensors_default_hooks
RECOMPUTED = "recomputed"


def in_checkpoint() -> bool:
    """Whether the op about to run is inside ``torch.utils.checkpoint`` (module docstring)."""
    hooks = _top_hooks(True)
    if hooks is not None:
        return "_checkpoint_hook" in getattr(hooks[0], "__qualname__", "")
    if torch.is_grad_enabled():
        return False
    frame = sys._getframe(1)
    for _ in range(64):
        if frame is None:
            return False
        if frame.f_code.co_name == "forward" and frame.f_code.co_filename.endswith("checkpoint.py"):
            return "CheckpointFunction" in frame.f_code.co_qualname
        frame = frame.f_back
    return False


class BackwardProbe(Probe):
    """Sequence-number intervals per op and module call (module docstring).  On meta,
    attention runs through the CPU's fused kernel where the CPU would (the cost model's
    substitute, cost/memory.py), so its autograd node is the CPU's."""

    name = "backward"
    substitutes: Mapping[Any, Any] = MappingProxyType(dict(ON_META))

    def __init__(self) -> None:
        #: (first, end, node id) per op, in order; module calls apart (a fallback)
        self.ops: list[tuple[int, int, int]] = []
        self.calls: list[tuple[int, int, int, int]] = []  # (first, end, depth, id)
        self._open: list[tuple[int, int, int]] = []
        self._op_start = 0
        #: op id -> "checkpoint" for ops recomputed in the backward
        self.recomputed: dict[int, str] = {}
        #: id(parameter) -> qualified name, for AccumulateGrad
        self.param_names: dict[int, str] = {}

    def start(self, root: ModuleNode, module: nn.Module) -> None:
        self.ops, self.calls, self.recomputed = [], [], {}
        self.param_names = {id(p): n for n, p in module.named_parameters()}
        self._open = [(_seq(), root.depth, root.id)]

    def enter_call(self, m: ModuleNode, module: nn.Module) -> None:
        self._open.append((_seq(), m.depth, m.id))

    def exit_call(self, m: ModuleNode) -> None:
        if self._open:
            first, depth, mid = self._open.pop()
            self.calls.append((first, _seq(), depth, mid))

    def enter_op(self, fn: FunctionNode, func: Any) -> None:
        self._op_start = _seq()
        if in_checkpoint():
            self.recomputed[fn.id] = "checkpoint"

    def exit_op(self, fn: FunctionNode, func: Any) -> Any:
        end = _seq()
        if end > self._op_start:
            self.ops.append((self._op_start, end, fn.id))
        return None

    def stop(self) -> None:
        while self._open:
            first, depth, mid = self._open.pop()
            self.calls.append((first, _seq(), depth, mid))

    def layers(self) -> Mapping[str, Mapping[int, Any]]:
        return {RECOMPUTED: self.recomputed} if self.recomputed else {}

    def op_owner(self, seq: int) -> int | None:
        """The id of the op that created autograd node number ``seq``, if an op did."""
        i = bisect.bisect_right(self.ops, (seq, 1 << 62)) - 1
        if i >= 0 and self.ops[i][0] <= seq < self.ops[i][1]:
            return self.ops[i][2]
        return None

    def owner(self, seq: int) -> int | None:
        """The id of the op (else the innermost module call) that created autograd node
        number ``seq``; None when the forward did not create it."""
        op = self.op_owner(seq)
        if op is not None:
            return op
        inside = [(depth, mid) for first, end, depth, mid in self.calls if first <= seq < end]
        return max(inside)[1] if inside else None

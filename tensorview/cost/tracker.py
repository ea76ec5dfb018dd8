"""PyTorch's memory tracker, taught to keep a timeline (used by step.py; imported lazily:
``torch.distributed`` takes seconds to import).

``torch.distributed._tools.mem_tracker.MemTracker`` is a ``TorchDispatchMode`` that
follows every tensor storage made or handed to it (a weak reference per storage, freed
when the storage dies), sorts it into parameter, buffer, gradient, activation, temporary
(made during backward) and optimizer state, and follows the module tree with
``ModTracker``.  It works the same on real tensors and under ``FakeTensorMode`` (no
memory: only sizes), which is how ``tv.memory`` predicts a step on ``meta``.

:class:`StepTracker` keeps what the tracker only sums: every change of the live bytes
(``_update_snap``: a storage added, freed, resized or moved to another category) as one
row ``(kind, delta, live after, block, phase, module, step)``, and every module call
(its forward hooks, its backward hooks, recomputation under checkpointing) as
``(path, phase, step, first row, end row, live before, order of entry)``.  A block is one storage; its
category is the last one the tracker gave it (a gradient is made as a temporary of the
backward pass and becomes a gradient when it is accumulated into ``.grad``).
"""

from __future__ import annotations

from typing import Any

from torch import nn
from torch.distributed._tools.mem_tracker import MemTracker, _MemRefType, _UpdateType

#: the tracker's categories as the report names them
CATEGORY = {
    _MemRefType.PARAM: "parameter",
    _MemRefType.BUFFER: "buffer",
    _MemRefType.GRAD: "gradient",
    _MemRefType.OPT: "optimizer state",
    _MemRefType.ACT: "activation",
    _MemRefType.TEMP: "temporary",
    _MemRefType.OTH: "input",
}
_KIND = {_UpdateType.ADD: "alloc", _UpdateType.DEL: "free", _UpdateType.SIZE: "resize"}


class StepTracker(MemTracker):
    """A ``MemTracker`` that keeps the timeline (module docstring).  ``phase`` and
    ``step`` are set by the caller as the training step goes on."""

    def __init__(self) -> None:
        super().__init__()
        self.phase = "setup"
        self.step = 0
        self.live = 0
        self.rows: list[tuple[str, int, int, int, str, str | None, int]] = []
        self.categories: list[str] = []  # per block
        self.calls: list[tuple[str, str, int, int, int, int, int]] = []
        self._open: dict[tuple[int, str], list[tuple[int, int, int]]] = {}
        self._entered = 0

    def _update_snap(
        self, u_type: Any, winfo: Any, old_mem_consumed: int | None = None, old_reftype: Any = None
    ) -> None:
        super()._update_snap(u_type, winfo, old_mem_consumed, old_reftype)
        if u_type is _UpdateType.ADD:
            winfo.tv_block = len(self.categories)
            self.categories.append(CATEGORY[winfo.reftype])
            delta = winfo.mem_consumed
        else:
            block = getattr(winfo, "tv_block", None)
            if block is None:  # a storage tracked before the timeline began (none here)
                return
            self.categories[block] = CATEGORY[winfo.reftype]
            if u_type is _UpdateType.REF:
                return
            delta = -winfo.mem_consumed if u_type is _UpdateType.DEL else winfo.mem_consumed - (old_mem_consumed or 0)
        self.live += delta
        row = (_KIND[u_type], delta, self.live, winfo.tv_block, self.phase, self._module(), self.step)
        self.rows.append(row)

    def _track_module_params_and_buffers(self, module: nn.Module, install_grad_hooks: bool = True) -> tuple[int, int]:
        """As the tracker's, with gradient hooks on the parameters that take gradients
        only (it hooks every one, and a frozen parameter refuses a hook)."""
        sizes = super()._track_module_params_and_buffers(module, install_grad_hooks=False)
        if install_grad_hooks:
            for p in module.parameters():
                if p.requires_grad and self._param_to_grad_hook_handles.get(p, None) is None:
                    self._param_to_grad_hook_handles[p] = (
                        p.register_hook(self._grad_hook),
                        p.register_post_accumulate_grad_hook(lambda q: self._grad_hook(q.grad)),
                    )
        return sizes

    def _grad_hook(self, grad: Any) -> None:
        self._update_and_maybe_create_winfos(grad, _MemRefType.GRAD)

    def _update_peak_stats(self, peak_state: Any) -> None:
        """Not kept: the tracker's per-module peaks cost a walk over every module after
        every op (minutes on a 70B model); the report computes them from the rows."""

    def _module(self) -> str | None:
        """The innermost module running (its path below the root; the root is ``""``),
        ``None`` outside the model."""
        parents = self._mod_tracker.parents
        if len(parents) == 1:
            return None
        deepest = max((p for p in parents if p != "Global"), key=lambda p: (p.count("."), p))
        return deepest.partition(".")[2]

    def _path(self, module: nn.Module) -> str:
        return (self._mod_tracker.get_known_fqn(module) or "").partition(".")[2]

    def _enter(self, module: nn.Module | None, phase: str) -> None:
        if module is not None:
            self._open.setdefault((id(module), phase), []).append((len(self.rows), self.live, self._entered))
            self._entered += 1

    def _exit(self, module: nn.Module | None, phase: str) -> None:
        stack = self._open.get((id(module), phase)) if module is not None else None
        if module is not None and stack:
            start, before, order = stack.pop()
            self.calls.append((self._path(module), phase, self.step, start, len(self.rows), before, order))

    def close_calls(self) -> None:
        """End the calls still open (a backward hook that never fired) at the last row."""
        self._open.clear()

    def _pre_fw_hook(self, module: nn.Module, inputs: Any) -> None:
        super()._pre_fw_hook(module, inputs)
        self._enter(module, self._forward_phase())

    def _post_fw_hook(self, module: nn.Module, inputs: Any, outputs: Any) -> None:
        super()._post_fw_hook(module, inputs, outputs)
        self._exit(module, self._forward_phase())

    # a module gone before its backward (one made during the forward, T5 makes some)
    # has nothing to attribute: the tracker would warn each time
    def _pre_bw_hook(self, module: nn.Module | None, args: Any) -> None:
        if module is not None:
            super()._pre_bw_hook(module, args)
            self._enter(module, "backward")

    def _post_bw_hook(self, module: nn.Module | None, args: Any) -> None:
        if module is not None:
            super()._post_bw_hook(module, args)
            self._exit(module, "backward")

    def _forward_phase(self) -> str:
        """A forward call in the backward pass is a recomputation (checkpointing)."""
        return "recompute" if self._mod_tracker.is_bw else "forward"


__all__ = ["CATEGORY", "StepTracker"]

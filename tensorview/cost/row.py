"""``Row``: one module call of a :class:`~.summary.Summary`, exact integers, with
torchinfo's ``LayerInfo`` names as properties (``summary_list`` code keeps working)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..graph import Shape

__all__ = ["Row"]


@dataclasses.dataclass(frozen=True)
class Row:
    """One module call.  ``params``/``trainable_params``/``buffers``: elements of the
    module (recursively, each once); ``flops``, ``uncounted`` (op calls without a FLOP
    formula), ``saved_bytes`` (saved for backward, each storage once; None when not
    measured): over everything the call ran; ``activation_bytes``: bytes of its results.
    ``shared_with``: paths of modules outside this one holding ``shared_params`` of its
    parameter elements; ``repeat``: the module was called before (its parameters are
    counted at its first call)."""

    id: int
    path: str
    cls: str
    depth: int
    call_index: int
    output_shapes: tuple[Shape, ...]
    params: int
    trainable_params: int
    buffers: int
    flops: int
    uncounted: int
    activation_bytes: int
    saved_bytes: int | None
    shared_params: int
    shared_with: tuple[str, ...]
    repeat: bool
    input_shapes: tuple[Shape, ...] = ()
    #: False for a module no recorded call ran: the parameter table, and the submodules
    #: of an opaque (TorchScript) call, listed from the module tree without shapes or costs
    ran: bool = True

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["output_shapes"] = [list(s) for s in self.output_shapes]
        d["input_shapes"] = [list(s) for s in self.input_shapes]
        d["shared_with"] = list(self.shared_with)
        return d

    # torchinfo's LayerInfo names, for code reading ``summary_list``
    @property
    def class_name(self) -> str:
        return self.cls

    @property
    def var_name(self) -> str:
        return self.path.rpartition(".")[2]

    @property
    def num_params(self) -> int:
        return self.params

    @property
    def macs(self) -> int:
        """Multiply-adds: half the FLOPs (torchinfo's ``macs``)."""
        return self.flops // 2

    @property
    def output_size(self) -> list[int | str]:
        """The first output's shape (torchinfo's ``output_size``), [] for none."""
        return list(self.output_shapes[0]) if self.output_shapes else []

    @property
    def input_size(self) -> list[int | str]:
        return list(self.input_shapes[0]) if self.input_shapes else []

    @property
    def is_recursive(self) -> bool:
        return self.repeat

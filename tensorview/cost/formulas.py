"""FLOP formulas for aten ops that torch's registry (``torch.utils.flop_counter``) leaves
out: CPU kernels that fuse what torch counts elsewhere.  Without them
``F.scaled_dot_product_attention`` and an LSTM cost 0 FLOPs on the CPU but their full cost
on meta and CUDA (flops.py uses them; ``FlopCounterMode(custom_mapping=EXTRA_FORMULAS)``
counts the same)."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import flop_counter as _fc

__all__ = ["EXTRA_FORMULAS"]

aten = torch.ops.aten


def _raw(formula: Any) -> Any:
    """The shape formula under torch's ``shape_wrapper`` (what ``custom_mapping`` takes)."""
    return getattr(formula, "__wrapped__", formula)


def _extra_formulas() -> dict[Any, Any]:
    reg = _fc.flop_registry
    pairs = (
        # F.scaled_dot_product_attention on the CPU; same arguments as the CUDA kernels
        ("_scaled_dot_product_flash_attention_for_cpu", aten._scaled_dot_product_flash_attention),
        ("_scaled_dot_product_flash_attention_for_cpu_backward", aten._scaled_dot_product_flash_attention_backward),
        ("_scaled_dot_product_fused_attention_overrideable", aten._scaled_dot_product_flash_attention),
        (
            "_scaled_dot_product_fused_attention_overrideable_backward",
            aten._scaled_dot_product_flash_attention_backward,
        ),
    )
    out: dict[Any, Any] = {}
    for name, like in pairs:
        packet = getattr(aten, name, None)
        if packet is None or packet in reg or like not in reg:
            continue
        out[packet] = _raw(reg[like])
    return out


def _rnn_layer_flops(input: Any, w_ih: Any, w_hh: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    """One layer and direction of a recurrent net in one kernel (the CPU's oneDNN LSTM):
    every step's input and hidden state times the gate weights, ``2 x steps x batch x
    (inputs + hidden) x gates``, as the products of the op's step-by-step decomposition on
    any other device count (biases and gate arithmetic not counted, as by torch's
    ``addmm`` formula)."""
    rows = 1
    for n in input[:-1]:  # steps x batch, in either order
        rows *= n
    return 2 * rows * (w_ih[0] * w_ih[1] + w_hh[0] * w_hh[1])


def _rnn_layer_backward_flops(
    input: Any, w_ih: Any, w_hh: Any, *args: Any, out_shape: Any = None, **kwargs: Any
) -> int:
    # gradients of the inputs and of the weights: two products per forward product
    return 2 * _rnn_layer_flops(input, w_ih, w_hh)


def _rnn_formulas() -> dict[Any, Any]:
    reg = _fc.flop_registry
    pairs = (("mkldnn_rnn_layer", _rnn_layer_flops), ("mkldnn_rnn_layer_backward", _rnn_layer_backward_flops))
    return {p: f for name, f in pairs if (p := getattr(aten, name, None)) is not None and p not in reg}


#: formulas for ops torch's registry leaves out (raw shape formulas, in the form
#: ``FlopCounterMode(custom_mapping=...)`` takes): the CPU kernels of
#: ``scaled_dot_product_attention`` get torch's formula of the CUDA flash kernel, and the
#: CPU's fused LSTM layer (``mkldnn_rnn_layer``) the FLOPs of the matrix products it
#: fuses (without them both cost 0 FLOPs on the CPU but their full cost on meta).
EXTRA_FORMULAS: dict[Any, Any] = {**_extra_formulas(), **_rnn_formulas()}

"""Meta results for ops whose meta kernel refuses what their real kernels take.

Recording on ``meta`` (and ``device="fake"``, whose FakeTensors use the same kernels)
runs each op's meta kernel, which computes the result's metadata.
A few of torch's meta kernels are narrower than the CPU/CUDA kernels of the same op: on
torch 2.13, ``torch._grouped_mm`` (``F.grouped_mm``, the default experts kernel of
transformers' mixture-of-experts models) takes only bfloat16 on meta, while the CPU
kernel takes float32 too.  So a float32 MoE model that runs on the CPU could not be drawn
or costed on meta or fake.

A *fill* stands in for such an op on meta or fake, and only after its meta kernel raised: it
gives the result the real kernel would (shape, strides, dtype), and autograd saves what
the real op saves, so the cost model's activation memory is the same as on a real
device.  Nothing else changes: the recorded op is still the op the model called.  Where
a later torch's meta kernel takes the call, the fill is never used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .fake import _is_fake_tensor

_LOW = torch.bfloat16

#: one fill, bound to the op's arguments: ``fill()`` -> the op's result
Fill = Callable[[], Any]


def fill_for(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], exc: BaseException) -> Fill | None:
    """The fill for op ``func`` that raised ``exc`` with these arguments, or None when the
    failure is not a refusal of the meta kernel that a fill covers."""
    fill = _FILLS.get(func)
    if fill is None or not isinstance(exc, (RuntimeError, NotImplementedError)):
        return None
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
    if not tensors or not all(t.is_meta or _is_fake_tensor(t) for t in tensors):
        return None
    return fill(args, kwargs)


class _GroupedMM(torch.autograd.Function):
    """``torch._grouped_mm`` on meta for the dtypes its meta kernel refuses: the shape and
    strides from the meta kernel run in bfloat16 (they do not depend on the dtype), the
    dtype of the real kernel's result, and the tensors its backward saves."""

    @staticmethod
    def forward(
        ctx: Any,
        a: torch.Tensor,
        b: torch.Tensor,
        offs: torch.Tensor | None,
        bias: torch.Tensor | None,
        out_dtype: torch.dtype | None,
    ) -> torch.Tensor:
        low = torch._grouped_mm(
            a.to(_LOW), b.to(_LOW), offs=offs, bias=None if bias is None else bias.to(_LOW), out_dtype=None
        )
        ctx.save_for_backward(*(t for t in (a, b, offs, bias) if t is not None))
        return torch.empty_strided(low.shape, low.stride(), dtype=out_dtype or a.dtype, device=a.device)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise NotImplementedError("a grouped_mm recorded on meta or fake has no backward (its tensors hold no values)")


def _grouped_mm(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Fill | None:
    try:  # the op's own signature: (mat_a, mat_b, *, offs=None, bias=None, out_dtype=None)
        a, b, offs, bias, out_dtype = _grouped_mm_args(*args, **kwargs)
    except TypeError:
        return None
    if a.dtype == _LOW or a.dtype != b.dtype or not (a.is_floating_point() and a.element_size() >= 2):
        return None  # bfloat16 fails for another reason; fp8 and mixed dtypes: not covered

    return lambda: _GroupedMM.apply(a, b, offs, bias, out_dtype)


def _grouped_mm_args(
    mat_a: torch.Tensor,
    mat_b: torch.Tensor,
    *,
    offs: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
) -> tuple[Any, ...]:
    return mat_a, mat_b, offs, bias, out_dtype


#: op -> its fill for the arguments given, or None where it does not apply
_FILLS: dict[Any, Callable[[tuple[Any, ...], dict[str, Any]], Fill | None]] = {}
#: the aten ops behind them (FakeTensorMode logs their refusals: fake.py quiets that)
FILLED_ATEN: set[Any] = set()
if hasattr(torch, "_grouped_mm"):
    _FILLS[torch._grouped_mm] = _grouped_mm
    FILLED_ATEN.add(torch.ops.aten._grouped_mm)

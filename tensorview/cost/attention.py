"""Attention on meta as the CPU runs it: ``F.scaled_dot_product_attention`` on meta takes
the composite "math" path, which saves the ``batch x heads x seq x seq`` attention weights
for backward, while the CPU (and CUDA) run a fused kernel that saves the output and a
log-sum-exp only.  :func:`sdpa_as_on_cpu` runs the CPU's fused kernel on meta where the
CPU would use it, so bytes saved for backward on meta equal the CPU's (memory.py counts
them); the cost probe names it as a substitute (``ON_META``), :class:`CPUAttentionOnMeta`
applies it to a plain forward."""

from __future__ import annotations

import functools
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from ..recording.probes import with_substitutes

__all__ = ["CPUAttentionOnMeta", "ON_META", "sdpa_as_on_cpu"]

_SDPA = F.scaled_dot_product_attention
_CPU_FLASH = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
_FLASH_DTYPES = frozenset({torch.float32, torch.float64, torch.bfloat16, torch.float16})


def _cpu_would_fuse(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: Any, dropout_p: float, enable_gqa: bool
) -> bool:
    """Whether the CPU runs its fused (flash) kernel for these arguments, as far as that
    shows in the arguments' metadata (checked against the CPU in the tests)."""
    if _CPU_FLASH is None or not torch.backends.cuda.flash_sdp_enabled():  # the flag the CPU obeys too
        return False
    if dropout_p != 0.0 or q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return False
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in _FLASH_DTYPES:
        return False
    if q.stride(-1) != 1 or k.stride(-1) != 1 or v.stride(-1) != 1:
        return False
    if q.size(1) != k.size(1) and not enable_gqa:
        return False
    if min(q.size(2), k.size(2)) == 0:
        return False
    if isinstance(attn_mask, torch.Tensor) and attn_mask.requires_grad and torch.is_grad_enabled():
        return False  # a learned mask (T5's position bias): the fused kernel has no gradient for it
    return attn_mask is None or isinstance(attn_mask, torch.Tensor)


def sdpa_as_on_cpu(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> torch.Tensor:
    """``F.scaled_dot_product_attention``, but on meta through the CPU's fused kernel when
    the CPU would use it, so autograd saves what it saves on a real device (output and
    log-sum-exp, not the ``seq x seq`` attention weights of the math path).  Anything else
    (another device, arguments the fused kernel does not take) calls the function itself."""
    if not (query.is_meta and _cpu_would_fuse(query, key, value, attn_mask, dropout_p, enable_gqa)):
        return _SDPA(
            query,
            key,
            value,
            attn_mask=attn_mask,
            dropout_p=dropout_p,
            is_causal=is_causal,
            scale=scale,
            enable_gqa=enable_gqa,
        )
    if attn_mask is not None and attn_mask.dtype == torch.bool:  # as the CPU does before its kernel
        zero = torch.scalar_tensor(0.0, dtype=query.dtype, device=query.device)
        ninf = torch.scalar_tensor(-float("inf"), dtype=query.dtype, device=query.device)
        attn_mask = torch.where(attn_mask, zero, ninf)
    assert _CPU_FLASH is not None
    return _CPU_FLASH(query, key, value, dropout_p, is_causal, attn_mask=attn_mask, scale=scale)[0]


#: what runs on meta in place of a torch function (a probe's ``substitutes``)
ON_META: dict[Any, Any] = {_SDPA: sdpa_as_on_cpu}


class CPUAttentionOnMeta(TorchFunctionMode):
    """Within this mode, ``F.scaled_dot_product_attention`` on meta tensors runs as
    :func:`sdpa_as_on_cpu`, also where a torch function calls it (``nn.MultiheadAttention``;
    :func:`~tensorview.recording.probes.with_substitutes`).  For a plain forward; the
    recorder swaps the function itself."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if args and isinstance(args[0], torch.Tensor) and args[0].is_meta:
            return _on_meta(func)(*args, **kwargs)
        return func(*args, **kwargs)


@functools.cache
def _on_meta(func: Any) -> Any:
    """What runs for ``func`` on meta in ``CPUAttentionOnMeta`` (once per function: a
    Python op that calls attention by a global name is copied once, not at every call)."""
    return with_substitutes(func, ON_META)

"""Which aten ops cost no FLOPs by nature (views, copies, factories, data movement) and
how ops are named in reports; the tables ``flops.py`` consults besides torch's formulas."""

from __future__ import annotations

from typing import Any

import torch

aten = torch.ops.aten

#: queries the FLOP counter passes through without looking (they dispatch no arithmetic)
_SKIP = frozenset(
    getattr(getattr(aten, name), overload)
    for name, overload in (
        ("sym_is_contiguous", "default"),
        ("is_contiguous", "default"),
        ("is_contiguous", "memory_format"),
        ("is_strides_like_format", "default"),
        ("is_non_overlapping_and_dense", "default"),
        ("size", "default"),
        ("sym_size", "default"),
        ("stride", "default"),
        ("sym_stride", "default"),
        ("storage_offset", "default"),
        ("sym_storage_offset", "default"),
        ("numel", "default"),
        ("sym_numel", "default"),
        ("dim", "default"),
    )
    if hasattr(aten, name) and hasattr(getattr(aten, name), overload)
) | {torch.ops.prim.layout.default}
_PRIM_DEVICE = torch.ops.prim.device.default

#: aten ops (by packet name) that move, copy, select or create data without arithmetic;
#: views and in-place views are recognised from their schema and need not be listed
ZERO_FLOP_OPS = frozenset(
    {
        # factories
        "empty",
        "empty_strided",
        "empty_like",
        "empty_permuted",
        "zeros",
        "zeros_like",
        "ones",
        "ones_like",
        "full",
        "full_like",
        "scalar_tensor",
        "arange",
        "eye",
        "linspace",
        "logspace",
        "tril_indices",
        "triu_indices",
        "new_empty",
        "new_empty_strided",
        "new_zeros",
        "new_ones",
        "new_full",
        "rand",
        "rand_like",
        "randn",
        "randn_like",
        "randint",
        "randint_like",
        "randperm",
        "normal",
        "normal_",
        "uniform_",
        "random_",
        "bernoulli",
        "bernoulli_",
        "lift",
        "lift_fresh",
        "lift_fresh_copy",
        "_efficientzerotensor",
        # copies, conversions, layout
        "clone",
        "copy",
        "copy_",
        "_to_copy",
        "_copy_from",
        "_copy_from_and_resize",
        "contiguous",
        "_unsafe_view",
        "_reshape_alias",
        "reshape",
        "view_as_real",
        "view_as_complex",
        "resize_",
        "resize_as_",
        "set_",
        "_local_scalar_dense",
        "_assert_async",
        "_assert_scalar",
        "_assert_tensor_metadata",
        "_functional_assert_async",
        "detach_",
        "fill",
        "fill_",
        "zero_",
        # gather, concatenate, rearrange
        "cat",
        "stack",
        "hstack",
        "vstack",
        "concat",
        "concatenate",
        "repeat",
        "repeat_interleave",
        "tile",
        "flip",
        "roll",
        "rot90",
        "constant_pad_nd",
        "pad",
        "reflection_pad1d",
        "reflection_pad2d",
        "reflection_pad3d",
        "replication_pad1d",
        "replication_pad2d",
        "replication_pad3d",
        "index",
        "_unsafe_index",
        "index_select",
        "gather",
        "take",
        "take_along_dim",
        "embedding",
        "index_put",
        "index_put_",
        "_index_put_impl_",
        "_unsafe_index_put",
        "index_copy",
        "index_copy_",
        "index_fill",
        "index_fill_",
        "scatter",
        "scatter_",
        "masked_select",
        "masked_scatter",
        "masked_scatter_",
        "slice_scatter",
        "select_scatter",
        "diagonal_scatter",
        "as_strided_scatter",
        "im2col",  # (col2im, F.fold, sums overlapping patches: uncounted, as an add is)
        "pixel_shuffle",
        "pixel_unshuffle",
        "channel_shuffle",
        "native_channel_shuffle",
        "nonzero",
        "nonzero_static",
        "tril",
        "tril_",
        "triu",
        "triu_",
        # selection by mask
        "masked_fill",
        "masked_fill_",
        "where",
    }
)

_view_copy = getattr(torch.Tag, "view_copy", None)
_inplace_view = getattr(torch.Tag, "inplace_view", None)


def is_zero_flop(func: Any) -> bool:
    """Whether an aten op does no arithmetic by nature: a view, an in-place view, a copy,
    a factory, or an op that moves, gathers, concatenates, pads or selects data."""
    packet = getattr(func, "_overloadpacket", None)
    name = getattr(packet, "__name__", "") or getattr(func, "__name__", "")
    if name in ZERO_FLOP_OPS:
        return True
    if getattr(func, "is_view", False):
        return True
    tags = getattr(func, "tags", ())
    return (_inplace_view is not None and _inplace_view in tags) or (_view_copy is not None and _view_copy in tags)


def op_key(func: Any) -> str:
    """The name an op is reported under: ``aten.add`` (its overload packet)."""
    packet = getattr(func, "_overloadpacket", func)
    return str(packet)

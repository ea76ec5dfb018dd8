"""FLOPs per recorded op, counted by PyTorch's own formulas.

:class:`OpFlops` is a ``TorchDispatchMode`` (it sees every aten op) that counts FLOPs
exactly as ``torch.utils.flop_counter.FlopCounterMode`` does (same formula registry,
same decomposition of ops that have no formula) and attributes them to a *key* the
caller sets before each call: the recorder sets ``counter.current`` to the id of the
FunctionNode it is about to run, so the FLOPs of every aten op that torch function ran
land on that node.  No FLOP table is written here: formulas come from
``torch.utils.flop_counter.flop_registry`` (including anything registered with
``register_flop_formula``), plus :data:`EXTRA_FORMULAS`, torch's own formulas mapped to
the CPU kernels of ``scaled_dot_product_attention`` that torch leaves out (without them
``F.scaled_dot_product_attention`` costs 0 FLOPs on the CPU but its full cost on meta
and CUDA).

An aten op without a formula is either zero-FLOP by nature (views, reshapes, copies,
concatenation, indexing and gathering, masking and selection, padding, factories: see
:func:`is_zero_flop`) or *uncounted*: its arithmetic is real but torch has no formula
for it (elementwise ``add``/``mul``/``gelu``, ``softmax``, norms, reductions...).
Uncounted ops are reported per key by name and number of calls (``counter.uncounted``),
so a table can say "12 ops not counted" rather than pretend they cost nothing.

It works on any device, ``meta`` included (formulas read shapes only).  It composes with
the recorder's ``TorchFunctionMode``: function modes run first (Python level), and the
aten ops the recorded call dispatches reach this mode underneath.

Meta replay: when the recorder replays a cached op on meta it does not run it, so this
mode sees nothing of it (the replay's own ``empty_strided``/``as_strided`` are zero-FLOP
and not reported).  The recorder therefore stores the op's cost in its replay template,
read right after the op first ran::

    cost = counter.cost_of(fid)          # (flops, {op name: calls}) of that key
    ...
    counter.add(new_fid, *cost)          # when replaying the template for a new node

Example::

    counter = OpFlops()
    with counter:
        counter.current = "fc1"
        h = fc1(x)
        counter.current = None           # ops outside any key are kept under None
    counter.flops == {"fc1": 2 * batch * in_features * out_features}
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

import torch
from torch.utils import flop_counter as _fc
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["EXTRA_FORMULAS", "OpFlops", "is_zero_flop", "op_key"]

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
        ("_scaled_dot_product_fused_attention_overrideable_backward", aten._scaled_dot_product_flash_attention_backward),
    )
    out: dict[Any, Any] = {}
    for name, like in pairs:
        packet = getattr(aten, name, None)
        if packet is None or packet in reg or like not in reg:
            continue
        out[packet] = _raw(reg[like])
    return out


#: torch's own formulas for ops torch's registry leaves out (raw shape formulas, in the
#: form ``FlopCounterMode(custom_mapping=...)`` takes): the CPU kernels of
#: ``scaled_dot_product_attention`` get the formula of the CUDA flash kernel.
EXTRA_FORMULAS: dict[Any, Any] = _extra_formulas()


def _wrap(formula: Any) -> Any:
    return formula if getattr(formula, "_get_raw", False) else _fc.shape_wrapper(formula)


# ops FlopCounterMode hands back untouched (size/stride queries of nested tensors)
_SKIP = frozenset(
    getattr(getattr(aten, name), overload)
    for name, overload in (
        ("sym_is_contiguous", "default"), ("is_contiguous", "default"), ("is_contiguous", "memory_format"),
        ("is_strides_like_format", "default"), ("is_non_overlapping_and_dense", "default"),
        ("size", "default"), ("sym_size", "default"), ("stride", "default"), ("sym_stride", "default"),
        ("storage_offset", "default"), ("sym_storage_offset", "default"), ("numel", "default"),
        ("sym_numel", "default"), ("dim", "default"),
    )
    if hasattr(aten, name) and hasattr(getattr(aten, name), overload)
) | {torch.ops.prim.layout.default}
_PRIM_DEVICE = torch.ops.prim.device.default

#: aten ops (by packet name) that move, copy, select or create data without arithmetic;
#: views and in-place views are recognised from their schema and need not be listed
ZERO_FLOP_OPS = frozenset({
    # factories
    "empty", "empty_strided", "empty_like", "empty_permuted", "zeros", "zeros_like", "ones", "ones_like",
    "full", "full_like", "scalar_tensor", "arange", "eye", "linspace", "logspace", "tril_indices",
    "triu_indices", "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full",
    "rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm",
    "normal", "normal_", "uniform_", "random_", "bernoulli", "bernoulli_", "lift", "lift_fresh",
    "lift_fresh_copy", "_efficientzerotensor",
    # copies, conversions, layout
    "clone", "copy", "copy_", "_to_copy", "_copy_from", "_copy_from_and_resize", "contiguous",
    "_unsafe_view", "_reshape_alias", "reshape", "view_as_real", "view_as_complex",
    "resize_", "resize_as_", "set_", "_local_scalar_dense", "_assert_async", "_assert_scalar",
    "_assert_tensor_metadata", "_functional_assert_async", "detach_", "fill", "fill_", "zero_",
    # gather, concatenate, rearrange
    "cat", "stack", "hstack", "vstack", "concat", "concatenate", "repeat", "repeat_interleave", "tile",
    "flip", "roll", "rot90", "constant_pad_nd", "pad", "reflection_pad1d", "reflection_pad2d",
    "reflection_pad3d", "replication_pad1d", "replication_pad2d", "replication_pad3d",
    "index", "_unsafe_index", "index_select", "gather", "take", "take_along_dim", "embedding",
    "index_put", "index_put_", "_index_put_impl_", "_unsafe_index_put", "index_copy", "index_copy_",
    "index_fill", "index_fill_", "scatter", "scatter_", "masked_select", "masked_scatter",
    "masked_scatter_", "slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter",
    "im2col", "col2im", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
    "nonzero", "nonzero_static", "tril", "tril_", "triu", "triu_",
    # selection by mask
    "masked_fill", "masked_fill_", "where",
})

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


Key = Hashable


class OpFlops(TorchDispatchMode):
    """Count FLOPs per key, with torch's formulas; see the module docstring.

    ``flops[key]`` is the FLOPs of the aten ops run while ``current`` was ``key`` (a key
    appears once an op with a formula ran under it, possibly with 0 FLOPs);
    ``uncounted[key]`` maps the names of ops without a formula that are not zero-FLOP by
    nature to how often they ran.  ``custom_mapping`` adds or overrides formulas (raw
    shape formulas, as for ``FlopCounterMode``); ``extra_formulas=False`` leaves out
    :data:`EXTRA_FORMULAS`, making the counts those of a plain ``FlopCounterMode``.
    """

    supports_higher_order_operators = True

    def __init__(self, custom_mapping: Mapping[Any, Any] | None = None, *, extra_formulas: bool = True) -> None:
        super().__init__()
        self.registry: dict[Any, Callable[..., int]] = dict(_fc.flop_registry)
        extras: dict[Any, Any] = dict(EXTRA_FORMULAS) if extra_formulas else {}
        extras.update(custom_mapping or {})
        self.registry.update({k: _wrap(v) for k, v in extras.items()})
        #: the key FLOPs are attributed to now (the recorder sets it per FunctionNode)
        self.current: Key = None
        self.flops: dict[Key, int] = {}
        self.uncounted: dict[Key, dict[str, int]] = {}
        # per OpOverload: None (has a formula), True (zero-FLOP), False (uncounted)
        self._kind: dict[Any, bool | None] = {}

    # -- results -------------------------------------------------------------------
    @property
    def total(self) -> int:
        """All FLOPs counted, over every key (``None`` included)."""
        return sum(self.flops.values())

    def uncounted_total(self, keys: Iterable[Key] | None = None) -> int:
        """How many op calls were not counted (under ``keys``, or anywhere)."""
        ks = self.uncounted.keys() if keys is None else keys
        return sum(sum(self.uncounted.get(k, {}).values()) for k in ks)

    def cost_of(self, key: Key) -> tuple[int, dict[str, int]]:
        """``(flops, {op name: calls not counted})`` of one key: what the recorder stores in
        a meta-replay template right after the op first ran."""
        return self.flops.get(key, 0), dict(self.uncounted.get(key, {}))

    def add(self, key: Key, flops: int, uncounted: Mapping[str, int] | None = None) -> None:
        """Attribute ``flops`` (and uncounted op calls) to ``key`` without running anything:
        for an op the recorder replayed instead of running."""
        self.flops[key] = self.flops.get(key, 0) + flops
        if uncounted:
            u = self.uncounted.setdefault(key, {})
            for name, n in uncounted.items():
                u[name] = u.get(name, 0) + n

    def reset(self) -> None:
        self.flops.clear()
        self.uncounted.clear()
        self.current = None

    # -- the mode --------------------------------------------------------------------
    def _classify(self, func: Any) -> bool | None:
        kind: bool | None
        if func is _PRIM_DEVICE:  # a query FlopCounterMode neither decomposes nor counts
            kind = True
        elif func._overloadpacket in self.registry:
            kind = None
        else:
            kind = is_zero_flop(func)
        self._kind[func] = kind
        return kind

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs if kwargs else {}
        if func in _SKIP:
            return NotImplemented
        if isinstance(func, torch._ops.HigherOrderOperator):
            return self._higher_order(func, args, kwargs)
        try:
            kind = self._kind[func]
        except KeyError:
            kind = self._classify(func)
        if kind is True:  # nothing to count, in it or in what it decomposes into
            return func(*args, **kwargs)
        # as FlopCounterMode: try to decompose (ops without a CompositeImplicit kernel
        # answer NotImplemented), so the ops a composite op is made of are counted
        with self:
            r = func.decompose(*args, **kwargs)
        if r is not NotImplemented:
            return r
        out = func(*args, **kwargs)
        key = self.current
        if kind is None:
            n = self.registry[func._overloadpacket](*args, **kwargs, out_val=out)
            self.flops[key] = self.flops.get(key, 0) + n
        else:
            u = self.uncounted.setdefault(key, {})
            name = op_key(func)
            u[name] = u.get(name, 0) + 1
        return out

    def _higher_order(self, func: Any, args: Any, kwargs: Any) -> Any:
        # higher-order ops (torch.cond, flex_attention...) run below this mode, so the ops
        # of their bodies are not counted on top; one with a formula is counted by it,
        # the others are reported as uncounted (FlopCounterMode takes the max of cond's
        # branches; we do not run both)
        out = func(*args, **kwargs)
        key = self.current
        formula = self.registry.get(func)
        if formula is not None:
            self.flops[key] = self.flops.get(key, 0) + formula(*args, **kwargs, out_val=out)
        else:
            u = self.uncounted.setdefault(key, {})
            name = str(getattr(func, "name", lambda: func)())
            u[name] = u.get(name, 0) + 1
        return out

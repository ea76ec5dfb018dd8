"""FLOPs per recorded op, counted by PyTorch's own formulas.

:class:`OpFlops` is a ``TorchDispatchMode`` (it sees every aten op) that counts FLOPs
exactly as ``torch.utils.flop_counter.FlopCounterMode`` does (same formula registry,
same decomposition of ops that have no formula) and attributes them to a *key* the
caller sets before each call: the recorder sets ``counter.current`` to the id of the
FunctionNode it is about to run, so the FLOPs of every aten op that torch function ran
land on that node.  Formulas come from ``torch.utils.flop_counter.flop_registry``
(including anything registered with ``register_flop_formula``), plus
:data:`EXTRA_FORMULAS` for CPU kernels torch leaves out, which fuse what torch counts
elsewhere: ``scaled_dot_product_attention``'s (torch's formula of the CUDA flash kernel)
and the LSTM's oneDNN layer (the matrix products of its step-by-step decomposition).
Without them attention and LSTMs cost 0 FLOPs on the CPU but their full cost on meta.

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
from types import MappingProxyType
from typing import Any

import torch
from torch.fx.experimental import symbolic_shapes as _symbolic_shapes
from torch.utils import flop_counter as _fc
from torch.utils._python_dispatch import TorchDispatchMode

from .formulas import EXTRA_FORMULAS
from .optable import _PRIM_DEVICE, _SKIP, is_zero_flop, op_key

__all__ = ["EXTRA_FORMULAS", "OpFlops", "is_zero_flop", "op_key"]

aten = torch.ops.aten


def _wrap(formula: Any) -> Any:
    return formula if getattr(formula, "_get_raw", False) else _fc.shape_wrapper(formula)


#: the code of every function ``shape_wrapper`` makes (to find the shape formula inside)
_SHAPE_WRAPPER_CODE = _fc.shape_wrapper(lambda *a, **k: 0).__code__
_LEAVES = frozenset({int, float, bool, str, type(None), torch.dtype, torch.device, torch.layout, torch.memory_format})


class _Slow(Exception):
    """A value the fast shape mapping does not take (``tree_map`` does it instead)."""


def _shape_of(x: Any, seq: Any = None) -> Any:
    """What ``shape_wrapper``'s ``tree_map(get_shape, x)`` gives, for tensors, plain
    values and (nested) lists and tuples of them, without pytree's generic machinery;
    with ``seq=tuple`` lists made tuples: a hashable description of an argument for the
    formula cache (within one op overload the schema fixes each argument's kind, so a
    shape and a tuple of ints in one position cannot both occur)."""
    if isinstance(x, torch.Tensor):
        return x.shape
    t = type(x)
    if t in _LEAVES:
        return x
    if t is list or t is tuple:
        return (seq or t)(_shape_of(i, seq) for i in x)
    raise _Slow


def _count(formula: Any, args: Any, kwargs: dict[str, Any], out: Any) -> int:
    """``formula(*args, **kwargs, out_val=out)``: a shape formula is called on the shapes
    directly (the same call ``shape_wrapper`` makes, several times faster)."""
    if getattr(formula, "__code__", None) is _SHAPE_WRAPPER_CODE:
        try:
            shapes = _shape_of(args)
            kw = {k: _shape_of(v) for k, v in kwargs.items()}
            out_shape = _shape_of(out)
        except _Slow:
            pass
        else:
            return int(formula.__wrapped__(*shapes, out_shape=out_shape, **kw))
    return int(formula(*args, **kwargs, out_val=out))


_CIA = torch._C.DispatchKey.CompositeImplicitAutograd
#: what a size that depends on tensor values raises when made an int (``device="fake"``)
DATA_DEPENDENT: type[Exception] = getattr(_symbolic_shapes, "GuardOnDataDependentSymNode", RuntimeError)


def _has_composite(func: Any) -> bool:
    """Whether ``func.decompose(...)`` can do anything (what it checks, asked once)."""
    if _CIA in getattr(func, "py_kernels", {}):
        return True
    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), _CIA))
    except Exception:  # noqa: BLE001 - not an ordinary OpOverload: let decompose() decide
        return True


# ops FlopCounterMode hands back untouched (size/stride queries of nested tensors)
Key = Hashable
_NONE_UNCOUNTED: Mapping[str, int] = MappingProxyType({})


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
        self._composite: dict[Any, bool] = {}  # per OpOverload: whether decompose() can work
        self._names: dict[Any, str] = {}
        # (op, argument shapes and values, result shapes) -> FLOPs of a shape formula: the
        # formulas read nothing else, and torch's call them through pytree (tens of µs)
        self._counted: dict[Any, int] = {}

    # -- results -------------------------------------------------------------------
    @property
    def total(self) -> int:
        """All FLOPs counted, over every key (``None`` included)."""
        return sum(self.flops.values())

    def uncounted_total(self, keys: Iterable[Key] | None = None) -> int:
        """How many op calls were not counted (under ``keys``, or anywhere)."""
        ks = self.uncounted.keys() if keys is None else keys
        return sum(sum(self.uncounted.get(k, {}).values()) for k in ks)

    def cost_of(self, key: Key) -> tuple[int, Mapping[str, int]]:
        """``(flops, {op name: calls not counted})`` of one key: what the recorder stores in
        a meta-replay template right after the op first ran (a copy; one read-only empty
        mapping for the many keys without uncounted calls)."""
        u = self.uncounted.get(key)
        return self.flops.get(key, 0), dict(u) if u else _NONE_UNCOUNTED

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
    def run(self, func: Any, args: Any, kwargs: Any) -> Any:
        """Run one aten op (below autograd); a subclass may produce its result otherwise."""
        return func(*args, **kwargs)

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
            return self.run(func, args, kwargs)
        # as FlopCounterMode: decompose an op that has a CompositeImplicit kernel, so the
        # ops it is made of are counted (asked once per op: most have none)
        composite = self._composite.get(func)
        if composite is None:
            composite = self._composite[func] = _has_composite(func)
        if composite:
            with self:
                r = func.decompose(*args, **kwargs)
            if r is not NotImplemented:
                return r
        out = self.run(func, args, kwargs)
        key = self.current
        if kind is None:
            try:
                n = self._count(func, args, kwargs, out)
            except DATA_DEPENDENT:  # a size that depends on values (fake tensors): not counted
                self._uncounted(key, op_key(func) + " (data-dependent size)")
            else:
                self.flops[key] = self.flops.get(key, 0) + n
            return out
        name = self._names.get(func)
        if name is None:
            name = self._names[func] = op_key(func)
        self._uncounted(key, name)
        return out

    def _count(self, func: Any, args: Any, kwargs: dict[str, Any], out: Any) -> int:
        """FLOPs of one call of ``func`` (a formula's result is cached by the shapes and
        values it reads; a raw formula, which may read more, is called each time)."""
        formula = self.registry[func._overloadpacket]
        if getattr(formula, "__code__", None) is not _SHAPE_WRAPPER_CODE:
            return _count(formula, args, kwargs, out)
        try:
            sig = (
                func,
                _shape_of(args, tuple),
                tuple((k, _shape_of(v, tuple)) for k, v in kwargs.items()),
                _shape_of(out, tuple),
            )
            n = self._counted.get(sig)
        except (_Slow, TypeError):  # not a plain value: uncached
            return _count(formula, args, kwargs, out)
        if n is None:
            n = self._counted[sig] = _count(formula, args, kwargs, out)
        return n

    def _uncounted(self, key: Key, name: str) -> None:
        u = self.uncounted.get(key)
        if u is None:
            u = self.uncounted[key] = {}
        u[name] = u.get(name, 0) + 1

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

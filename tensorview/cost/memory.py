"""Bytes of the tensors autograd saves for backward, per key.

:class:`SavedTensors` installs ``torch.autograd.graph.saved_tensors_hooks`` for a
grad-enabled forward.  Its pack hook sees every tensor an autograd node saves (including
``ctx.save_for_backward`` of custom Functions) and files the tensor's *storage* under the
key the caller set (``saved.current``, the id of the FunctionNode the recorder is running,
as for :class:`~tensorview.cost.flops.OpFlops`).  The hooks hand the tensor back
unchanged, so the forward and its backward are untouched.

What is counted, and "once":

* the unit is the **storage**, with its full size: a saved view keeps its whole storage
  alive, and views of one storage count once;
* per key, a storage counts once however often it is saved (``x`` saved twice by one
  op); :meth:`SavedTensors.bytes_of` counts a storage once over a set of keys (a module
  call), and :attr:`SavedTensors.total` once over the whole forward (the tensor two ops
  save, such as the input of a Linear that a residual add also keeps, is one tensor);
* storages of the model's parameters and buffers (a Linear saves its weight) are not
  activation memory, as they exist anyway: they are kept apart in ``param_storages`` and
  left out of every activation figure.  Pass the model (or its tensors) as ``params``;
  without it only ``nn.Parameter`` objects and views of them are recognised.  Inputs of
  the forward that are saved (the batch a first Linear keeps) count as activations.

Byte counts come from the storage size (``untyped_storage().nbytes()``), so they need no
data and are the same on ``meta`` as on a real device when the same kernels run.  One
kernel choice differs: ``F.scaled_dot_product_attention`` on meta takes the composite
"math" path, which saves the attention weights (``batch x heads x seq x seq``), while the
CPU (and CUDA) run a fused kernel that saves the output and a log-sum-exp only; for long
sequences that is the largest term of training memory.  :func:`sdpa_as_on_cpu` runs the
CPU's fused kernel on meta when the CPU would use it (its meta kernel exists), so saved
bytes on meta equal the CPU's; :class:`CPUAttentionOnMeta` applies it to a plain forward.
The recorder calls its ops with torch-function modes disabled, so it must swap the
function itself (see ``tensorview/cost/__init__.py``).

Meta replay needs nothing: the recorder never replays an op whose argument requires grad
in grad mode, and an op none of whose arguments requires grad saves nothing.

A storage is identified by the address of its ``StorageImpl`` (``_cdata``).  While the
hooks are active every storage saved is referenced (so that no storage freed mid-forward
can hand its address to another and be mistaken for it); :meth:`__exit__` drops the
references and keeps integer ids and sizes only.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

import torch
from torch import nn

from ..recording.placement import preorder
from .attention import ON_META, CPUAttentionOnMeta, sdpa_as_on_cpu

__all__ = [
    "CPUAttentionOnMeta",
    "ON_META",
    "SavedTensors",
    "dtype_size",
    "sdpa_as_on_cpu",
    "storage_nbytes",
    "tensor_nbytes",
]

Key = Hashable


def dtype_size(dtype: torch.dtype | str) -> int:
    """Bytes per element of a dtype, given as a ``torch.dtype`` or by name (``"float32"``,
    ``"torch.bfloat16"``: the graph's TensorNode.dtype)."""
    if isinstance(dtype, str):
        dt = getattr(torch, dtype.replace("torch.", ""), None)
        if not isinstance(dt, torch.dtype):
            raise ValueError(f"not a torch dtype: {dtype!r}")
        dtype = dt
    size = getattr(dtype, "itemsize", None)
    if size is None:  # pragma: no cover - torch < 2.1
        size = torch.empty((), dtype=dtype, device="meta").element_size()
    return int(size)


def tensor_nbytes(shape: Iterable[int], dtype: torch.dtype | str) -> int:
    """Bytes of a dense tensor of that shape and dtype (an output's activation memory)."""
    n = 1
    for s in shape:
        n *= int(s)
    return n * dtype_size(dtype)


def storage_nbytes(t: torch.Tensor) -> int:
    """Bytes of the storage behind ``t`` (its own elements when it has no plain storage;
    0 when its size depends on tensor values, as on ``device="fake"``)."""
    try:
        return int(t.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError, TypeError):  # sparse, nested, some subclasses
        pass
    try:
        return int(t.numel() * t.element_size())
    except RuntimeError:  # a size that depends on values (fake tensors): not counted
        return 0


#: tensor type -> whether it is a Parameter type (learnt on use)
_PARAMETER_TYPE: dict[type, bool] = {}


def _parameter(t: Any) -> bool:
    """``isinstance(t, nn.Parameter)`` for a tensor, without the metaclass's Python check
    (a Parameter type, or a tensor marked ``_is_param``: what that check reads)."""
    tp = type(t)
    known = _PARAMETER_TYPE.get(tp)
    if known is None:
        known = _PARAMETER_TYPE[tp] = issubclass(tp, nn.Parameter)
    return known or bool(getattr(t, "_is_param", False))


_PLAIN_DISPATCH = torch.Tensor.__torch_dispatch__
_NO_DISPATCH = torch._C._DisableTorchDispatch
_NO_FUNCTION = torch._C.DisableTorchFunction
#: whether torch functions are all switched off (torch >= 2.2; before, never known)
_function_off = getattr(torch._C, "_is_torch_function_all_disabled", lambda: False)
_dispatch_modes = torch._C._len_torch_dispatch_stack
_Tensor = torch.Tensor


def _tensors_of(model: nn.Module) -> list[torch.Tensor]:
    """The parameters and buffers of ``model``'s tree, each module once, without the
    generators of ``parameters()`` and ``buffers()`` (a tensor held under two names is
    listed twice)."""
    return [t for m in preorder(model) for t in (*m._parameters.values(), *m._buffers.values()) if t is not None]


class SavedTensors:
    """Record the bytes autograd saves for backward, per key; see the module docstring.

    Use around a grad-enabled forward::

        saved = SavedTensors(model)
        with saved:
            saved.current = node_id      # before each recorded call; None outside
            ...
        saved.saved_bytes                # {key: activation bytes saved under it}
        saved.total                      # every saved storage once, parameters excluded
    """

    def __init__(self, params: nn.Module | Iterable[torch.Tensor] | None = None) -> None:
        tensors = _tensors_of(params) if isinstance(params, nn.Module) else list(params or ())
        self._param_cdata: set[int] = set()
        for t in tensors:
            try:  # (the address of its storage, module docstring)
                cd = t.untyped_storage()._cdata
            except (RuntimeError, NotImplementedError, TypeError):
                cd = -id(t)
            self._param_cdata.add(cd)
        self._params = tensors  # keeps their storages (and so the addresses) alive
        #: the key saved tensors are filed under now
        self.current: Key = None
        self._storages: dict[Key, dict[int, int]] = {}
        self._param_storages: dict[Key, dict[int, int]] = {}
        # (key, storage id, bytes, a parameter's) per tensor saved, filed in the tables on
        # the first read (one loop, not a filing per tensor while the forward runs)
        self._pending: list[tuple[Key, int, int, bool]] = []
        self._alive: list[Any] = []  # every storage saved, while active
        self._hooks: Any = None
        self._pack_hook: Any = None  # the pack hook pushed (one bound method: savedops.py finds it on top)

    @property
    def storages(self) -> dict[Key, dict[int, int]]:
        """``{key: {storage id (its address, module docstring): bytes}}``: the activation
        storages saved under each key."""
        if self._pending:
            self._file()
        return self._storages

    @property
    def param_storages(self) -> dict[Key, dict[int, int]]:
        """``{key: {storage id: bytes}}``: the parameter and buffer storages saved under each key."""
        if self._pending:
            self._file()
        return self._param_storages

    def _file(self) -> None:
        pending, self._pending = self._pending, []
        activations, params = self._storages, self._param_storages
        for key, cdata, nbytes, param in pending:
            table = params if param else activations
            per_key = table.get(key)
            if per_key is None:
                per_key = table[key] = {}
            per_key[cdata] = nbytes

    # -- results ---------------------------------------------------------------------
    @property
    def saved_bytes(self) -> dict[Key, int]:
        """Activation bytes saved under each key (each storage once per key)."""
        return {k: sum(v.values()) for k, v in self.storages.items()}

    def bytes_of(self, keys: Iterable[Key]) -> int:
        """Activation bytes saved under any of ``keys``, each storage once (a module call)."""
        seen: dict[int, int] = {}
        for k in keys:
            seen.update(self.storages.get(k, {}))
        return sum(seen.values())

    @property
    def total(self) -> int:
        """Activation bytes saved in the whole forward, each storage once."""
        return self.bytes_of(self.storages)

    @property
    def param_total(self) -> int:
        """Bytes of parameter/buffer storages autograd saved (not activation memory)."""
        seen: dict[int, int] = {}
        for v in self.param_storages.values():
            seen.update(v)
        return sum(seen.values())

    # -- hooks -------------------------------------------------------------------------
    def _pack(self, t: torch.Tensor, off: bool = False) -> torch.Tensor:
        if not (off or _function_off()):  # plain reads, also for tensor subclasses (the
            with _NO_FUNCTION():  # recorder runs its ops so: then the switch is not needed)
                return self._pack(t, True)
        obj: Any
        try:  # its storage's address (module docstring) and storage_nbytes, reading it once
            obj = t.untyped_storage()
            cdata = obj._cdata
        except (RuntimeError, NotImplementedError, TypeError):
            cdata, obj = -id(t), t
        try:
            nbytes = int(obj.nbytes()) if obj is not t else storage_nbytes(t)
        except (RuntimeError, NotImplementedError, TypeError):
            nbytes = storage_nbytes(t)
        self._alive.append(obj)  # (its address stays its own while the hooks are active)
        # a parameter's or buffer's storage, a parameter, a view of one (``_parameter`` written out)
        param = cdata in self._param_cdata
        if not param:
            tp = type(t)
            known = _PARAMETER_TYPE.get(tp)
            if known is None:
                known = _PARAMETER_TYPE[tp] = issubclass(tp, nn.Parameter)
            param = known or bool(getattr(t, "_is_param", False)) or (t._is_view() and _parameter(t._base))
        self._pending.append((self.current, cdata, nbytes, param))
        # a detached alias (autograd's default): a saved output ``t`` itself would hold its
        # own grad_fn, a cycle through C++ that the garbage collector cannot see.  A plain
        # tensor is detached below the dispatch modes where there are some (the FLOP
        # counter would only see a zero-FLOP op it ignores); a tensor subclass with its own
        # dispatch (fake tensors) through them
        if _dispatch_modes() and type(t).__torch_dispatch__ is _PLAIN_DISPATCH:
            with _NO_DISPATCH():
                return t.detach()
        return t.detach()

    @staticmethod
    def _unpack(t: torch.Tensor) -> torch.Tensor:
        return t

    def __enter__(self) -> SavedTensors:
        self._pack_hook = self._pack
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack_hook, self._unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        hooks, self._hooks = self._hooks, None
        if hooks is not None:
            hooks.__exit__(*exc)
        self._alive.clear()

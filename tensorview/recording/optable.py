"""What the recorder knows about torch functions and tensors: which functions make new
tensors (factories), which only ask questions (queries), and small cached readers of
tensor metadata.  No recording state lives here."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .inference import ACTIVE as _INFERENCE
from .inference import bump_inference, inference_version, storage_id
from .tensor import RecorderTensor

_Tensor = torch.Tensor
_increment_version = torch.autograd.graph.increment_version
#: types whose instances the recorder may re-wrap as plain ``RecorderTensor`` aliases
PLAIN_TYPES = (torch.Tensor, RecorderTensor, nn.Parameter)

# factory functions: the ones torch.device(...) as a context manager also redirects
try:
    from torch.utils._device import _device_constructors

    DEVICE_FACTORIES: frozenset[Any] = frozenset(_device_constructors())
except Exception:  # pragma: no cover - older torch
    DEVICE_FACTORIES = frozenset(
        getattr(torch, n)
        for n in (
            "zeros",
            "ones",
            "full",
            "empty",
            "arange",
            "range",
            "eye",
            "linspace",
            "logspace",
            "rand",
            "randn",
            "randint",
            "randperm",
            "tensor",
            "as_tensor",
            "scalar_tensor",
        )
        if hasattr(torch, n)
    )
LIKE_FACTORIES = frozenset(
    f
    for f in (
        torch.zeros_like,
        torch.ones_like,
        torch.full_like,
        torch.empty_like,
        torch.rand_like,
        torch.randn_like,
        torch.randint_like,
        _Tensor.new_zeros,
        _Tensor.new_ones,
        _Tensor.new_full,
        _Tensor.new_empty,
        _Tensor.new_tensor,
    )
)
#: factories whose result is data written in the code (``torch.tensor([1, 2])``)
CONSTANT_FACTORIES = frozenset(
    getattr(torch, n) for n in ("tensor", "as_tensor", "asarray", "scalar_tensor") if hasattr(torch, n)
) | {_Tensor.new_tensor}
FACTORIES = DEVICE_FACTORIES | LIKE_FACTORIES

# queries that never produce or mutate tensors: skipped without looking at arguments
_QUERY_METHODS = (
    "size",
    "dim",
    "numel",
    "stride",
    "element_size",
    "is_contiguous",
    "is_floating_point",
    "is_complex",
    "data_ptr",
    "__len__",
    "__bool__",
    "__int__",
    "__float__",
    "__index__",
    "item",
    "tolist",
    "__format__",
    "__repr__",
    "__hash__",
    "storage_offset",
    "get_device",
    "nelement",
    "ndimension",
    "__contains__",
    "__reduce_ex__",
    "__deepcopy__",
    "untyped_storage",
    "is_set_to",
    "is_inference",
    "__array__",
    "numpy",
    "__str__",
    "is_conj",
    "is_neg",
    "is_signed",
    "is_same_size",
    "is_coalesced",
    "is_pinned",
    "is_shared",
    "is_nonzero",
)
#: the same queries as torch functions (``torch.is_floating_point(x)``, as nn.MultiheadAttention
#: asks): a bool or a number, no tensor
_QUERY_FUNCTIONS = (
    "_has_compatible_shallow_copy_type",
    "is_floating_point",
    "is_complex",
    "is_conj",
    "is_neg",
    "is_signed",
    "is_same_size",
    "is_nonzero",
    "is_inference",
    "numel",
)
_QUERY_PROPERTIES = (
    "shape",
    "ndim",
    "dtype",
    "device",
    "is_cuda",
    "is_sparse",
    "requires_grad",
    "is_leaf",
    "layout",
    "_version",
    "_base",
    "grad_fn",
    "is_meta",
    "is_quantized",
    "is_nested",
    "grad",
    "names",
    "is_mps",
    "is_cpu",
    "itemsize",
    "nbytes",
    "_cdata",
)
QUERIES = frozenset(
    [getattr(_Tensor, n) for n in _QUERY_METHODS if hasattr(_Tensor, n)]
    + [getattr(torch, n) for n in _QUERY_FUNCTIONS if hasattr(torch, n)]
    + [getattr(_Tensor, n).__get__ for n in _QUERY_PROPERTIES if hasattr(getattr(_Tensor, n, None), "__get__")]
)
#: queries whose answer mentions the tensor's type (``RecorderTensor(0)``): asked of a plain alias
AS_PLAIN = frozenset(getattr(_Tensor, n) for n in ("__format__", "__repr__", "__str__") if hasattr(_Tensor, n))
#: ``t.data`` and ``t.data = x``: an alias with a version counter of its own, and a
#: replacement of ``t``'s contents that moves no version counter (opcalls.py)
_DATA: Any = vars(torch._C.TensorBase)["data"]
DATA_GET, DATA_SET = _DATA.__get__, _DATA.__set__
DATA_ACCESS = frozenset({DATA_GET, DATA_SET})

#: attributes every nn.Module has (hooks, parameter dicts...): never holds recorded tensors
MODULE_ATTRS = frozenset(nn.Module().__dict__)
#: how a tensor's model role is named in the graph
PARAM_ROLE, BUFFER_ROLE = "parameter", "buffer"

DTYPE_NAMES: dict[Any, str] = {}
DEVICE_NAMES: dict[Any, str] = {}


def dtype_name(dt: Any) -> str:
    s = DTYPE_NAMES.get(dt)
    if s is None:
        s = DTYPE_NAMES[dt] = str(dt).replace("torch.", "")
    return s


def device_name(dev: Any) -> str:
    s = DEVICE_NAMES.get(dev)
    if s is None:
        s = DEVICE_NAMES[dev] = str(dev)
    return s


def version(t: torch.Tensor) -> int:
    """``t``'s version counter; for an inference tensor, which has none, the writes the
    recording saw to its storage (inference.py)."""
    if _INFERENCE and t.is_inference():  # only while a recording meets inference tensors
        return inference_version(t)
    try:
        return t._version
    except RuntimeError:  # an inference tensor, the first one the recording meets
        return inference_version(t)


def bump_version(t: torch.Tensor) -> None:
    """Count one more write to ``t`` (as an in-place op would)."""
    if t.is_inference():
        bump_inference(t)
    else:
        _increment_version(t)


def shape_of(t: torch.Tensor) -> tuple[int, ...]:
    try:
        return tuple(t.shape)
    except RuntimeError:  # nested tensors have no single shape
        return ()


def storage_key(t: torch.Tensor, inference: bool) -> tuple[int, Any]:
    """(key, object keeping the key valid) of ``t``'s storage: the tensor owning it, or,
    for an inference tensor (no ``_base``) once a recording meets them, the storage's id."""
    if inference and t.is_inference():
        return storage_id(t) or 0, None
    owner = storage_owner(t)
    return id(owner), owner


def symbolic_shape(shape: tuple[Any, ...]) -> tuple[int | str, ...]:
    """A shape with symbolic sizes (``SymInt``, from fake tensors with a ``ShapeEnv``):
    sizes known to be constant as ints, the others as their expression (``u0``, ``u0//3``)."""
    dims: list[int | str] = []
    for d in shape:
        if isinstance(d, int):
            dims.append(d)
            continue
        known = d.node.maybe_as_int()
        if known is not None:
            dims.append(int(known))
            continue
        text = str(d)
        if text.startswith("(") and text.endswith(")") and text.count("(") == 1:
            text = text[1:-1]  # "(u0//3)" -> "u0//3"
        dims.append(text)
    return tuple(dims)


def storage_owner(t: torch.Tensor) -> torch.Tensor:
    """The tensor that owns the storage of ``t`` (torch collapses view chains)."""
    b = t._base
    return t if b is None else b

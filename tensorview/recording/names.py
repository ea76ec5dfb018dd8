"""Display names of torch functions: ``add``, ``getitem``, ``add_`` for ``x += y``, ``T``."""

from __future__ import annotations

from typing import Any

_INPLACE_DUNDERS = {
    "iadd",
    "isub",
    "imul",
    "itruediv",
    "ifloordiv",
    "imod",
    "ipow",
    "imatmul",
    "iand",
    "ior",
    "ixor",
    "ilshift",
    "irshift",
    "idiv",
}
_REFLECTED_DUNDERS = {
    "radd",
    "rsub",
    "rmul",
    "rtruediv",
    "rfloordiv",
    "rmod",
    "rpow",
    "rmatmul",
    "rand",
    "ror",
    "rxor",
    "rlshift",
    "rrshift",
    "rdiv",
}
#: op -> display name, filled by ``op_name`` (read directly on the per-op hot path)
OP_NAMES: dict[Any, str] = {}


def op_name(func: Any) -> str:
    name = OP_NAMES.get(func)
    if name is None:
        name = OP_NAMES[func] = _compute(func)
    return name


def _compute(func: Any) -> str:
    opname = getattr(func, "_opname", None)  # an aten OpOverload (``aten.linear.default``):
    if isinstance(opname, str) and opname and hasattr(func, "overloadpacket"):  # ``linear``,
        return clean_name(opname)  # as the importers name it (a GraphModule of aten ops run)
    name = getattr(func, "__name__", None)
    if not isinstance(name, str) or not name:
        # a TorchScript method: a deep copy of a scripted module (draw_graph's copy) has
        # methods without __name__, but with their name (``forward``)
        given = getattr(func, "name", None)
        name = given if isinstance(given, str) and given else type(func).__name__
    if name in ("__get__", "__set__"):
        try:
            from torch.overrides import resolve_name

            full = resolve_name(func) or ""
            name = full.rsplit(".", 2)[-2] if full.count(".") >= 2 else name
        except Exception:
            name = "getattr"
    return clean_name(name)


def clean_name(name: str) -> str:
    """The display name of an op called ``name``: ``__iadd__`` -> ``add_``, ``__radd__``
    -> ``add``, ``__and__`` -> ``and``."""
    if name.startswith("__") and name.endswith("__") and len(name) > 4:
        core = name[2:-2]
        if core in _INPLACE_DUNDERS:
            return core[1:] + "_"
        if core in _REFLECTED_DUNDERS:
            return core[1:]
        return core
    return name

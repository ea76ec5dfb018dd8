"""Module paths (one collaborator of the session): the model's modules by the names they
had when recording began, and names found for the others a forward calls."""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from .state import Frame


class ModulePaths:
    """``id(module) -> path`` for one recording."""

    def __init__(self, module_names: dict[int, str]) -> None:
        #: the model's modules, and those found while recording
        self.module_names = module_names
        #: the modules not in the model's tree that were named while recording
        self.found_modules: list[nn.Module] = []

    def known(self, module: nn.Module) -> str | None:
        """The path of ``module`` if it has one yet (never a new one)."""
        return self.module_names.get(id(module))

    def reader(self) -> Callable[[int], str | None]:
        """``id(module) -> path or None``, for the per-call hot path (a dict's ``get``)."""
        return self.module_names.get

    def path(self, module: nn.Module, stack: list[Frame]) -> str:
        """The path of ``module``, called inside the call of ``stack[-1]`` (a name found now
        for a module not in the model's tree when recording began)."""
        name = self.module_names.get(id(module))
        if name is not None:
            return name
        # not in the model's tree when recording began: registered in forward
        # (``self.attn = Attn()``), kept in a plain list/dict, or a local made in forward
        name = _found_path(module, stack)
        self.module_names[id(module)] = name
        self.found_modules.append(module)  # alive while its id is a key: a module made in
        # forward and dropped would hand its id, and so its name, to the next one made
        return name

    def close(self) -> None:
        """The recording ended (idempotent)."""
        self.module_names.clear()
        self.found_modules.clear()


#: the dicts a module keeps its registered children, parameters and buffers in
_REGISTRIES = frozenset({"_modules", "_parameters", "_buffers"})


def _found_path(module: nn.Module, stack: list[Frame]) -> str:
    """The path of a module called inside the call of ``stack[-1]`` that was not in the
    model's tree when recording began: its name where a running call (innermost first)
    or a child of the caller registered it in forward (``self.attn = Attn()``:
    ``block.attn``, not the ``_modules`` dict holding it), else where the caller keeps it
    in a plain attribute, list or dict (``blocks.0``), else its class under the caller
    (``block.ReLU``)."""
    for frame in reversed(stack):
        for k, v in frame.module._modules.items():
            if v is module:
                return _join(frame.node.path, k)
    parent = stack[-1]
    for k, child in parent.module._modules.items():  # ``self.block.attn = Attn()`` in forward
        if child is not None:
            for k2, v in child._modules.items():
                if v is module:
                    return _join(parent.node.path, f"{k}.{k2}")
    for attr, value in vars(parent.module).items():
        if attr in _REGISTRIES:
            continue
        if value is module:
            return _join(parent.node.path, attr)
        if isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                if v is module:
                    return _join(parent.node.path, f"{attr}.{i}")
        elif isinstance(value, dict):
            for k, v in value.items():
                if v is module:
                    return _join(parent.node.path, f"{attr}.{k}")
    return _join(parent.node.path, type(module).__name__)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name

"""Module scope: every ``nn.Module`` call inside the root call becomes a ModuleNode with
its qualified path, entered by edges from its tensor arguments and left by edges to its
results (a result passed through unchanged gets an alias node, so the graph stays
acyclic)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..graph import SOURCE_ROLES, ModuleNode
from .ops import OpRecorder
from .optable import version
from .state import Frame, recorded_alias
from .tensor import RecorderTensor
from .tree import map_tensors

_Disable = torch._C.DisableTorchFunction
_Tensor = torch.Tensor
_RT = RecorderTensor


class ModuleScope(OpRecorder):
    def module_path(self, module: nn.Module) -> str:
        name = self.module_names.get(id(module))
        if name is not None:
            return name
        # not registered (kept in a plain list/dict, or made in forward): find it in the caller
        parent = self.stack[-1]
        prefix = parent.node.path + "." if parent.node.path else ""
        for attr, value in vars(parent.module).items():
            if value is module:
                name = prefix + attr
            elif isinstance(value, (list, tuple)):
                for i, v in enumerate(value):
                    if v is module:
                        name = f"{prefix}{attr}.{i}"
            elif isinstance(value, dict):
                for k, v in value.items():
                    if v is module:
                        name = f"{prefix}{attr}.{k}"
            if name is not None:
                break
        if name is None:
            name = prefix + type(module).__name__
        self.module_names[id(module)] = name
        return name

    def new_module(self, module: nn.Module, path: str, parent: ModuleNode | None) -> ModuleNode:
        cls = type(module)
        return self.builder.add_module(path, cls.__name__, cls.__module__, parent)

    def sub_call(
        self, call: Callable[..., Any], module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        path = self.module_path(module)
        with _Disable():
            m = self.new_module(module, path, self.scope())
            args, kwargs = self._enter_args(m, args, kwargs)
        self.stack.append(Frame(module, m))
        probes = self.probes
        if probes is not None:
            probes.enter_call(m, module)
        try:
            out = call(module, *args, **kwargs)
        except BaseException as e:
            self.builder.fail_call(m)
            self.failed(e, path, "")
            raise
        finally:
            self.stack.pop()
            if probes is not None:
                probes.exit_call(m)
        with _Disable():
            return self.leave(m, out)

    def _enter_args(
        self, m: ModuleNode, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Edges from every tensor argument into the module call; tensors not recorded yet
        (parameters, buffers, constants) become source nodes and enter as RecorderTensors."""
        add_edge = self.builder.add_edge
        token = self.token

        def enter(t: torch.Tensor) -> torch.Tensor:
            node = self.node_of(t)
            add_edge(node.id, m.id)
            if type(t) not in (_Tensor, nn.Parameter) or t.layout != torch.strided:
                return t  # ours already, a stale one (tracked as a source) or another subclass
            return recorded_alias(t, node, token)

        args = tuple(map_tensors(a, enter) for a in args)
        if kwargs:
            kwargs = {k: map_tensors(v, enter) for k, v in kwargs.items()}
        return args, kwargs

    def leave(self, m: ModuleNode, out: Any) -> Any:
        """The call ``m`` returned ``out``: edges to its results, in the caller's scope."""
        b = self.builder
        b.end_call(m)
        parent = self.graph.module(m.parent) if m.parent is not None else m

        token = self.token

        def result(t: torch.Tensor) -> torch.Tensor:
            if (type(t) is _RT and t._tv_tok is token) or id(t) in self.sources:
                node = self.node_of(t)
                if m.id < node.id < m.end and node.role not in SOURCE_ROLES:  # produced inside the call
                    b.add_edge(m.id, node.id)
                    return t
                # passed through unchanged: an alias node standing for the outer tensor
                alias = self.new_tensor(t, m.name + "_out", "intermediate", parent, copy_of=node.id, producer=m.id)
                plain = t.as_subclass(_Tensor) if type(t) is _RT else t
                if type(plain) is _Tensor and plain.layout == torch.strided:
                    return recorded_alias(plain, alias, token)
                if type(t) is not _RT:  # one object (a fake or other foreign tensor): now the alias
                    self.sources[id(t)] = [t, alias, version(t)]
                return t
            # a tensor we never saw: made where we could not look (scripted/C++ module)
            node = self.new_tensor(t, m.name + "_out", "intermediate", parent, producer=m.id)
            return self.bind(t, node)

        return map_tensors(out, result)

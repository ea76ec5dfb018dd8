"""What the session's collaborators share as values, not as state: ``Frame`` (one module
call being executed), ``Settings`` (how a session records), the model's name tables
(``model_names``) and ``recorded_alias``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ..graph import FunctionNode, ModuleNode, Node, TensorNode
from .compiled import optimized_module_type, unwrap
from .optable import (
    BUFFER_ROLE,
    PARAM_ROLE,
    version,
)
from .probes import Probe
from .tensor import RecorderTensor, alias_as, made_by_op


class Frame:
    """One module call being executed (or a method call of a submodule, see methods.py)."""

    __slots__ = ("module", "node", "leaf", "pyframe", "seen", "code", "known", "objects")

    def __init__(self, module: nn.Module, node: ModuleNode, leaf: bool = False, pyframe: Any = None) -> None:
        self.module = module
        self.node = node
        #: a real call of a module without submodules: no method call of a submodule can
        #: start inside it, so ops there skip the look at the Python stack (methods.py)
        self.leaf = leaf
        #: for a method call (``self.enc.embed(x)``): the Python frame running the method
        self.pyframe = pyframe
        #: the innermost Python frame of the last event found to need no change of the stack
        self.seen: Any = None
        #: the code object of the module's ``forward`` (found at the first event inside it)
        self.code: Any = None
        #: ids of the tensor nodes known to be readable in the call without crossing its
        #: boundary again: its arguments, and tensors checked by ``read_late`` (crossings.py)
        self.known: set[int] = set()
        #: objects (not lists, tuples, dicts, dataclasses) were among the arguments: the
        #: call may store results in them (crossings.py)
        self.objects = False


class Failure:
    """Where the exception now propagating through the forward was raised (one collaborator
    of the session: told by the calls and ops it passes, read by the recorder)."""

    def __init__(self) -> None:
        #: (module path, op) where ``exc`` was raised: the innermost place the exception
        #: now propagating passed (an exception the model caught is replaced by the next
        #: one, so the failure named is the one that left the forward)
        self.where: tuple[str, Node | None] | None = None
        self.exc: BaseException | None = None

    def failed(self, exc: BaseException, path: str, op: FunctionNode | None) -> None:
        """``exc`` passes through (module ``path``, op node ``op``, marked failed) while
        propagating."""
        if op is not None:
            op.failed = True
        if self.exc is not exc:  # the first (innermost) place this exception passed
            self.where, self.exc = (path, op), exc

    def place(self) -> tuple[str, Node | None] | None:
        return self.where

    def exception(self) -> BaseException | None:
        return self.exc

    def forget(self) -> None:
        """Handled (or explained): neither the exception nor its frames are kept."""
        self.where = self.exc = None


@dataclass(frozen=True)
class Settings:
    """How a session records (``BaseRecorder``'s keyword arguments, documented there)."""

    device: Any = None
    meta_replay: bool = True
    probes: Sequence[Probe] = ()
    keep_parameters: bool = False


def model_names(model: nn.Module, alive: list[Any] | None = None) -> tuple[dict[int, str], dict[int, tuple[str, str]]]:
    """``id(module) -> qualified name`` and ``id(tensor) -> (qualified name, role)`` for the
    parameters and buffers, the first name of each object in ``named_modules`` order
    (``remove_duplicate=False``), parameters before buffers: one pre-order walk instead of
    ``named_modules``/``named_parameters``/``named_buffers`` (nested generators, each
    O(depth) per module).  ``alive`` gets every object named (whose ids are the keys)."""
    modules: dict[int, str] = {}
    params: dict[int, tuple[str, str]] = {}
    buffers: dict[int, tuple[str, str]] = {}
    stack: list[tuple[str, nn.Module]] = [("", model)]
    wrapper = optimized_module_type()  # torch.compile(m) stands for m, at its own path
    while stack:
        name, m = stack.pop()
        if wrapper is not None and isinstance(m, wrapper):
            m = unwrap(m)
        modules.setdefault(id(m), name)
        prefix = name + "." if name else ""
        for k, p in m._parameters.items():
            if p is not None:
                params.setdefault(id(p), (prefix + k, PARAM_ROLE))
        for k, b in m._buffers.items():
            if b is not None:
                buffers.setdefault(id(b), (prefix + k, BUFFER_ROLE))
        if alive is not None:
            alive.append(m)
            alive.extend(m._parameters.values())
            alive.extend(m._buffers.values())
        children = m._modules
        if children:
            stack.extend([(prefix + k, c) for k, c in reversed(children.items()) if c is not None])
    return modules, {**buffers, **params}


def recorded_alias(t: torch.Tensor, node: TensorNode, token: object, since: int | None = None) -> RecorderTensor:
    """A RecorderTensor sharing ``t``'s storage, version counter and autograd history,
    bound to ``node`` of the session with ``token``: ``t`` itself where an op made it
    after autograd node number ``since``, or ``since`` is ``OWNED`` (tensor.py: ``made_by_op``,
    ``owned``), else an alias."""
    r: Any = t if since is not None and made_by_op(t, since) else alias_as(t, RecorderTensor)
    r._tv_node = node
    try:
        r._tv_ver = r._version
    except RuntimeError:  # an inference tensor
        r._tv_ver = version(r)
    r._tv_tok = token
    return r

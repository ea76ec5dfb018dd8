"""Node types of the recorded graph.

Nodes hold metadata only (names, paths, shapes as tuples of ints, dtypes and devices
as strings), never tensors, so a recorded graph keeps no activation memory.  A size that
depends on tensor values (``nonzero`` recorded with ``device="fake"``) is a string naming
its symbol or expression (``"u0"``, ``"u0//3"``).

Every node has a unique integer ``id`` handed out in creation order, which is also
its execution ``order`` in the forward pass.  ``parent`` is the id of the enclosing
module-call node (``None`` only for the root module call) and ``path`` the qualified
name of that module (``""`` for the root), so depth collapse and module-path listings
are plain operations on these fields.

Nodes are made only by ``NodeFactory`` (factory.py), which hands out ids, names,
parents and depths.  Code that treats kinds differently dispatches on the type with
``match`` and ends with ``case _: unhandled(node)``, so a new kind fails loudly (and
mypy reports every ``match`` that misses it) instead of being drawn as another kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NoReturn

#: one size of a shape: an int, or a symbolic size's name (``"u0"``)
Dim = int | str
Shape = tuple[Dim, ...]

#: Roles of tensor nodes.  Sources (no producer) are inputs and the last five.
ROLES = ("input", "output", "intermediate", "created", "constant", "parameter", "buffer")
SOURCE_ROLES = frozenset({"input", "created", "constant", "parameter", "buffer"})
#: roles of tensors that belong to the model (drawn as parameter nodes with ``show_params``)
PARAM_ROLES = frozenset({"parameter", "buffer"})


@dataclass(slots=True, eq=False, repr=False)
class BaseNode:
    """Common part of all nodes."""

    #: the kind's name in JSON and listings (``"tensor"``, ``"function"``, ``"module"``)
    kind: ClassVar[str] = ""
    id: int
    name: str  # unique, readable: ``layer1_0_conv1``, ``add_1``
    path: str  # qualified module path (own path for modules, enclosing one otherwise)
    parent: int | None
    depth: int

    @property
    def order(self) -> int:
        """Position in execution order (ids are handed out as the forward runs)."""
        return self.id

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id} {self.name!r} path={self.path!r}>"


@dataclass(slots=True, eq=False, repr=False)
class TensorNode(BaseNode):
    """One version of a tensor.  An in-place op makes a new version (a new node)."""

    kind: ClassVar[str] = "tensor"
    shape: Shape
    dtype: str
    device: str
    role: str
    #: id of the outer tensor this node stands for (a module's pass-through result)
    copy_of: int | None = None
    #: qualified name for parameters/buffers (``layer1.0.conv1.weight``), argument name for
    #: inputs, where in the returned value for outputs (``logits``, ``output[0]``,
    #: ``past_key_values.layers[3].keys``)
    source_name: str | None = None
    #: outputs: the top-level part of the returned value holding this tensor (a dict key or
    #: dataclass field such as ``past_key_values``, ``output[i]`` for the i-th element of a
    #: returned tuple, ``output`` for a returned tensor); the view draws one node per field
    field: str | None = None

    @property
    def is_param(self) -> bool:
        """A parameter or buffer of the model."""
        return self.role in PARAM_ROLES


@dataclass(slots=True, eq=False, repr=False)
class FunctionNode(BaseNode):
    """One call of a torch function, tensor method or operator."""

    kind: ClassVar[str] = "function"
    op: str  # display name of the op: ``add``, ``conv2d``, ``setitem``, ``relu_``
    failed: bool = False


@dataclass(slots=True, eq=False, repr=False)
class ModuleNode(BaseNode):
    """One call of an ``nn.Module``.  Its descendants have ids in ``(id, end)``."""

    kind: ClassVar[str] = "module"
    cls_name: str
    cls_module: str
    call_index: int  # how many earlier calls of this path in the forward
    #: first id after the call ended (all descendants have smaller ids); -1 while running
    end: int = -1
    failed: bool = False
    #: True when nothing inside the call was recorded (scripted or C++ modules)
    opaque: bool = False
    #: the method run, for a submodule used through a method other than ``forward``
    #: (``self.enc.embed(x)``: ``"embed"``); ``None`` for a call of the module itself
    method: str | None = None

    @property
    def call_name(self) -> str:
        """``path``, with ``.method`` for a method call (``enc.embed``)."""
        return self.path if self.method is None else f"{self.path}.{self.method}"

    @property
    def is_torch_builtin(self) -> bool:
        """A module class that ships with ``torch.nn`` (``Conv2d``, ``Linear``...)."""
        return self.cls_module.startswith("torch.nn.")

    def contains(self, node_id: int) -> bool:
        """Whether ``node_id`` was created during this call (it is a descendant)."""
        end = self.end if self.end >= 0 else 1 << 62
        return self.id < node_id < end


#: any node of the graph; ``match`` on it and end with ``case _: unhandled(node)``
Node = TensorNode | FunctionNode | ModuleNode
#: the node types, in the order kinds are listed
NODE_TYPES: tuple[type[BaseNode], ...] = (TensorNode, FunctionNode, ModuleNode)
KINDS = tuple(t.kind for t in NODE_TYPES)


def unhandled(node: NoReturn) -> NoReturn:
    """The default branch of a ``match`` over node types: mypy proves it unreachable for
    the known kinds; at run time a new kind that a ``match`` forgot fails here."""
    raise TypeError(f"unhandled node kind {type(node).__name__}: {node!r}")

"""Node types of the recorded graph.

Nodes hold metadata only (names, paths, shapes as tuples of ints, dtypes and devices
as strings), never tensors, so a recorded graph keeps no activation memory.

Every node has a unique integer ``id`` handed out in creation order, which is also
its execution ``order`` in the forward pass.  ``parent`` is the id of the enclosing
module-call node (``None`` only for the root module call) and ``path`` the qualified
name of that module (``""`` for the root), so depth collapse and module-path listings
are plain operations on these fields.
"""

from __future__ import annotations

from typing import Any

TENSOR = "tensor"
FUNCTION = "function"
MODULE = "module"
KINDS = (TENSOR, FUNCTION, MODULE)

#: Roles of tensor nodes.  Sources (no producer) are inputs and the last five.
ROLES = ("input", "output", "intermediate", "created", "constant", "parameter", "buffer")
SOURCE_ROLES = frozenset({"input", "created", "constant", "parameter", "buffer"})


class Node:
    """Common part of all nodes."""

    __slots__ = ("id", "name", "path", "parent", "depth", "notes")
    kind: str = ""

    def __init__(self, id: int, name: str, path: str, parent: int | None, depth: int) -> None:
        self.id = id
        self.name = name  # unique, readable: ``layer1_0_conv1``, ``add_1``
        self.path = path  # qualified module path (own path for modules, enclosing one otherwise)
        self.parent = parent
        self.depth = depth
        #: free-form annotations (e.g. tap statistics); ``None`` until someone adds one
        self.notes: dict[str, Any] | None = None

    @property
    def order(self) -> int:
        """Position in execution order (ids are handed out as the forward runs)."""
        return self.id

    def note(self, key: str, value: Any) -> None:
        if self.notes is None:
            self.notes = {}
        self.notes[key] = value

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id} {self.name!r} path={self.path!r}>"


class TensorNode(Node):
    """One version of a tensor.  An in-place op makes a new version (a new node)."""

    __slots__ = ("shape", "dtype", "device", "role", "copy_of", "source_name")
    kind = TENSOR

    def __init__(
        self,
        id: int,
        name: str,
        path: str,
        parent: int | None,
        depth: int,
        shape: tuple[int, ...],
        dtype: str,
        device: str,
        role: str,
        copy_of: int | None = None,
        source_name: str | None = None,
    ) -> None:
        super().__init__(id, name, path, parent, depth)
        self.shape = shape
        self.dtype = dtype
        self.device = device
        self.role = role
        #: id of the outer tensor this node stands for (a module's pass-through result)
        self.copy_of = copy_of
        #: qualified name for parameters/buffers (``layer1.0.conv1.weight``), argument name for inputs
        self.source_name = source_name


class FunctionNode(Node):
    """One call of a torch function, tensor method or operator."""

    __slots__ = ("op", "failed")
    kind = FUNCTION

    def __init__(self, id: int, name: str, path: str, parent: int | None, depth: int, op: str) -> None:
        super().__init__(id, name, path, parent, depth)
        self.op = op  # display name of the op: ``add``, ``conv2d``, ``setitem``, ``relu_``
        self.failed = False


class ModuleNode(Node):
    """One call of an ``nn.Module``.  Its descendants have ids in ``(id, end)``."""

    __slots__ = ("cls_name", "cls_module", "call_index", "end", "failed", "opaque")
    kind = MODULE

    def __init__(
        self,
        id: int,
        name: str,
        path: str,
        parent: int | None,
        depth: int,
        cls_name: str,
        cls_module: str,
        call_index: int,
    ) -> None:
        super().__init__(id, name, path, parent, depth)
        self.cls_name = cls_name
        self.cls_module = cls_module
        self.call_index = call_index  # how many earlier calls of this path in the forward
        #: first id after the call ended (all descendants have smaller ids); -1 while running
        self.end = -1
        self.failed = False
        #: True when nothing inside the call was recorded (scripted or C++ modules)
        self.opaque = False

    @property
    def is_torch_builtin(self) -> bool:
        """A module class that ships with ``torch.nn`` (``Conv2d``, ``Linear``...)."""
        return self.cls_module.startswith("torch.nn.")

    def contains(self, node_id: int) -> bool:
        """Whether ``node_id`` was created during this call (it is a descendant)."""
        end = self.end if self.end >= 0 else 1 << 62
        return self.id < node_id < end

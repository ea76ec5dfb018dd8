"""Bindings: which node each tensor of the forward is now (one collaborator of the session).

A ``RecorderTensor`` of this recording carries its node and the version it had then
(``_tv_node``, ``_tv_ver``, ``_tv_tok``: the session's token); every other tensor with a
node (parameters, buffers, constants, other subclasses) is tracked here, by id, with a
strong reference for the recording's life (``sources``).  In-place ops are found by the
tensor version counter (shared by all views of a storage): after an op, an argument whose
counter moved was written by it and gets a new node ("pop after forward": later readers
connect to the new version); a tensor whose counter moved through another view gets its
new version lazily, from the last op that wrote its storage (``mutations``), when it is
next read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from ..graph import FunctionNode, ModuleNode, Node, NodeFactory, Shape, TensorNode
from .control import unseen_change
from .convert import Undo
from .inference import storage_id
from .optable import DEVICE_NAMES, DTYPE_NAMES, device_name, dtype_name, shape_of, storage_key, symbolic_shape, version
from .state import recorded_alias
from .tensor import RecorderTensor
from .transforms import wrapped

if TYPE_CHECKING:
    from .calls import Calls
    from .ops import Ops
    from .transforms import Transforms

_Tensor = torch.Tensor
_RT = RecorderTensor


def _no() -> bool:
    return False


def _no_scope() -> ModuleNode:
    raise RuntimeError("Bindings used before Session connected it")


class Bindings:
    """Tensor -> node, and the versions of both, for one recording."""

    def __init__(
        self, builder: NodeFactory, param_names: dict[int, tuple[str, str]], undo: Undo | None, token: object
    ) -> None:
        self.builder = builder
        self.graph = builder.graph
        #: marks this session's RecorderTensors: one with another token is stale (it
        #: outlived its recording) and is treated as a plain tensor
        self.token = token
        #: ``id(tensor) -> (qualified name, role)`` of the model's parameters and buffers
        self.param_names = param_names
        self.undo = undo
        #: one tuple object per distinct shape (nodes share them)
        self.shapes: dict[tuple[int, ...], tuple[int, ...]] = {}
        # tensors that are not RecorderTensors but have nodes: id -> [tensor, node, version]
        # (parameters, buffers, constants, foreign subclasses); the strong reference keeps
        # the id valid for the session's life only
        self.sources: dict[int, list[Any]] = {}
        # last op that mutated a storage: id(storage owner) -> (owner, function node id)
        self.mutations: dict[int, tuple[Any, int]] = {}
        #: tensors aliased without a shared version counter (``p.data``, ``p.data = x``):
        #: storage key of the alias -> (object keeping the key valid, the tensor it writes)
        self.data_links: dict[int, tuple[Any, torch.Tensor]] = {}
        #: the module call now executing (``Calls.scope``, bound once)
        self._scope: Callable[[], ModuleNode] = _no_scope
        self._transforms: Transforms | None = None
        self._inference: Callable[[], bool] = _no

    def connect(self, calls: Calls, transforms: Transforms, ops: Ops) -> None:
        """The collaborators asked while binding: the call stack (the scope a source is
        made in), the transforms (tensors a vmap made) and the ops (whether inference
        tensors are met: their storages are keyed otherwise)."""
        self._transforms, self._inference = transforms, ops.inference
        self._scope = calls.scope

    # -- what is tracked ----------------------------------------------------------------------
    def tables(self) -> tuple[dict[int, list[Any]], dict[int, tuple[str, str]]]:
        """``(sources, param_names)``, read (never written) by the per-op loop of ops.py."""
        return self.sources, self.param_names

    def tracked(self, t: torch.Tensor) -> bool:
        """``t`` has a node: one of ours, or tracked by id."""
        return (type(t) is _RT and t._tv_tok is self.token) or id(t) in self.sources

    def track(self, t: torch.Tensor, node: TensorNode) -> None:
        """``t``, kept as it is (not one of ours), is now ``node``."""
        self.sources[id(t)] = [t, node, version(t)]

    def param_name(self, t: torch.Tensor) -> tuple[str, str] | None:
        """``(qualified name, role)`` of a parameter or buffer of the model, else None."""
        return self.param_names.get(id(t))

    def storage_key(self, t: torch.Tensor) -> tuple[int, Any]:
        return storage_key(t, self._inference())

    # -- new nodes ------------------------------------------------------------------------------
    def new_tensor(
        self,
        t: torch.Tensor,
        base: str,
        role: str,
        scope: ModuleNode,
        *,
        copy_of: int | None = None,
        source_name: str | None = None,
        producer: int | None = None,
        named_after: Node | None = None,
    ) -> TensorNode:
        """A node for (this version of) ``t``, made inside ``scope`` (``named_after``: as
        in ``NodeFactory.add_tensor``)."""
        dims = shape_of(t)
        shape: Shape
        try:
            shape = self.shapes.setdefault(dims, dims)
        except TypeError:  # symbolic sizes (device="fake"): SymInts are unhashable
            shape = symbolic_shape(dims)
        dt, dev = t.dtype, t.device
        return self.builder.add_tensor(
            base,
            scope,
            shape,
            DTYPE_NAMES.get(dt) or dtype_name(dt),
            DEVICE_NAMES.get(dev) or device_name(dev),
            role,
            copy_of=copy_of,
            source_name=source_name,
            producer=producer,
            named_after=named_after,
        )

    def new_result(self, t: torch.Tensor, scope: ModuleNode, producer: Node, suffix: str = "_out") -> TensorNode:
        """A node for ``t`` made by ``producer`` inside ``scope`` and named after it: the
        common case of ``new_tensor``, in positional calls (the per-op hot path)."""
        try:
            dims = tuple(t.shape)
            shape: Shape = self.shapes.setdefault(dims, dims)
        except (RuntimeError, TypeError):  # nested tensors, symbolic sizes: the general way
            return self.new_tensor(t, suffix, "intermediate", scope, producer=producer.id, named_after=producer)
        dt, dev = t.dtype, t.device
        return self.builder.add_result(
            suffix,
            scope,
            shape,
            DTYPE_NAMES.get(dt) or dtype_name(dt),
            DEVICE_NAMES.get(dev) or device_name(dev),
            producer,
        )

    # -- tensors and their nodes ----------------------------------------------------------------
    def bind(self, t: torch.Tensor, node: TensorNode, since: int | None = None) -> torch.Tensor:
        """Return a RecorderTensor for ``t`` bound to ``node`` (``t`` itself if possible:
        ours, or with ``since`` a result the op made: state.py ``recorded_alias``)."""
        if type(t) is _RT and t._tv_tok is self.token:
            t._tv_node = node
            t._tv_ver = version(t)
            return t
        if type(t) is _Tensor and t.layout == torch.strided:
            transforms = self._transforms
            assert transforms is not None
            return transforms.wrapped_result(t, node) if wrapped(t) else recorded_alias(t, node, self.token, since)
        # parameters, sparse or other subclasses, stale RecorderTensors (of an earlier
        # recording, never rebound): keep the object, track it on the side
        self.sources[id(t)] = [t, node, version(t)]
        return t

    def node_of(self, t: torch.Tensor) -> TensorNode:
        """The current node of any tensor met during the forward (creating source nodes)."""
        if type(t) is _RT and t._tv_tok is self.token:  # else stale, or made by torch: plain
            node = t._tv_node
            if t._tv_ver != version(t):
                node = self._after_foreign_mutation(t, node)
                t._tv_node, t._tv_ver = node, version(t)
            return node
        entry = self.sources.get(id(t))
        if entry is not None:
            node = entry[1]
            v = version(t)
            if entry[2] != v:
                node = entry[1] = self._after_foreign_mutation(t, node)
                entry[2] = v
            return node
        name_role = self.param_names.get(id(t))
        scope = self._scope()
        if name_role is not None:
            qual, role = name_role
            node = self.new_tensor(t, qual.replace(".", "_"), role, scope, source_name=qual)
            if self.undo is not None and self.undo.swapped(t):  # Tensor.set_ before its first read
                self.graph.warn(unseen_change(scope.path), node.id)
        else:  # a constant, unless a vmap made it (transforms.py)
            assert self._transforms is not None
            node = self._transforms.transformed_node(t) or self.new_tensor(t, "constant", "constant", scope)
        self.sources[id(t)] = [t, node, version(t)]
        return node

    def known_node(self, t: torch.Tensor) -> TensorNode | None:
        """The current node of ``t`` if it was seen in this recording (never a new source)."""
        if (type(t) is _RT and t._tv_tok is self.token) or id(t) in self.sources:
            return self.node_of(t)
        return None

    def _after_foreign_mutation(self, t: torch.Tensor, node: TensorNode) -> TensorNode:
        """``t`` changed through another view: a new version produced by the op that did it."""
        hit = self.mutations.get(self.storage_key(t)[0]) or self.aliased_write(t)
        if hit is None:  # changed where torch does not call us (Tensor.set_): said (control.py)
            self.graph.warn(unseen_change(self._scope().path), node.id)
            return node
        fn = self.graph.nodes[hit[1]]
        scope = self.graph.module(fn.parent) if fn.parent is not None else self._scope()
        return self.new_result(t, scope, fn)

    def aliased_write(self, t: torch.Tensor) -> tuple[Any, int] | None:
        """The last write of ``t``'s storage made through another tensor that owns no view
        of it (``p.detach().mul_(m)``, the values of ``state_dict()``: ``t``'s version
        counter moved, but ``mutations`` knows the writer's owner, not ``t``'s): (owner,
        op id), or None.  Looked for only when ``t`` changed and its own owner was not
        written: a walk over the storages written."""
        sid = storage_id(t)
        best: tuple[Any, int] | None = None
        if sid is not None:
            for owner, fid in self.mutations.values():
                if owner is not None and (best is None or fid > best[1]) and storage_id(owner) == sid:
                    best = (owner, fid)
        return best

    def written_by(self, fn: FunctionNode, ins: list[torch.Tensor], scope: ModuleNode) -> dict[int, TensorNode]:
        """After op ``fn`` (inside ``scope``) ran on ``ins``: each argument whose version
        counter moved was written by it and gets a new node; ``id -> new node`` of those."""
        sources, token, fid = self.sources, self.token, fn.id
        mutated: dict[int, TensorNode] = {}
        t: Any
        for t in ins:
            if id(t) in mutated:
                continue
            v = version(t)
            ours = type(t) is _RT and t._tv_tok is token
            old_v = t._tv_ver if ours else sources[id(t)][2]
            if v != old_v and v != -1:
                new = self.new_result(t, scope, fn)
                if ours:
                    t._tv_node, t._tv_ver = new, v
                else:
                    sources[id(t)] = [t, new, v]
                mutated[id(t)] = new
                key, owner = self.storage_key(t)
                self.mutations[key] = (owner, fid)
                if key in self.data_links:  # written through ``p.data``: p's new version too
                    self.rebind(self.data_links[key][1], new, fn, scope)
        return mutated

    def link_data(self, alias: torch.Tensor, p: torch.Tensor) -> None:
        """``alias`` writes ``p`` without sharing its version counter (``p.data``)."""
        key, owner = self.storage_key(alias)
        self.data_links[key] = (owner, p)

    def rebind(self, t: torch.Tensor, node: TensorNode, fn: FunctionNode, scope: ModuleNode) -> None:
        """``t`` was written by op ``fn`` through an alias that shares no version counter
        with it (``data_links``): its node is now ``node`` (the alias's new version), or a
        node of its own made by ``fn`` where the alias was a view of another shape."""
        if tuple(t.shape) != node.shape:
            node = self.new_result(t, scope, fn)
        if type(t) is _RT and t._tv_tok is self.token:
            t._tv_node, t._tv_ver = node, version(t)
        else:
            self.sources[id(t)] = [t, node, version(t)]

    def links(self) -> dict[int, tuple[Any, torch.Tensor]]:
        """The data links (``p.data``), shared with keep.py's ``KeptParameters``."""
        return self.data_links

    def all_sources(self) -> dict[int, list[Any]]:
        """The tracked tensors (read once at the end: where DTensors are placed)."""
        return self.sources

    def close(self) -> None:
        """The recording ended: drop every tensor held, and the collaborators (idempotent:
        no reference cycle then keeps a finished recording for the cycle collector)."""
        self._scope, self._transforms, self._inference = _no_scope, None, _no
        self.sources.clear()
        self.mutations.clear()
        self.data_links.clear()
        self.param_names.clear()
        self.shapes.clear()

"""DTensor placements on the tensor nodes (tensor parallel, FSDP2).

A ``torch.distributed.tensor.DTensor`` is another tensor subclass to the recorder: its
ops are recorded as one op each, whatever its dispatch runs for them on the local shards
(opcalls.py: its kernels are Python decompositions on meta and C++ on the CPU, so
recording inside would give another graph on every device).  Its nodes hold the global
shape; where it is sharded is the ``placement`` annotation (``Shard(dim=0) on mesh
(4,)``), drawn in the node's label.  An FSDP2 model is recorded with full parameters
standing for its shards (unsharded.py), each with its shard's placement."""

from __future__ import annotations

import sys
from typing import Any

#: the annotation layer of DTensor placements
PLACEMENT_LAYER = "placement"
#: the attribute of a full parameter standing for an FSDP2 shard: the shard's placement
SHARD_PLACEMENT = "_tv_placement"


def placements(sources: dict[int, list[Any]]) -> dict[int, str]:
    """``{node id: placement}`` for the DTensors among a session's tracked tensors
    (``sources``: id -> [tensor, node, version]); empty unless DTensor was imported."""
    module = sys.modules.get("torch.distributed.tensor")
    dtensor = getattr(module, "DTensor", None) if module is not None else None
    if dtensor is None:
        return {}
    out: dict[int, str] = {}
    for t, node, _ in sources.values():
        if isinstance(t, dtensor):
            where = ", ".join(repr(p) for p in t.placements)
            out[node.id] = f"{where} on mesh {tuple(t.device_mesh.shape)}"
        else:  # a full parameter standing for an FSDP2 shard (unsharded.py)
            shard = getattr(t, SHARD_PLACEMENT, None)
            if isinstance(shard, str):
                out[node.id] = shard
    return out


def sharded_fsdp_groups(model: Any) -> list[Any]:
    """The parameter groups of FSDP2 (``fully_shard``) in ``model`` that are sharded now
    (empty unless FSDP was imported).  Found through the modules' forward pre-hooks, bound
    to their ``FSDPState``: also on a tree copy (copies.py), which FSDP does not know."""
    module = sys.modules.get("torch.distributed.fsdp._fully_shard._fsdp_state")
    state_type = getattr(module, "FSDPState", None) if module is not None else None
    if state_type is None:
        return []
    groups: dict[int, Any] = {}
    for m in model.modules():  # (only with FSDP imported: no deep nesting among its models)
        for hook in m._forward_pre_hooks.values():
            state = getattr(hook, "__self__", None)
            if isinstance(state, state_type):
                for g in state._fsdp_param_groups:
                    if g.is_sharded:
                        groups.setdefault(id(g), g)
    return list(groups.values())


def reshard(groups: list[Any]) -> None:
    """Shard the parameter ``groups`` again where a forward left them unsharded: the root
    of an FSDP2 model keeps its parameters gathered after a forward, for the backward that
    follows in training; a recording has none, and leaves the model as it found it."""
    for g in groups:
        if not g.is_sharded:
            g.reshard()

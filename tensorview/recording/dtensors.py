"""DTensor placements on the tensor nodes (tensor parallel, FSDP2).

A ``torch.distributed.tensor.DTensor`` is another tensor subclass to the recorder: its
ops are recorded as one op each, whatever its dispatch runs for them on the local shards
(opcalls.py: its kernels are Python decompositions on meta and C++ on the CPU, so
recording inside would give another graph on every device).  Its nodes hold the global
shape; where it is sharded is the ``placement`` annotation (``Shard(dim=0) on mesh
(4,)``), drawn in the node's label."""

from __future__ import annotations

import sys
from typing import Any

#: the annotation layer of DTensor placements
PLACEMENT_LAYER = "placement"


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
    return out

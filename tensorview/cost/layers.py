"""The cost model as annotation layers: what drawings show (``stats=``) and the JSON writes
under each node's ``notes``.

Values are exact integers that print in human units (:class:`~.fmt.Count`,
:class:`~.fmt.Flops`, :class:`~.fmt.Bytes`): a label reads ``params: 7.24 M``, the JSON
holds ``7241732``.

======================  ==========================================================  ===========================
layer                   value                                                       nodes
======================  ==========================================================  ===========================
``params``              parameter elements of the module, recursively, each once    module calls
``trainable_params``    those with ``requires_grad``                                module calls
``shared_with``         paths of modules outside it holding some of its parameters  module calls that share
``flops``               FLOPs (torch's formulas), a call's rolled up                module calls; ops with FLOPs
``uncounted``           ``{aten op: calls}`` that have no FLOP formula               where there are some
``activation_bytes``    bytes of the tensors it returns                             module calls and ops
``saved_bytes``         bytes autograd saves for backward, each storage once         module calls; ops that save
======================  ==========================================================  ===========================

All but ``activation_bytes`` are measured while the forward runs (the cost probe);
``activation_bytes`` is computed from the graph's shapes by :class:`ActivationBytes`, an
annotation pass that works on any recorded graph.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InvalidInputError, InvalidTypeError, choices_error, shown
from ..graph import FunctionNode, Graph, ModuleNode, TensorNode, unhandled
from .fmt import Bytes, Count, Flops
from .memory import tensor_nbytes
from .record import CostRecord

__all__ = ["PROBE_STATS", "STATS", "STAT_CHOICES", "ActivationBytes", "activation_bytes", "check_stats", "stat_layers"]

#: every cost layer, in the order labels list them
STATS = ("params", "trainable_params", "shared_with", "flops", "uncounted", "activation_bytes", "saved_bytes")
#: the layers the cost probe measures (``activation_bytes`` comes from the graph)
PROBE_STATS = tuple(s for s in STATS if s != "activation_bytes")
#: what ``stats=`` takes: the layers, and ``"memory"``: tv.memory's numbers per module call
#: (the layers ``memory_held`` and ``memory_added``, memlayers.py; a training step more)
STAT_CHOICES = (*STATS, "memory")


def check_stats(stats: Any, *, runs: bool = True) -> tuple[str, ...]:
    """``stats`` as a tuple of names: a name, or a sequence of names from :data:`STAT_CHOICES`;
    ``runs=False``: the model is drawn without running (a traced program), so none can be."""
    if isinstance(stats, str):
        stats = (stats,)
    if not isinstance(stats, (tuple, list)) or not all(isinstance(s, str) for s in stats):
        raise InvalidTypeError(f"stats must be a tuple of names from {list(STAT_CHOICES)}, got {shown(stats)}")
    for s in stats:
        if s not in STAT_CHOICES:
            raise choices_error("stat", s, STAT_CHOICES)
    if stats and not runs:
        raise InvalidInputError(
            f"stats={tuple(stats)!r} need a forward that runs; a traced program is drawn without one"
        )
    return tuple(dict.fromkeys(stats))


def stat_layers(record: CostRecord, stats: Iterable[str]) -> dict[str, dict[int, Any]]:
    """The layers ``stats`` (probe-measured ones) of one recording's costs (one value object
    per distinct number: they are immutable, and a model repeats its numbers)."""
    out: dict[str, dict[int, Any]] = {}
    counts, flops, nbytes = _Values(Count), _Values(Flops), _Values(Bytes)
    params = record.params
    for name in stats:
        if name == "params":
            out[name] = {i: counts[p.params] for i, p in params.items()}
        elif name == "trainable_params":
            out[name] = {i: counts[p.trainable] for i, p in params.items()}
        elif name == "shared_with":
            out[name] = {i: list(p.shared_with) for i, p in params.items() if p.shared_with}
        elif name == "flops":
            out[name] = {i: flops[v] for i, v in record.flops.items() if v or i in params}
        elif name == "uncounted":
            out[name] = {i: dict(v) for i, v in record.uncounted.items()}
        elif name == "saved_bytes" and record.saved_measured:
            out[name] = {i: nbytes[v] for i, v in record.saved_bytes.items() if v or i in params}
    return out


class _Values(dict[int, Any]):
    """number -> its value object of type ``cls``, made on first use."""

    def __init__(self, cls: type[int]) -> None:
        super().__init__()
        self.cls = cls

    def __missing__(self, n: int) -> Any:
        value = self[n] = self.cls(n)
        return value


def _nbytes(t: TensorNode) -> int:
    """A tensor's bytes; 0 for a size that depends on values (a symbol, ``device="fake"``)."""
    dims = [d for d in t.shape if isinstance(d, int)]
    return tensor_nbytes(dims, t.dtype) if len(dims) == len(t.shape) else 0


def activation_bytes(graph: Graph, node_id: int) -> int:
    """Bytes of the tensors a module call or op returns (a tensor node: its own bytes);
    tensors whose sizes depend on values are not counted."""
    node = graph.nodes[node_id]
    match node:
        case TensorNode():
            return _nbytes(node)
        case FunctionNode() | ModuleNode():
            return sum(_nbytes(graph.tensor(i)) for i in graph.output_tensors(node_id))
        case _:
            unhandled(node)


class ActivationBytes:
    """Annotation pass ``"activation_bytes"``: bytes of every module call's and op's
    results, from the recorded shapes and dtypes (no recording needed)."""

    name = "activation_bytes"

    def __call__(self, graph: Graph) -> Mapping[int, Bytes]:
        out: dict[int, Bytes] = {}
        for node in graph.nodes:
            if not isinstance(node, TensorNode):
                out[node.id] = Bytes(activation_bytes(graph, node.id))
        return out

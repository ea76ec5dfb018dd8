"""The cost model: parameters, FLOPs and memory per recorded node (issue 9).

``tv.summary(model, ...)`` and ``draw_graph(..., stats=...)`` use it; docs/cost-model.md
explains the numbers.

* :mod:`.flops`: :class:`OpFlops`, a ``TorchDispatchMode`` counting FLOPs with torch's
  own formulas (as ``FlopCounterMode``), per key, plus op calls torch cannot count;
* :mod:`.memory`: :class:`SavedTensors`, bytes autograd saves for backward per key
  (``saved_tensors_hooks``), and :func:`sdpa_as_on_cpu` (fused attention on meta);
* :mod:`.params`: unique parameter counts, per-module-call rows with sharing, and the
  training-memory estimate;
* :mod:`.fmt`: ``7.24 B``, ``1.70 TFLOPs``, ``13.5 GiB``, and integers that print so;
* :mod:`.probe`: :class:`CostProbe`, the recorder probe that runs the two counters around
  every recorded op and module call (keys are node ids), carries costs through meta
  replay, and rolls them up per module call into a :class:`CostRecord` (:mod:`.record`);
* :mod:`.layers`: the costs as annotation layers (what drawings and the JSON show);
* :mod:`.summary` and :mod:`.table`: :class:`Summary`, rows per module call, totals, the
  training-memory estimate, the text table and ``to_dict``.

How the probe wires it into the recorder (recording/probes.py)
--------------------------------------------------------------
1. **Root call** (``start``/``stop``): ``OpFlops`` and, when the forward runs with grad
   enabled, ``SavedTensors(root module)`` are entered around the root call (function
   modes and dispatch modes are separate stacks, so they compose with the recorder's
   ``TorchFunctionMode``) and left when it ends, also by an exception.
2. **Keys** (``enter_op``/``exit_op``, ``enter_call``/``exit_call``): both file what they
   see under the id of the FunctionNode running, else of the module call running
   (factories, hooks, ops on untracked tensors: that call's "own" cost); the previous
   key is restored afterwards.  ``enter_op_args`` sees the op's arguments: an op run
   before in this recording with the same signature (``probe.op_signature``: function,
   tensor shapes, strides, dtypes, devices, grad flags, plain values, grad/autocast
   modes; not on meta) runs with ``OpFlops`` off the dispatch stack and is given the
   cost measured the first time; and, where what it saves was learnt the first time as
   a pattern of its arguments and results (:mod:`.savedops`), with the saved-tensor
   hooks off, its saves filed by that pattern (``exit_op_result`` sees the result).
3. **Meta replay**: ``exit_op`` returns ``flops.cost_of(fn.id)`` as the memo of the
   replay template and ``replay_op`` adds it to the replayed node.  Saved bytes need
   nothing: ops whose arguments need grad (the only ones that save) are never replayed.
4. **Attention on meta**: the probe's ``substitutes`` make the session run
   :func:`.memory.sdpa_as_on_cpu` for ``F.scaled_dot_product_attention`` (the node keeps
   its name), so autograd saves what the CPU's fused kernel saves.
5. **Roll-up** (``stop``): per module call, FLOPs and uncounted calls summed over the
   keys ``m.id <= k < m.end``, saved bytes over the same keys with each storage once;
   ``module_params``/``param_totals`` of the module objects the probe was handed; the
   meta copy keeps tied parameters tied (``placed`` deep-copies with a memo), so its
   counts are the model's.  Activation bytes come from the graph's shapes
   (:class:`.layers.ActivationBytes`).
"""

from __future__ import annotations

from .flops import EXTRA_FORMULAS, OpFlops, is_zero_flop
from .fmt import fmt_bytes, fmt_count, fmt_flops
from .layers import STATS, ActivationBytes
from .memory import CPUAttentionOnMeta, SavedTensors, dtype_size, sdpa_as_on_cpu, tensor_nbytes
from .params import ModuleParams, ParamTotals, module_params, param_totals
from .probe import CostProbe
from .record import CostRecord
from .summary import Row, Summary
from .training import OPTIMIZER_STATES, TrainingMemory, training_memory

__all__ = [
    "ActivationBytes",
    "CPUAttentionOnMeta",
    "CostProbe",
    "CostRecord",
    "EXTRA_FORMULAS",
    "ModuleParams",
    "OPTIMIZER_STATES",
    "OpFlops",
    "ParamTotals",
    "Row",
    "STATS",
    "SavedTensors",
    "Summary",
    "TrainingMemory",
    "dtype_size",
    "fmt_bytes",
    "fmt_count",
    "fmt_flops",
    "is_zero_flop",
    "module_params",
    "param_totals",
    "sdpa_as_on_cpu",
    "tensor_nbytes",
    "training_memory",
]

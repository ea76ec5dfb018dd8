"""The cost model: parameters, FLOPs and memory per recorded node (issue 9).

Standalone pieces, meant to be called by the recorder's per-op hook and by an annotation
pass; nothing here imports the recorder.

* :mod:`.flops`: :class:`OpFlops`, a ``TorchDispatchMode`` counting FLOPs with torch's
  own formulas (as ``FlopCounterMode``), per key, plus op calls torch cannot count;
* :mod:`.memory`: :class:`SavedTensors`, bytes autograd saves for backward per key
  (``saved_tensors_hooks``), and :func:`sdpa_as_on_cpu` (fused attention on meta);
* :mod:`.params`: unique parameter counts, per-module-call rows with sharing, and the
  training-memory estimate;
* :mod:`.fmt`: ``7.24 B``, ``1.70 TFLOPs``, ``13.5 GiB``.

Wiring it into the recorder (what the session must do, and when)
----------------------------------------------------------------
Let ``flops = OpFlops()`` and ``saved = SavedTensors(runnable)``, where ``runnable`` is
the model whose forward is recorded (the meta copy when recording on meta: its
parameters' storages are the ones autograd will save).

1. **Root call.** Enter both right around the root ``call(module, ...)`` in
   ``Session._root_call`` (after pushing the TorchFunctionMode is fine: function modes
   and dispatch modes are separate stacks, and a function mode outside this dispatch
   mode composes, as tested), and exit both in its ``finally``.  For saved bytes the
   recording must run with grad enabled (``draw_graph`` records under ``no_grad``);
   FLOPs do not care.
2. **Per FunctionNode.** In ``Session._op``, once ``fn`` exists and before the op runs
   (the ``try`` that calls ``_call_foreign``/``func``/``_call_meta_cached``), save the
   previous key and set ``flops.current = saved.current = fn.id``; restore the previous
   key in a ``finally``.  Do the same with the ModuleNode's id around each module call
   (``_root_call``/``_sub_call``), so aten ops the recorder does not turn into
   FunctionNodes (factories, code in hooks, ops on untracked tensors) are filed under
   their module call instead of ``None``.  A key that is a ModuleNode id is that call's
   "own" cost; nothing is lost either way (``flops.total`` sums every key).
3. **Meta replay.** A replayed op is not run, so neither object sees it.  For FLOPs: on a
   cache miss, right after the op ran and ``template_of`` gave a template, store
   ``flops.cost_of(fn.id)`` (``(flops, {op name: calls not counted})``) beside the
   template (e.g. ``cache[key] = (template, cost)``); on a hit, call
   ``flops.add(fn.id, *cost)`` before returning ``replay(template, ins)``.  Saved
   bytes need nothing: ops whose arguments need grad (the only ones that save) are
   never replayed.
4. **Attention on meta** (only when saved bytes are wanted): in ``_op``, when recording
   on meta and ``func is torch.nn.functional.scaled_dot_product_attention``, call
   :func:`.memory.sdpa_as_on_cpu` instead (same arguments; keep the node's op name), so
   autograd saves what the CPU's fused kernel saves rather than the math path's
   ``seq x seq`` weights.  A TorchFunctionMode cannot do it from outside because the
   session runs ops with torch-function handling disabled.
5. **After the recording** (the annotation pass), per node id: ``flops.flops.get(id, 0)``
   and ``flops.uncounted.get(id, {})`` for FunctionNodes; per ModuleNode ``m``, the sum
   over keys ``m.id <= k < m.end`` for FLOPs and uncounted calls, and
   ``saved.bytes_of(keys)`` for saved bytes (each storage once within the call);
   model-wide ``flops.total`` and ``saved.total``.  Outputs' activation bytes come from
   TensorNode shapes: :func:`.memory.tensor_nbytes`.  Parameters:
   ``module_params(runnable, [(m.path, module_of[m.id]) for m in module nodes])``
   (the session must remember the module object of each ModuleNode),
   ``param_totals(runnable)`` and ``training_memory(runnable,
   activation_bytes=saved.total, optimizer=..., state_dtype=...)``; the meta copy keeps
   tied parameters tied (``placed`` deep-copies with a memo), so its counts are the
   model's.
"""

from __future__ import annotations

from .flops import EXTRA_FORMULAS, OpFlops, is_zero_flop
from .fmt import fmt_bytes, fmt_count, fmt_flops
from .memory import CPUAttentionOnMeta, SavedTensors, dtype_size, sdpa_as_on_cpu, tensor_nbytes
from .params import (
    OPTIMIZER_STATES,
    ModuleParams,
    ParamTotals,
    TrainingMemory,
    module_params,
    param_totals,
    training_memory,
)

__all__ = [
    "CPUAttentionOnMeta",
    "EXTRA_FORMULAS",
    "ModuleParams",
    "OPTIMIZER_STATES",
    "OpFlops",
    "ParamTotals",
    "SavedTensors",
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

"""The transformers tier (tests/test_transformers_tier.py's architectures) recorded on a CUDA
GPU: each graph equals the CPU's, device names aside.  Runs where torch sees a GPU."""

from __future__ import annotations

import copy
import json

import pytest
import torch

import tensorview as tv

from .fixtures import needs
from .fixtures.hf import written_for
from .test_cuda import _cpu_words, _on
from .test_transformers_tier import ARCH_IDS, ARCHS, Arch, build

pytestmark = [written_for, pytest.mark.skipif(not torch.cuda.is_available(), reason=needs.CUDA)]


def _graph(model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> str:
    with torch.no_grad(), tv.Recorder(model) as rec:
        model(**inputs)
    return json.dumps(rec.graph.to_json(), sort_keys=True)


@pytest.mark.parametrize("arch", ARCHS, ids=ARCH_IDS)
def test_the_transformers_graph_on_cuda_is_the_graph_on_the_cpu(arch: Arch) -> None:
    # the meta build's kernels where it names any: transformers' default experts kernel
    # (grouped_mm) branches on the device, histc of ids made .float() on the CPU and .int()
    # elsewhere (bench/sweep.py's KNOWN says the same of CPU and meta); batched_mm does not
    model = build(arch, "cpu", **arch.meta_build)
    torch.manual_seed(1)
    inputs = arch.inputs("cpu")
    on_cpu = _graph(model, inputs)
    on_gpu = _graph(copy.deepcopy(model).cuda(), _on(inputs, "cuda"))
    assert '"cuda:0"' in on_gpu
    assert _cpu_words(on_gpu) == _cpu_words(on_cpu)

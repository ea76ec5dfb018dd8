"""Recording on a CUDA GPU: the same graph as on the CPU, the caller's model and tensors left
where they were, the cost model's counts equal to meta's.  Runs where torch sees a CUDA
device (the development machines have none: these ran on an H200 lent to a session, see
docs/benchmarks.md's GPU section); bench/gpu.py measures the overhead there."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv

from .fixtures import cost_models as cm
from .fixtures import needs
from .fixtures.models import ZOO

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason=needs.CUDA)

#: a device written any way the graph may write it: "cuda:0", "cuda", device(type='cuda', index=0)
_CUDA = re.compile(r"device\(type='cuda'(, index=\d+)?\)|cuda(:\d+)?")


def _on(value: Any, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_on(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _on(v, device) for k, v in value.items()}
    fields = getattr(value, "_fields", None) or getattr(value, "__dataclass_fields__", None)
    if fields is not None:  # a namedtuple or a dataclass of tensors
        return type(value)(*(_on(getattr(value, f), device) for f in fields))
    return value


def _recorded(model: nn.Module, args: Any, kwargs: Any) -> str:
    with torch.no_grad(), tv.Recorder(model) as rec:
        model(*args, **kwargs)
    return json.dumps(rec.graph.to_json(), sort_keys=True)


def _cpu_words(text: str) -> str:
    return _CUDA.sub("cpu", text).replace("device(type='cpu')", "cpu")


#: sparse: another layout's kernels; list_held: its modules sit in a plain list, which
#: ``Module.cuda()`` does not move (the fixture's point: modules the tree does not hold)
_CPU_ONLY = {"sparse", "list_held"}


@pytest.mark.parametrize("name", sorted(set(ZOO) - _CPU_ONLY))
def test_the_graph_on_cuda_is_the_graph_on_the_cpu(name: str) -> None:
    make_model, make_inputs = ZOO[name]
    torch.manual_seed(0)
    model = make_model()
    args, kwargs = make_inputs()
    on_cpu = _recorded(model, args, kwargs)
    gpu_model = copy.deepcopy(model).cuda()
    gpu_args, gpu_kwargs = _on(args, "cuda"), _on(kwargs, "cuda")
    with torch.device("cuda"):  # tensors the forward makes (torch.zeros(...)) are made there too
        on_gpu = _recorded(gpu_model, gpu_args, gpu_kwargs)
    assert '"cuda' in on_gpu  # the tensors are recorded where they live
    assert _cpu_words(on_gpu) == _cpu_words(on_cpu)


@pytest.mark.parametrize("make", [cm.CNN, cm.MLP, cm.ResNet50], ids=["cnn", "mlp", "resnet50"])
def test_draw_graph_on_cuda_leaves_the_model_on_the_cpu(make: Any) -> None:
    torch.manual_seed(0)
    model = make()
    size = (2, 3, 64, 64) if make is not cm.MLP else (2, _in_features(model))
    before = {k: (v.device, v.clone()) for k, v in model.state_dict().items()}
    gpu = tv.draw_graph(model, input_size=size, device="cuda", depth=99)
    cpu = tv.draw_graph(model, input_size=size, device="cpu", depth=99)
    assert all(v.device.type == "cpu" for v in model.state_dict().values())
    assert all(torch.equal(before[k][1], v) for k, v in model.state_dict().items())
    assert _cpu_words(gpu.source) == _cpu_words(cpu.source)
    devices = {n["device"] for n in gpu.to_json()["nodes"] if n["kind"] == "tensor"}
    assert devices == {"cuda:0"}


def _in_features(model: nn.Module) -> int:
    return next(m for m in model.modules() if isinstance(m, nn.Linear)).in_features


@pytest.mark.parametrize("make", [cm.CNN, cm.ResNet50], ids=["cnn", "resnet50"])
def test_summary_on_cuda_counts_what_meta_counts(make: Any) -> None:
    model = make()
    size = (2, 3, 64, 64)
    gpu = tv.summary(model, input_size=size, device="cuda", verbose=0)
    meta = tv.summary(model, input_size=size, device="meta", verbose=0)
    assert gpu.total_params == meta.total_params > 0
    assert gpu.total_flops == meta.total_flops > 0
    assert gpu.saved_bytes == meta.saved_bytes > 0
    assert [r.to_dict() for r in gpu.rows] == [r.to_dict() for r in meta.rows]


def test_autocast_on_cuda_records_the_casts() -> None:
    model = cm.CNN().cuda()
    x = torch.randn(2, 3, 32, 32, device="cuda")
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16), tv.Recorder(model) as rec:
        out = model(x)
    assert out.dtype == torch.bfloat16 and type(out) is torch.Tensor
    tensors = {n["name"]: n for n in rec.graph.to_json()["nodes"] if n["kind"] == "tensor"}
    convs = [n for name, n in tensors.items() if name.startswith("conv2d") and name.endswith("_out")]
    assert len(convs) == 2 and all(n["dtypes"] == ["bfloat16"] for n in convs)  # what autocast made
    assert {n["dtypes"][0] for n in tensors.values() if n["role"] in ("input", "parameter")} == {"float32"}


def test_a_forward_that_moves_to_cuda_records_the_move() -> None:
    class Moves(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4).cuda()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x.to("cuda")).cpu()

    model = Moves()
    x = torch.randn(2, 4)
    with tv.Recorder(model) as rec:
        out = model(x)
    assert out.device.type == "cpu" and type(out) is torch.Tensor
    nodes = rec.graph.to_json()["nodes"]
    tensors = [(n["name"], n["device"]) for n in nodes if n["kind"] == "tensor"]
    assert {d for _, d in tensors} == {"cpu", "cuda:0"}
    names = [n["name"] for n in nodes if n["kind"] == "function"]
    assert names[0].startswith("to") and names[-1].startswith("cpu")


# torch 2.11's inductor imports torch.utils.mkldnn, which warns of its own deprecated API,
# and on a Hopper GPU it advises TF32 for fp32 matmuls: torch's words, not ours
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:TensorFloat32 tensor cores:UserWarning")
def test_an_inductor_compiled_model_on_cuda_records_its_eager_graph() -> None:
    """torch.compile's default backend on the GPU (Triton kernels): recording runs the
    eager modules, compiles nothing, and the compiled model's cache is still used after."""
    import torch._dynamo

    torch.manual_seed(0)
    model = cm.CNN().cuda().eval()
    x = torch.randn(2, 3, 32, 32, device="cuda")
    compiled = torch.compile(model)
    with torch.no_grad():
        first = compiled(x)
        frames = torch._dynamo.utils.counters["frames"]["total"]
        with tv.Recorder(compiled) as rec:
            compiled(x)
        assert torch._dynamo.utils.counters["frames"]["total"] == frames  # nothing compiled while recording
        with torch.compiler.set_stance("fail_on_recompile"):
            again = compiled(x)
        with tv.Recorder(model) as eager:
            model(x)
    assert rec.graph.to_json() == eager.graph.to_json()
    assert torch.allclose(first, again)
    assert "conv2d" in [n["name"] for n in rec.graph.to_json()["nodes"] if n["kind"] == "function"]

"""FLOPs per key (tensorview.cost.flops): against FlopCounterMode, hand counts, CPU vs meta."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils.flop_counter import FlopCounterMode

import tensorview as tv
from tensorview.cost.flops import EXTRA_FORMULAS, OpFlops, is_zero_flop
from tensorview.cost.params import param_totals

from .fixtures import cost_models as cm
from .fixtures.hf import written_for
from .fixtures.models import ZOO
from .test_transformers_tier import ARCH_IDS, ARCHS, build

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)

aten = torch.ops.aten


def flop_counter_total(
    model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None, **options: Any
) -> int:
    with torch.no_grad(), FlopCounterMode(display=False, **options) as fc:
        model(*args, **(kwargs or {}))
    return int(fc.get_total_flops())


def ours(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None, **options: Any) -> OpFlops:
    counter = OpFlops(**options)
    with torch.no_grad(), counter:
        model(*args, **(kwargs or {}))
    return counter


SMALL = {
    "mlp": (cm.MLP, lambda d: (torch.randn(4, 16, device=d),)),
    "cnn": (cm.CNN, lambda d: (torch.randn(2, 3, 16, 16, device=d),)),
    "sdpa_attention": (cm.SDPAttention, lambda d: (torch.randn(2, 10, 32, device=d),)),
    "matmul_attention": (cm.MatmulAttention, lambda d: (torch.randn(2, 10, 32, device=d),)),
    "functional": (cm.Functional, lambda d: (torch.randn(2, 5, 8, device=d),)),
    "llama": (
        lambda: __import__("transformers").AutoModel.from_config(cm.tiny_llama_config()),
        lambda d: (torch.randint(0, 100, (1, 8), device=d),),
    ),
}


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name", list(SMALL))
def test_total_equals_flop_counter_mode(name: str, device: str) -> None:
    make, inputs = SMALL[name]
    torch.manual_seed(0)
    with torch.device(device):
        model = make().eval()
    args = inputs(device)
    # with the extra formulas, against FlopCounterMode given the same formulas
    c = ours(model, args)
    assert c.total == flop_counter_total(model, args, custom_mapping=EXTRA_FORMULAS) > 0
    # without them, exactly a plain FlopCounterMode
    assert ours(model, args, extra_formulas=False).total == flop_counter_total(model, args)


def test_sdpa_costs_the_same_on_cpu_and_meta() -> None:
    """torch counts 0 for the CPU's fused attention kernel; with EXTRA_FORMULAS it gets the
    formula of the CUDA kernels, which equals the two matmuls the meta (math) path counts."""
    totals = {}
    models = {}
    for device in ("cpu", "meta"):
        with torch.device(device):
            model = models[device] = cm.SDPAttention().eval()
        totals[device] = ours(model, (torch.randn(2, 10, 32, device=device),)).total
    b, h, t, dh, d = 2, 4, 10, 8, 32
    linears = 2 * b * t * d * 3 * d + 2 * b * t * d * d
    attention = 2 * (2 * b * h * t * t * dh)  # q @ k^T and weights @ v (causal not discounted)
    assert totals == {"cpu": linears + attention, "meta": linears + attention}
    plain = ours(models["cpu"], (torch.randn(2, 10, 32),), extra_formulas=False)
    assert plain.total == linears
    assert plain.uncounted[None]["aten._scaled_dot_product_flash_attention_for_cpu"] == 1


def test_lstm_costs_the_same_on_cpu_and_meta() -> None:
    """The CPU runs an LSTM layer as one oneDNN kernel (mkldnn_rnn_layer), which torch has
    no formula for: its products counted 0 FLOPs on the CPU but their full cost on meta,
    where the LSTM runs step by step."""
    b, t, n_in, h = 3, 7, 8, 12
    got = {}
    for device in ("cpu", "meta"):
        with torch.device(device):
            lstm = nn.LSTM(n_in, h, num_layers=2, bidirectional=True, batch_first=True)
        s = tv.summary(lstm, input_data=torch.randn(b, t, n_in, device=device), device=device)
        got[device] = (s.total_flops, s.rows[0].flops, "aten.mkldnn_rnn_layer" in s.uncounted)
    # per layer and direction, every step: input x W_ih and hidden x W_hh, 4 gates
    layer1 = 2 * b * t * (n_in * 4 * h + h * 4 * h)
    layer2 = 2 * b * t * (2 * h * 4 * h + h * 4 * h)  # its input: both directions of layer 1
    assert got == {"cpu": (2 * (layer1 + layer2),) * 2 + (False,), "meta": (2 * (layer1 + layer2),) * 2 + (False,)}


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_hand_counts(device: str) -> None:
    b, n_in, n_out = 3, 7, 5
    with torch.device(device):
        lin = nn.Linear(n_in, n_out)
        conv = nn.Conv2d(4, 6, 3, padding=1)
    assert ours(lin, (torch.randn(b, n_in, device=device),)).total == 2 * b * n_in * n_out
    # per output element: c_in * k * k multiply-adds (the bias is not counted by torch)
    assert ours(conv, (torch.randn(2, 4, 8, 8, device=device),)).total == 2 * (2 * 6 * 8 * 8) * (4 * 3 * 3)
    with torch.device(device):
        fn = cm.Functional()
    assert ours(fn, (torch.randn(2, 5, 8, device=device),)).total == cm.FUNCTIONAL_FLOPS


class KeyPerFunction(TorchFunctionMode):
    """A stand-in for the recorder: a torch-function mode (outside the dispatch mode) that
    sets the counter's key to each top-level torch function it runs."""

    def __init__(self, counter: OpFlops) -> None:
        super().__init__()
        self.counter = counter
        self.n = 0

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if getattr(func, "__name__", "") in ("__get__", "size", "dim"):
            return func(*args, **(kwargs or {}))
        self.n += 1
        self.counter.current = (self.n, getattr(func, "__name__", str(func)))
        try:
            return func(*args, **(kwargs or {}))
        finally:
            self.counter.current = None


def test_keys_follow_a_torch_function_mode() -> None:
    counter = OpFlops()
    x = torch.randn(2, 5, 8)
    model = cm.Functional()
    with torch.no_grad(), counter, KeyPerFunction(counter):
        model(x)
    by_name = {name: n for (i, name), n in counter.flops.items()}
    assert by_name == {"matmul": 1920, "bmm": 1200, "einsum": 800}
    assert counter.total == cm.FUNCTIONAL_FLOPS


def test_uncounted_ops_are_reported_and_zero_flop_ops_are_not() -> None:
    counter = OpFlops()
    x = torch.randn(2, 10, 32)
    with torch.no_grad(), counter, KeyPerFunction(counter):
        y = F.layer_norm(x, (32,))
        y = F.gelu(y)
        y = y.view(2, 320).transpose(0, 1).contiguous().clone()
        y = torch.cat([y, y]).softmax(-1)
        y = y[:3].masked_fill(y[:3] > 0, 0.0)
        torch.zeros(3)
    names = {name: dict(u) for (i, name), u in counter.uncounted.items()}
    assert names == {
        "layer_norm": {"aten.native_layer_norm": 1},
        "gelu": {"aten.gelu": 1},
        "softmax": {"aten._softmax": 1},
        "gt": {"aten.gt": 1},
    }
    assert counter.uncounted_total() == 4
    assert counter.total == 0
    for op in (
        aten.view.default,
        aten.transpose.int,
        aten.clone.default,
        aten.cat.default,
        aten.zeros.default,
        aten.masked_fill.Scalar,
        aten.embedding.default,
        aten.t_.default,
        aten.index_select.default,
    ):
        assert is_zero_flop(op), op
    for op in (
        aten.add.Tensor,
        aten.mul.Tensor,
        aten._softmax.default,
        aten.native_layer_norm.default,
        aten.col2im.default,
    ):
        assert not is_zero_flop(op), op


def test_replayed_op_gets_its_cost_back() -> None:
    """What the recorder does for a meta-replayed op: read the cost when the op first ran,
    add it to the replay's key without running anything."""
    counter = OpFlops()
    x = torch.randn(4, 16, device="meta")
    with torch.device("meta"):
        lin = nn.Linear(16, 32)
    with torch.no_grad(), counter:
        counter.current = 1
        F.gelu(lin(x))
        counter.current = None
        cost = counter.cost_of(1)
        counter.add(2, *cost)
    assert cost == (2 * 4 * 16 * 32, {"aten.gelu": 1})
    assert counter.flops == {1: 2048 * 2, 2: 2048 * 2}
    assert counter.uncounted == {1: {"aten.gelu": 1}, 2: {"aten.gelu": 1}}
    counter.add(2, 10, {"aten.gelu": 2, "aten.add": 1})
    assert counter.cost_of(2) == (4106, {"aten.gelu": 3, "aten.add": 1})
    assert counter.cost_of("never") == (0, {})
    assert counter.uncounted_total([2]) == 4


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_composes_with_the_recorder(device: str) -> None:
    """The recorder's TorchFunctionMode and RecorderTensors around our dispatch mode: the
    same total as a plain forward (replay off: replayed ops are not run, see above)."""
    with torch.device(device):
        model = cm.SDPAttention().eval()
    x = torch.randn(2, 10, 32, device=device)
    counter = OpFlops()
    with torch.no_grad(), counter, tv.Recorder(model, meta_replay=False):
        out = model(x)
    assert type(out) is torch.Tensor
    assert counter.total == ours(model, (x,)).total > 0


@pytest.mark.parametrize("name", sorted(ZOO))
def test_fixture_zoo_on_cpu(name: str) -> None:
    make, inputs = ZOO[name]
    torch.manual_seed(0)
    model = make().eval()
    args, kwargs = inputs()
    assert ours(model, args, kwargs).total == flop_counter_total(model, args, kwargs, custom_mapping=EXTRA_FORMULAS)


@pytest.mark.parametrize("arch", ARCHS, ids=ARCH_IDS)
def test_transformers_tier(arch: Any) -> None:
    """Every architecture of the tier, on meta where its plain forward runs (else on the
    CPU; the CPU and meta are both checked on the small models and tiny Llama above)."""
    device = "cpu" if arch.no_meta else "meta"
    model = build(arch, device, **(arch.meta_build if device == "meta" else {}))
    torch.manual_seed(1)
    inputs = arch.inputs(device)
    c = ours(model, (), inputs)
    assert c.total == flop_counter_total(model, (), inputs, custom_mapping=EXTRA_FORMULAS) > 0


def test_llama_7b_is_two_flops_per_parameter_per_token() -> None:
    import transformers

    cfg = transformers.AutoConfig.for_model("llama", **cm.LLAMA_7B)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    params = param_totals(model).total_params
    assert 6.7e9 < params < 6.8e9
    tokens = 128
    c = ours(model, (), {"input_ids": torch.zeros(1, tokens, dtype=torch.long, device="meta")})
    assert abs(c.total / (2 * params * tokens) - 1) < 0.03, c.total / (2 * params * tokens)


def test_resnet50_is_4_1_gmacs() -> None:
    with torch.device("meta"):
        model = cm.ResNet50().eval()
    assert param_totals(model).total_params == cm.RESNET50_PARAMS  # the fixture is the real layout
    c = ours(model, (torch.randn(1, 3, 224, 224, device="meta"),))
    assert round(c.total / 2 / 1e9, 1) == 4.1, c.total / 2e9  # FLOPs are 2 per multiply-add


def test_higher_order_op_runs_and_is_reported_uncounted() -> None:
    """torch.cond runs below the mode with its real branch (FlopCounterMode instead counts
    the larger branch and returns the true branch's result)."""
    x = -torch.ones(4, 4)
    counter = OpFlops()
    with counter:
        out = torch.cond(x.sum() > 0, lambda t: t @ t, lambda t: t + 1, (x,))
    assert torch.equal(out, x + 1)
    assert counter.uncounted[None]["cond"] == 1


def test_a_shape_formula_runs_once_per_signature() -> None:
    """torch's formulas run through pytree (tens of µs a call): the counter keeps each
    result by op and shapes, and gives the numbers a FlopCounterMode gives."""
    calls: list[Any] = []

    def mm_flops(a: Any, b: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
        calls.append((tuple(a), tuple(b)))
        return 2 * a[0] * a[1] * b[1]

    counter = OpFlops({torch.ops.aten.mm: mm_flops})
    reference = FlopCounterMode(display=False, custom_mapping={torch.ops.aten.mm: mm_flops})
    for mode in (counter, reference):
        with mode:
            for n in (3, 3, 5, 3):
                torch.randn(n, 4) @ torch.randn(4, 2)
    assert counter.total == reference.get_total_flops() == 2 * 4 * 2 * (3 + 3 + 5 + 3)
    assert calls[:2] == [((3, 4), (4, 2)), ((5, 4), (4, 2))]  # the counter's: once per shape
    assert len(calls) == 2 + 4  # then the reference's four

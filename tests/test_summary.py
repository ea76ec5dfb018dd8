"""``tv.summary`` and ``graph.summary()``: the checks of issue 9 on the fixtures and the
transformers tier, the table, the JSON, options and bad input."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import transformers
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import tensorview as tv
from tensorview.cost.flops import EXTRA_FORMULAS
from tensorview.recording.recorder import is_patched

from .fixtures import cost_models as cm
from .fixtures.hf import written_for
from .test_transformers_tier import ARCH_IDS, ARCHS, build

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)


def unique_params(model: nn.Module) -> int:
    unique = {id(p): p for _, p in model.named_parameters(remove_duplicate=False)}
    return sum(p.numel() for p in unique.values())


def snapshot(model: nn.Module) -> list[Any]:
    """Everything of a model a recording could change, by value."""
    state: list[Any] = []
    for name, m in model.named_modules(remove_duplicate=False):
        state.append((name, id(m), m.training, sorted(m.__dict__), len(m._forward_hooks), len(m._forward_pre_hooks)))
    for name, t in [*model.named_parameters(remove_duplicate=False), *model.named_buffers(remove_duplicate=False)]:
        grad = getattr(t, "grad", None)
        state.append((name, id(t), type(t), t.device, t.dtype, tuple(t.shape), t.requires_grad, t._version, grad))
        if not t.is_meta:
            state.append(t.detach().clone())
    return state


def same(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(
        torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(a, b, strict=True)
    )


def test_a_weight_shared_fixture() -> None:
    model = cm.TwiceUsed()
    s = tv.summary(model, input_size=(2, 4))
    assert (s.total_params, s.trainable_params) == (30, 30) == (unique_params(model), unique_params(model))
    assert [(r.path, r.cls, r.params, r.repeat, r.flops) for r in s.rows] == [
        ("", "TwiceUsed", 30, False, 2 * (2 * 2 * 4 * 4) + 2 * 2 * 4 * 2),
        ("fc", "Linear", 20, False, 2 * 2 * 4 * 4),
        ("fc", "Linear", 20, True, 2 * 2 * 4 * 4),
        ("head", "Linear", 10, False, 2 * 2 * 4 * 2),
    ]
    assert all(type(v) is int for v in (s.total_params, s.trainable_params, s.total_flops))
    assert [r.activation_bytes for r in s.rows] == [16, 32, 32, 16]
    text = str(s)
    assert "fc #2" in text and "(20)" in text  # the second call of fc, counted at the first
    names = cm.TwoNames()
    s = tv.summary(names, input_size=(2, 4))
    assert s.total_params == unique_params(names) == 35
    assert [(r.path, r.shared_with) for r in s.rows] == [("", ()), ("a", ("b",)), ("a", ("b",)), ("c", ())]
    assert "a ↔ b" in str(s)


def test_gpt2_tied_embeddings_count_once() -> None:
    model = cm.tied_gpt2()
    assert model.lm_head.weight is model.transformer.wte.weight
    s = tv.summary(model, input_size=(1, 8), dtypes=[torch.long])
    naive = sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))
    assert s.total_params == unique_params(model) == naive - 100 * 32
    rows = {r.path: r for r in s.rows}
    assert rows["lm_head"].shared_with == ("transformer.wte",) and rows["lm_head"].shared_params == 3200
    assert rows[""].params == s.total_params
    assert "lm_head ↔ transformer.wte" in str(s)


@pytest.mark.parametrize("arch", ARCHS, ids=ARCH_IDS)
def test_transformers_tier(arch: Any) -> None:
    """Unique parameters, and FLOPs equal to FlopCounterMode's for the same plain forward
    (with torch's formulas for the CPU's fused attention, which torch's table leaves out)."""
    device = "cpu" if arch.no_meta else "meta"
    model = build(arch, device, **(arch.meta_build if device == "meta" else {}))
    torch.manual_seed(1)
    inputs = arch.inputs(device)
    before = snapshot(model)
    s = tv.summary(model, input_data=inputs, device=device, mode="eval")
    assert same(snapshot(model), before)
    assert s.total_params == unique_params(model) == s.rows[0].params
    with torch.no_grad(), FlopCounterMode(display=False, custom_mapping=EXTRA_FORMULAS) as fc:
        model(**inputs)
    assert s.total_flops == fc.get_total_flops() > 0
    assert s.saved_bytes is not None and s.saved_bytes > 0


def test_llama_7b_is_two_flops_per_parameter_per_token() -> None:
    cfg = transformers.AutoConfig.for_model("llama", **cm.LLAMA_7B)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    s = tv.summary(model, input_size=(1, 128), dtypes=[torch.long])
    assert 6.7e9 < s.total_params < 6.8e9
    assert abs(s.total_flops / (2 * s.total_params * 128) - 1) < 0.03


def test_resnet50_is_4_1_gmacs() -> None:
    s = tv.summary(cm.ResNet50(), input_size=(1, 3, 224, 224), mode="eval")
    assert s.total_params == cm.RESNET50_PARAMS
    assert round(s.total_flops / 2 / 1e9, 1) == 4.1
    assert s.buffers > 0 and s.rows[0].buffers == s.buffers


SMALL = {
    "mlp": (cm.MLP, (4, 16)),
    "cnn_batchnorm": (cm.CNN, (2, 3, 16, 16)),
    "sdpa_attention": (cm.SDPAttention, (2, 10, 32)),
    "matmul_attention": (cm.MatmulAttention, (2, 10, 32)),
}


@pytest.mark.parametrize("name", list(SMALL))
def test_saved_bytes_on_meta_equal_the_cpu(name: str) -> None:
    make, shape = SMALL[name]
    torch.manual_seed(0)
    model = make()
    on = {device: tv.summary(model, input_size=shape, device=device) for device in ("cpu", "meta")}
    assert on["cpu"].saved_bytes == on["meta"].saved_bytes > 0
    assert [r.saved_bytes for r in on["cpu"].rows] == [r.saved_bytes for r in on["meta"].rows]
    assert on["cpu"].total_flops == on["meta"].total_flops


def saved_by_autograd(model: nn.Module, **inputs: torch.Tensor) -> int:
    """Bytes of the storages autograd saves in a plain CPU forward, each once, parameters
    and buffers left out: counted here with the hooks, without tensorview."""
    own = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    seen: dict[int, int] = {}
    kept: list[Any] = []  # no storage freed mid-forward hands its address to another

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        kept.append(st)
        if st.data_ptr() not in own:
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(**inputs)
    return sum(seen.values())


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_attention_inside_multihead_attention_on_meta_saves_as_on_the_cpu(mode: str) -> None:
    """nn.MultiheadAttention(need_weights=False) runs F.scaled_dot_product_attention inside
    F.multi_head_attention_forward, one recorded op: on meta that inner call runs the CPU's
    fused kernel too (it ran the math path, keeping the seq x seq weights: +28% here)."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=True)
    inputs = {
        "src": torch.randn(2, 6, 16),
        "src_key_padding_mask": torch.tensor([[False] * 6, [False] * 4 + [True] * 2]),
    }
    expected = saved_by_autograd(layer.train(mode == "train"), **inputs)
    on = {d: tv.summary(layer, input_data=inputs, device=d, mode=mode) for d in ("cpu", "meta")}
    assert on["meta"].saved_bytes == on["cpu"].saved_bytes == expected
    assert [r.saved_bytes for r in on["meta"].rows] == [r.saved_bytes for r in on["cpu"].rows]
    assert on["meta"].uncounted == on["cpu"].uncounted  # no math-path softmax on meta


def test_llama_3_70b_on_meta_leaves_the_model_untouched() -> None:
    """The 80-layer Llama-3-70B shape (timed in bench/, not here); some parameters frozen."""
    cfg = transformers.AutoConfig.for_model(
        "llama",
        num_hidden_layers=80,
        hidden_size=8192,
        intermediate_size=28672,
        num_attention_heads=64,
        num_key_value_heads=8,
        vocab_size=128256,
    )
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    model.model.embed_tokens.requires_grad_(False)
    before = snapshot(model)
    s = tv.summary(model, input_size=(1, 128), dtypes=[torch.long])
    assert same(snapshot(model), before)
    assert not model.training and not model.model.embed_tokens.weight.requires_grad
    assert not is_patched()
    assert 70.5e9 < s.total_params < 70.6e9 and s.total_params == unique_params(model)
    assert s.frozen_params == 128256 * 8192 == s.total_params - s.trainable_params
    assert abs(s.total_flops / (2 * s.total_params * 128) - 1) < 0.03
    tm = s.training_memory
    assert (tm.params, tm.grads, tm.optimizer_state) == (
        4 * s.total_params,
        4 * s.trainable_params,
        8 * s.trainable_params,
    )

    assert tm.buffers == s.buffer_bytes > 0  # the rotary embedding's frequencies
    assert s.saved_bytes is not None and s.saved_bytes > 0
    assert s.training_memory_bytes == tm.params + tm.buffers + tm.grads + tm.optimizer_state + s.saved_bytes


def test_a_cpu_model_in_train_mode_is_not_touched() -> None:
    """BatchNorm in train mode updates its running statistics: on the copy, never the model."""
    model = cm.CNN().eval()
    before = snapshot(model)
    s = tv.summary(model, input_size=(2, 3, 16, 16), device="cpu", mode="train")
    assert same(snapshot(model), before) and not model.training
    assert s.buffers == 17


def test_a_forward_that_fails_only_in_training_mode_is_summarised_in_eval_mode() -> None:
    """tv.summary records in training mode by default: a BatchNorm1d given a batch of one
    raises there, as torchvision's detection models do without targets.  With no ``mode``
    given, the summary is of the eval-mode forward (torchinfo's default mode) and says so;
    with ``mode="train"`` asked for, the error is raised and says what to do."""
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).eval()
    s = tv.summary(model, input_size=(1, 4))
    assert s.mode == "eval" and s.mode_fallback.startswith("ValueError: Expected more than 1 value per channel")
    assert s.total_params == unique_params(model) == 4 * 4 + 4 + 2 * 4 and s.total_flops > 0
    assert "Recorded in eval mode, not training mode, where the forward raised ValueError" in str(s)
    assert tv.summary(model, input_size=(2, 4)).mode == "train"  # where training mode runs, it is used
    assert tv.summary(model, input_size=(2, 4)).mode_fallback == ""
    with pytest.raises(tv.RecordingError, match=r"Expected more than 1 value per channel") as info:
        tv.summary(model, input_size=(1, 4), mode="train")
    assert "pass mode='eval'" in str(info.value) and info.value.module_path == "1"
    assert isinstance(info.value, ValueError)  # still the original type
    assert not model.training
    train = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))  # in training mode itself
    assert tv.summary(train, input_size=(1, 4)).mode == "eval" and train.training
    with pytest.raises(tv.RecordingError) as info:
        tv.summary(train, input_size=(1, 4), mode="train")
    assert "mode='eval'" not in str(info.value) and info.value.hint == ""


def test_a_forward_that_fails_in_both_modes_raises_the_training_modes_error() -> None:
    """Eval mode is tried only as a fallback: where it fails too, the error is the one of the
    mode the summary is about, and no hint points to eval mode."""
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).eval()
    with pytest.raises(tv.RecordingError, match=r"forward raised in module '0' \(Linear\)") as info:
        tv.summary(model, input_size=(1, 5))
    assert "mode='eval'" not in str(info.value) and info.value.module_path == "0"


class ReadsAValue(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * x.sum().item()


def test_a_failure_with_its_own_hint_gets_no_training_mode_hint() -> None:
    """On meta, .item() fails in any mode: the meta hint says what to do, and the training
    mode hint, which would mislead, is left out."""
    with pytest.raises(tv.RecordingError) as info:
        tv.summary(ReadsAValue().eval(), input_size=(2, 3), device="meta")  # "auto" would fall back to the CPU
    assert "device='cpu'" in info.value.hint and "device='cpu'" in str(info.value)
    assert "mode='eval'" not in str(info.value)

"""Issue 23's target: on 20 models and training set-ups, ``tv.memory``'s peak on meta
equals the peak of the same training step run for real on the CPU and measured by
PyTorch's own memory tracker (tests/fixtures/memstep.py), to the byte."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv

from .fixtures import cost_models as cm
from .fixtures import needs
from .fixtures.hf import written_for
from .fixtures.memstep import checkpointed_layers, cpu_step_peak, hf_model, llama, llama_batch, lora_llama

pytestmark = [written_for]  # builds transformers models (fixtures/hf.py)

IDS = torch.randint(0, 100, (2, 16), generator=torch.Generator().manual_seed(0))
LM = {"input_ids": IDS, "labels": IDS}
SMALL = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=100)


class LSTMTagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(100, 16)
        self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)
        self.head = nn.Linear(32, 5)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.lstm(self.embed(ids))[0])


class ConvDecoder(nn.Module):
    """A latent vector up-sampled to an image by transposed convolutions (a VAE decoder)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 32 * 4 * 4)
        self.up = nn.Sequential(
            nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.ConvTranspose2d(16, 3, 4, stride=2, padding=1),
            nn.Sigmoid(),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.up(self.fc(z).view(-1, 32, 4, 4))


def unet() -> nn.Module:
    diffusers = pytest.importorskip("diffusers", reason=needs.DIFFUSERS)
    torch.manual_seed(0)
    return diffusers.UNet2DModel(
        sample_size=16,
        in_channels=3,
        out_channels=3,
        block_out_channels=(16, 32),
        layers_per_block=1,
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=8,
        attention_head_dim=8,
    )


@dataclass
class Case:
    """A model, its inputs, ``tv.memory``'s options and the same step's by-hand options."""

    model: Callable[[], nn.Module]
    inputs: Callable[[], Any]
    options: dict[str, Any] = field(default_factory=dict)  # tv.memory's
    reference: dict[str, Any] = field(default_factory=dict)  # cpu_step_peak's
    by_hand: Callable[[nn.Module], nn.Module] | None = None  # the model as the user runs it
    # PyTorch's MemTracker refuses frozen parameters (it hooks every parameter's gradient,
    # torch 2.13): the real CPU step is measured by tensorview's subclass of it, which
    # hooks the trainable ones only (tv.memory(device="cpu"))
    frozen: bool = False


MOMENTUM = functools.partial(torch.optim.SGD, lr=0.1, momentum=0.9)
CASES: dict[str, Case] = {
    "mlp": Case(cm.MLP, lambda: torch.randn(4, 16)),
    "cnn_batchnorm": Case(cm.CNN, lambda: torch.randn(2, 3, 16, 16)),
    "resnet50": Case(
        cm.ResNet50, lambda: torch.randn(2, 3, 32, 32), {"optimizer": "sgd"}, {"make_opt": torch.optim.SGD}
    ),
    "vit": Case(
        lambda: hf_model("vit", **{**SMALL, "vocab_size": None}, image_size=32, patch_size=8),
        lambda: {"pixel_values": torch.randn(2, 3, 32, 32)},
    ),
    "gpt2_tied": Case(cm.tied_gpt2, lambda: LM),
    "llama": Case(llama, lambda: LM),
    "t5": Case(
        lambda: hf_model(
            "t5",
            "AutoModelForSeq2SeqLM",
            d_model=32,
            d_kv=8,
            d_ff=64,
            num_layers=2,
            num_heads=4,
            vocab_size=100,
            decoder_start_token_id=0,
            pad_token_id=0,
        ),
        lambda: LM,
    ),  # fmt: skip
    # grouped_mm's meta kernel takes bfloat16 only (torch 2.13): a float32 MoE fails on meta
    "mixtral_moe_bf16": Case(
        lambda: hf_model(
            "mixtral",
            "AutoModelForCausalLM",
            torch.bfloat16,
            **SMALL,
            num_key_value_heads=2,
            num_local_experts=4,
            num_experts_per_tok=2,
        ),
        lambda: LM,
    ),  # fmt: skip
    "diffusers_unet": Case(unet, lambda: (torch.randn(2, 3, 16, 16), torch.tensor([10, 20]))),
    "bert": Case(lambda: hf_model("bert", **SMALL), lambda: {"input_ids": IDS}),
    "qwen2": Case(lambda: hf_model("qwen2", "AutoModelForCausalLM", **SMALL, num_key_value_heads=2), lambda: LM),
    "mistral": Case(lambda: hf_model("mistral", "AutoModelForCausalLM", **SMALL, num_key_value_heads=2), lambda: LM),
    "lstm": Case(LSTMTagger, lambda: IDS),
    "conv_transpose_decoder": Case(ConvDecoder, lambda: torch.randn(4, 16)),
    "llama_lora": Case(lora_llama, lambda: LM, frozen=True),
    "llama_checkpointed": Case(
        functools.partial(llama, num_hidden_layers=4),
        lambda: llama_batch(seq=32),
        {"checkpointing": ["model.layers"]},
        by_hand=checkpointed_layers,
    ),
    "llama_bf16_autocast": Case(llama, lambda: LM, {"autocast": torch.bfloat16}, {"amp": torch.bfloat16}),
    "llama_adamw": Case(llama, lambda: LM, {"optimizer": "adamw"}, {"make_opt": torch.optim.AdamW}),
    "cnn_sgd_momentum": Case(
        cm.CNN, lambda: torch.randn(2, 3, 16, 16), {"optimizer": MOMENTUM}, {"make_opt": MOMENTUM}
    ),
    "llama_adafactor": Case(llama, lambda: LM, {"optimizer": "adafactor"}, {"make_opt": torch.optim.Adafactor}),
    "llama_accumulate_3": Case(llama, lambda: LM, {"accumulate": 3}, {"micro": 3}),
    "mlp_keep_grads_2_steps": Case(
        cm.MLP, lambda: torch.randn(4, 16), {"set_to_none": False, "steps": 2}, {"set_to_none": False, "steps": 2}
    ),
}


def as_call(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if isinstance(data, dict):
        return (), data
    return (tuple(data) if isinstance(data, tuple) else (data,)), {}


def test_there_are_twenty_models_and_set_ups() -> None:
    assert len(CASES) >= 20


@pytest.mark.parametrize("name", CASES)
def test_peak_on_meta_equals_the_real_cpu_step(name: str) -> None:
    case = CASES[name]
    model = case.model()
    data = case.inputs()
    report = tv.memory(model, input_data=data, **case.options)
    # autocast casts by device (meta tensors never are): it runs on fake tensors (step.py)
    assert report.device == ("fake tensors (FakeTensorMode)" if "autocast" in case.options else "meta")
    args, kwargs = as_call(data)
    runnable = case.by_hand(model) if case.by_hand is not None else model
    if case.frozen:
        # "cannot register a hook on a tensor that doesn't require gradient" (a warning first, as errors here)
        with pytest.raises((RuntimeError, UserWarning)):
            cpu_step_peak(runnable, args, kwargs, **case.reference)  # when this passes, compare with it
        expected = tv.memory(runnable, input_data=data, device="cpu", **case.options).peak_bytes
    else:
        expected = cpu_step_peak(runnable, args, kwargs, **case.reference)
    assert report.peak_bytes == expected


def test_lora_trains_the_adapters_only() -> None:
    model = lora_llama()
    adapters = [p for n, p in model.named_parameters() if "lora_" in n]
    assert adapters and all(p.requires_grad for p in adapters)
    assert all(not p.requires_grad for n, p in model.named_parameters() if "lora_" not in n)
    report = tv.memory(model, input_data=LM)
    trainable = 4 * sum(p.numel() for p in adapters)
    end = report.live_at(len(report.timeline) - 1)
    assert end["optimizer state"] == 2 * trainable + 4 * len(adapters)  # Adam's two moments and step of each adapter
    assert max(report.live_at(e.index)["gradient"] for e in report.timeline) == trainable
    assert report.at_peak["parameter"] == 4 * sum(p.numel() for p in model.parameters())


def test_adafactor_by_name_and_by_class_keeps_factored_state() -> None:
    model = llama()
    by_name = tv.memory(model, input_data=LM, optimizer="adafactor")
    by_class = tv.memory(model, input_data=LM, optimizer=torch.optim.Adafactor)
    assert by_name.device == "meta" and by_name.peak_bytes == by_class.peak_bytes
    assert by_name.peak_bytes == tv.memory(model, input_data=LM, optimizer="adafactor", device="cpu").peak_bytes
    # a matrix keeps a row and a column factor, a vector a full second moment, each a step counter
    expected = 0
    for p in model.parameters():
        expected += 4 * (sum(p.shape[-2:]) if p.dim() >= 2 else p.numel()) + 4
    assert by_name.live_at(len(by_name.timeline) - 1)["optimizer state"] == expected
    adam = tv.memory(model, input_data=LM).live_at(len(by_class.timeline) - 1)["optimizer state"]
    assert expected < adam

"""Benchmark models: each is built on meta and comes with its inputs (on meta too).

``CASES`` lists them in table order; ``Case.build()`` returns ``(model, inputs)`` where
``inputs`` is a dict of keyword arguments for ``model(**inputs)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

META = torch.device("meta")


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], tuple[nn.Module, dict[str, Any]]]
    #: timed runs after one warm-up (the huge ones get fewer)
    repeats: int = 5
    #: where model and inputs live ("meta", or "cpu" where meta ops would dominate)
    device: str = "meta"


# -- transformers architectures, full-size configs on meta ------------------------------------
def _transformer(
    model_type: str,
    auto: str = "AutoModel",
    build_kwargs: dict[str, Any] | None = None,
    inputs: Callable[[], dict[str, Any]] | None = None,
    device: torch.device = META,
    **config: Any,
) -> Callable[[], Any]:
    def build() -> tuple[nn.Module, dict[str, Any]]:
        import transformers

        torch.manual_seed(0)
        cfg = transformers.AutoConfig.for_model(model_type, **config)
        with torch.device(device):
            model = getattr(transformers, auto).from_config(cfg, **(build_kwargs or {}))
        model.eval()
        x = inputs() if inputs is not None else {"input_ids": torch.zeros(1, 128, dtype=torch.long, device=device)}
        return model, x

    return build


def _seq2seq() -> dict[str, Any]:
    return {
        "input_ids": torch.zeros(1, 128, dtype=torch.long, device=META),
        "decoder_input_ids": torch.zeros(1, 32, dtype=torch.long, device=META),
    }


LLAMA3_70B = dict(
    hidden_size=8192,
    intermediate_size=28672,
    num_hidden_layers=80,
    num_attention_heads=64,
    num_key_value_heads=8,
    vocab_size=128256,
    max_position_embeddings=8192,
    rope_theta=500000.0,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,
)
# Mixtral-8x7B shapes with 8 of its 32 layers; batched_mm is the experts kernel that runs on
# meta (the default grouped_mm wants bf16 there, the eager one routes on data)
MIXTRAL = dict(
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=8,
    num_attention_heads=32,
    num_key_value_heads=8,
    vocab_size=32000,
    num_local_experts=8,
    num_experts_per_tok=2,
)


# -- a very deep MLP ----------------------------------------------------------------------------
def deep_mlp(ops: int, width: int = 4) -> Callable[[], tuple[nn.Module, dict[str, Any]]]:
    """``ops`` recorded function calls: ``ops // 2`` blocks of Linear + ReLU, on the CPU with
    tiny widths (a meta op costs ~350 us of dispatch here, a 4x4 CPU linear ~10 us, so the
    CPU is the harder baseline for the recording overhead)."""

    def build() -> tuple[nn.Module, dict[str, Any]]:
        torch.manual_seed(0)
        layers: list[nn.Module] = []
        for _ in range(ops // 2):
            layers += [nn.Linear(width, width), nn.ReLU()]
        return nn.Sequential(*layers).eval(), {"input": torch.zeros(1, width)}

    return build


# -- DenseNet-201-like ----------------------------------------------------------------------------
class DenseLayer(nn.Module):
    def __init__(self, in_features: int, growth: int, bn_size: int) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(in_features)
        self.conv1 = nn.Conv2d(in_features, bn_size * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        x = torch.cat(features, 1)  # fed by every earlier output of the block
        x = self.conv1(torch.relu(self.norm1(x)))
        return self.conv2(torch.relu(self.norm2(x)))


class DenseBlock(nn.Module):
    def __init__(self, layers: int, in_features: int, growth: int, bn_size: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(DenseLayer(in_features + i * growth, growth, bn_size) for i in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, 1)


class Transition(nn.Sequential):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__(
            nn.BatchNorm2d(in_features),
            nn.ReLU(),
            nn.Conv2d(in_features, out_features, 1, bias=False),
            nn.AvgPool2d(2),
        )


class DenseNet(nn.Module):
    """DenseNet-BC (torchvision's layout) with DenseNet-201's block sizes by default."""

    def __init__(
        self,
        blocks: tuple[int, ...] = (6, 12, 48, 32),
        growth: int = 32,
        init: int = 64,
        bn_size: int = 4,
        classes: int = 1000,
    ) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, init, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(init),
            nn.ReLU(),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        stages: list[nn.Module] = []
        n = init
        for i, size in enumerate(blocks):
            stages.append(DenseBlock(size, n, growth, bn_size))
            n += size * growth
            if i < len(blocks) - 1:
                stages.append(Transition(n, n // 2))
                n //= 2
        self.features = nn.Sequential(*stages)
        self.norm = nn.BatchNorm2d(n)
        self.classifier = nn.Linear(n, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.norm(self.features(self.stem(x))))
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.classifier(x)


def densenet201() -> tuple[nn.Module, dict[str, Any]]:
    with torch.device(META):
        model = DenseNet()
    return model.eval(), {"x": torch.zeros(1, 3, 64, 64, device=META)}


def _replica(name: str) -> Callable[[], tuple[nn.Module, dict[str, Any]]]:
    def build() -> tuple[nn.Module, dict[str, Any]]:
        import replicas  # bench/replicas.py: torchvision-free copies of torchvision models

        return getattr(replicas, name)()

    return build


CASES = [
    Case("llama3-70b (80 layers)", _transformer("llama", **LLAMA3_70B), repeats=3),
    Case("gpt2 (124M)", _transformer("gpt2")),
    Case("bert-base", _transformer("bert")),
    Case("t5-small", _transformer("t5", inputs=_seq2seq)),
    Case(
        "mixtral-8x7b (8 layers)",
        _transformer("mixtral", build_kwargs=dict(experts_implementation="batched_mm"), **MIXTRAL),
    ),
    Case("densenet201-like", densenet201),
    Case("densenet201 (torchvision layout)", _replica("densenet201")),
    Case("raft_small (torchvision layout)", _replica("raft_small")),
    Case(
        "llama 4x256 (cpu)",
        _transformer(
            "llama",
            device=torch.device("cpu"),
            hidden_size=256,
            intermediate_size=512,
            num_hidden_layers=4,
            num_attention_heads=8,
            num_key_value_heads=2,
            vocab_size=1000,
        ),
        device="cpu",
    ),
    Case("densenet121 64x64 (cpu)", _replica("densenet121_cpu"), device="cpu"),
    Case("mlp 10k ops (cpu)", deep_mlp(10_000), repeats=3, device="cpu"),
    Case("mlp 100k ops (cpu)", deep_mlp(100_000), repeats=2, device="cpu"),
]

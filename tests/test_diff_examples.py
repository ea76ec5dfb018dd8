"""The worked examples of docs/diff.md as tests with exact expectations: two transformers
versions compared from saved graph JSONs, Llama vs Mistral vs Qwen2/Qwen3 configs, a port
of a hand-written GPT-2 block to transformers' class, and a module replaced under another
name (a substitution).  Eager vs export vs compile, LoRA and quantization are in
test_diff.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tensorview as tv

from .fixtures import needs
from .fixtures.cli import isolated_cli, run  # noqa: F401  (isolated_cli: autouse here)
from .fixtures.hf import written_for
from .test_diff import edits, expect

pytestmark = [written_for]  # transformers models built from tiny configs: their module paths and classes

CFG = dict(
    vocab_size=64,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
)
TOKENS = {"input_ids": torch.ones(1, 8, dtype=torch.long), "use_cache": False}


def hf(model: str, config: str, **changes: Any) -> nn.Module:
    transformers = pytest.importorskip("transformers", reason=needs.TRANSFORMERS)
    torch.manual_seed(0)
    return getattr(transformers, model)(getattr(transformers, config)(**{**CFG, **changes})).eval()


def test_two_versions_of_a_model_type_compared_from_saved_graphs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = tmp_path / "llama-old.json", tmp_path / "llama-new.json"
    tv.draw_graph(hf("LlamaModel", "LlamaConfig"), input_data=TOKENS).save(str(old))
    # the newer version simulated by a changed default: biases in the MLP's projections
    tv.draw_graph(hf("LlamaModel", "LlamaConfig", mlp_bias=True), input_data=TOKENS).save(str(new))
    d = tv.diff(str(old), str(new))
    assert edits(d) == expect(
        changed={f"layers.{i}.mlp.{p}_proj": ["params"] for i in (0, 1) for p in ("gate", "up", "down")}
    )
    assert d.lines()[0] == "layers.0–1.mlp.gate_proj: each params bias absent -> (64) (2,048 -> 2,112 parameters)"
    code, out, _ = run(capsys, "diff", str(old), str(new))
    assert code == 1 and out.splitlines()[1:] == [f"  {line}" for line in d.lines()]
    assert tv.diff(str(old), str(old)).identical


@pytest.fixture(scope="module")
def llama() -> Any:
    return tv.draw_graph(hf("LlamaModel", "LlamaConfig"), input_data=TOKENS, source=False)


def test_qwen2_differs_from_llama_by_the_qkv_biases(llama: Any) -> None:
    d = tv.diff(llama, hf("Qwen2Model", "Qwen2Config"), input_data=TOKENS, ignore="class")
    assert edits(d) == expect(
        changed={f"layers.{i}.self_attn.{p}_proj": ["params"] for i in (0, 1) for p in ("q", "k", "v")}
    )
    classes = {
        c.a: c.differences[0].detail for c in tv.diff(llama, hf("Qwen2Model", "Qwen2Config"), input_data=TOKENS).changed
    }
    assert classes[""] == "LlamaModel -> Qwen2Model" and classes["layers.0"] == "LlamaDecoderLayer -> Qwen2DecoderLayer"


def test_qwen3_adds_the_qk_norms(llama: Any) -> None:
    d = tv.diff(llama, hf("Qwen3Model", "Qwen3Config", head_dim=8), input_data=TOKENS, ignore="class")
    assert edits(d) == expect(added=[f"layers.{i}.self_attn.{n}_norm" for i in (0, 1) for n in ("q", "k")])


def test_mistral_differs_from_llama_by_the_order_of_the_layers_arguments(llama: Any) -> None:
    d = tv.diff(llama, hf("MistralModel", "MistralConfig"), input_data=TOKENS, ignore="class")
    assert edits(d) == expect(changed={f"layers.{i}": ["order"] for i in (0, 1)})
    # b's inputs are a's hidden states, position ids, then the rotary cos and sin
    assert d.lines() == ["layers.0–1: each order inputs as a's 0, 3, 1, 2"]
    assert tv.diff(llama, hf("MistralModel", "MistralConfig"), input_data=TOKENS, ignore="class,order").identical


# -- a port of a hand-written GPT-2 block (nanoGPT's layout) to transformers' GPT2Block --
class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.c_attn, self.c_proj, self.heads = nn.Linear(d, 3 * d), nn.Linear(d, d), heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, d))


class MLP(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.c_fc, self.gelu, self.c_proj = nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.gelu(self.c_fc(x)))


class GPTBlock(nn.Module):
    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(d), CausalSelfAttention(d, heads)
        self.ln_2, self.mlp = nn.LayerNorm(d), MLP(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


def gpt2_block() -> nn.Module:
    transformers = pytest.importorskip("transformers", reason=needs.TRANSFORMERS)
    cfg = transformers.GPT2Config(n_embd=32, n_head=4, n_layer=1, vocab_size=64, attn_implementation="sdpa")
    return transformers.models.gpt2.modeling_gpt2.GPT2Block(cfg, layer_idx=0).eval()


def test_a_port_of_a_hand_written_gpt2_block_names_what_the_port_changes() -> None:
    d = tv.diff(GPTBlock(), gpt2_block(), input_size=(1, 8, 32))
    conv = ["class", "ops", "params"]
    assert edits(d) == expect(
        added=["attn.resid_dropout", "mlp.dropout"],
        renamed=[("mlp.gelu", "mlp.act")],
        changed={
            "": ["class"],
            "attn": ["class", "ops"],
            "attn.c_attn": conv,
            "attn.c_proj": ["class", "ops"],  # a square weight: transposed, the same shape
            "mlp": ["class"],
            "mlp.c_fc": conv,
            "mlp.gelu": ["class", "ops"],
            "mlp.c_proj": conv,
        },
    )
    details = {c.a: [x.detail for x in c.differences] for c in d.changed}
    assert details["attn.c_attn"][:2] == ["Linear -> Conv1D", "weight (96, 32) -> (32, 96) (3,168 -> 3,168 parameters)"]
    assert details["mlp.gelu"][0] == "GELU -> NewGELUActivation"
    # the same block against itself, and the port against a port
    assert tv.diff(gpt2_block(), gpt2_block(), input_size=(1, 8, 32)).identical


# -- a substitution: one module replaced by another under another name -----------------
class Head(nn.Module):
    def __init__(self, name: str, act: nn.Module, width: int = 8) -> None:
        super().__init__()
        self.name = name
        self.fc = nn.Linear(8, 8)
        self.add_module(name, act)
        self.out = nn.Linear(width, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(getattr(self, self.name)(self.fc(x)))


def test_a_module_replaced_under_another_name_is_renamed_and_changed() -> None:
    d = tv.diff(Head("relu", nn.ReLU()), Head("act", nn.SiLU()), input_size=(2, 8))
    assert edits(d) == expect(renamed=[("relu", "act")], changed={"relu": ["class", "ops"]})
    assert d.lines() == ["renamed relu -> act", "relu: class ReLU -> SiLU; ops 1 changed (relu -> silu)"]


def test_a_replacement_with_other_shapes_is_removed_and_added() -> None:
    d = tv.diff(Head("relu", nn.ReLU()), Head("proj", nn.Linear(8, 4), width=4), input_size=(2, 8))
    assert d.removed == ["relu"] and d.added == ["proj"] and not d.renamed

"""More injected edits in real architectures (GPT-2, BERT, Qwen2, Llama built offline from
tiny configs), each reported exactly and the other way round, more pairs of one
architecture built differently, and the counts the issue asks for: at least 30 distinct
injected edits and 30 same-architecture pairs across test_diff.py and this file."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv

from .fixtures import needs
from .fixtures.diff_models import IDS as TINY_IDS
from .fixtures.diff_models import Spec, Tiny
from .fixtures.hf import written_for
from .test_diff import HF_EDITS, HF_SAME, SAME, TINY_EDITS, TINY_LLAMA, TOKENS, edits, expect, llama

pytestmark = [written_for]  # transformers models built from tiny configs: their module paths

IDS = {"input_ids": torch.ones(1, 8, dtype=torch.long), "use_cache": False}


def _hf(model: str, config: str, base: dict[str, Any], **changes: Any) -> nn.Module:
    transformers = pytest.importorskip("transformers", reason=needs.TRANSFORMERS)
    torch.manual_seed(0)
    return getattr(transformers, model)(getattr(transformers, config)(**{**base, **changes})).eval()


def gpt2(**changes: Any) -> nn.Module:
    return _hf("GPT2LMHeadModel", "GPT2Config", dict(vocab_size=64, n_embd=32, n_layer=2, n_head=4), **changes)


def bert(**changes: Any) -> nn.Module:
    base = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
    return _hf("BertModel", "BertConfig", base, **changes)


def qwen2(**changes: Any) -> nn.Module:
    return _hf("Qwen2ForCausalLM", "Qwen2Config", TINY_LLAMA, **changes)


def gpt2_one_act() -> nn.Module:
    m = gpt2()
    m.transformer.h[1].mlp.act = nn.ReLU()
    return m


def gpt2_mlp_renamed() -> nn.Module:
    """Each block's ``mlp`` held as ``ffn`` (the block reads it through a property; the
    class keeps its name)."""
    m = gpt2()
    for block in m.transformer.h:
        cls = type(block)
        block.__class__ = type(cls.__name__, (cls,), {"mlp": property(lambda s: s.ffn)})
        block.ffn = block._modules.pop("mlp")
    return m


def bert_one_act() -> nn.Module:
    m = bert()
    m.encoder.layer[0].intermediate.intermediate_act_fn = nn.SiLU()
    return m


def llama_no_mlp_residual() -> nn.Module:
    """Layer 1 of a Llama without the residual around its MLP (the class keeps its name)."""
    m = llama()
    layer = m.model.layers[1]
    base: Any = type(layer)

    class NoResidual(base):  # type: ignore[misc,valid-type]
        def forward(  # the signature and the call of LlamaDecoderLayer.forward, one add less
            self,
            hidden_states: torch.Tensor,
            attention_mask: Any = None,
            position_ids: Any = None,
            cache: Any = None,
            use_cache: Any = False,
            position_embeddings: Any = None,
            **kwargs: Any,
        ) -> torch.Tensor:
            residual = hidden_states
            h, _ = self.self_attn(
                hidden_states=self.input_layernorm(hidden_states),
                attention_mask=attention_mask,
                position_ids=position_ids,
                cache=cache,
                use_cache=use_cache,
                position_embeddings=position_embeddings,
                **kwargs,
            )
            return self.mlp(self.post_attention_layernorm(residual + h))

    NoResidual.__name__ = NoResidual.__qualname__ = base.__name__
    layer.__class__ = NoResidual
    return m


def llama_head_bias() -> nn.Module:
    m = llama()
    m.lm_head = nn.Linear(32, 64, bias=True)
    return m


#: name -> (make a, make b, inputs, what diff(a, b) reports)
MORE_EDITS: dict[str, tuple[Callable[[], nn.Module], Callable[[], nn.Module], Any, dict[str, Any]]] = {
    "gpt2: one layer's activation": (
        gpt2,
        gpt2_one_act,
        IDS,
        expect(changed={"transformer.h.1.mlp.act": ["class", "ops"]}),
    ),
    "gpt2: a layer removed": (gpt2, lambda: gpt2(n_layer=1), IDS, expect(removed=["transformer.h.1"])),
    "gpt2: a module renamed": (
        gpt2,
        gpt2_mlp_renamed,
        IDS,
        expect(renamed=[(f"transformer.h.{i}.mlp", f"transformer.h.{i}.ffn") for i in (0, 1)]),
    ),
    "bert: one layer's activation": (
        bert,
        bert_one_act,
        IDS,
        expect(changed={"encoder.layer.0.intermediate.intermediate_act_fn": ["class", "ops"]}),
    ),
    "bert: heads": (
        bert,
        lambda: bert(num_attention_heads=2),
        IDS,
        expect(changed={f"encoder.layer.{i}.attention.self": ["ops"] for i in (0, 1)}),
    ),
    "qwen2: key/value heads": (
        qwen2,
        lambda: qwen2(num_key_value_heads=1),
        TOKENS,
        expect(
            changed={
                f"model.layers.{i}.self_attn{p}": kinds
                for i in (0, 1)
                for p, kinds in (
                    ("", ["ops"]),
                    (".k_proj", ["ops", "params", "shape"]),
                    (".v_proj", ["ops", "params", "shape"]),
                )
            }
        ),
    ),
    "llama: a residual removed": (llama, llama_no_mlp_residual, TOKENS, expect(changed={"model.layers.1": ["ops"]})),
    "llama: lm_head with a bias": (llama, llama_head_bias, TOKENS, expect(changed={"lm_head": ["params"]})),
}


@pytest.mark.parametrize("name", list(MORE_EDITS))
def test_an_edit_injected_in_a_real_architecture_is_reported_exactly(name: str) -> None:
    make_a, make_b, inputs, expected = MORE_EDITS[name]
    d = tv.diff(make_a(), make_b(), input_data=inputs)
    assert edits(d) == expected, str(d)
    back = tv.diff(make_b(), make_a(), input_data=inputs)
    assert sorted(back.added) == sorted(expected["removed"]) and sorted(back.removed) == sorted(expected["added"])
    assert sorted(back.renamed) == sorted((b, a) for a, b in expected["renamed"])
    assert sorted(c.b for c in back.changed) == sorted(expected["changed"])


def test_there_are_at_least_30_distinct_injected_edits() -> None:
    names = [*TINY_EDITS, *HF_EDITS, *MORE_EDITS, "a sequential reordered"]  # the last: test_diff.py
    assert len(set(names)) == len(names) >= 30


# -- the same architecture built differently: more pairs ---------------------------------
def _frozen() -> nn.Module:
    m = Tiny(Spec())
    m.requires_grad_(False)
    return m


#: name -> (make b, renames); a is Tiny(Spec())
MORE_SAME: dict[str, tuple[Callable[[], Any], list[tuple[str, str]]]] = {
    "torch.export of it": (lambda: torch.export.export(Tiny(Spec()), (TINY_IDS,)), []),
    "frozen parameters": (_frozen, []),
    "renamed, built in reverse, recorded on the cpu": (
        lambda: tv.draw_graph(Tiny(Spec(layers_name="blocks", reverse_build=True)), input_data=TINY_IDS, device="cpu"),
        [(f"layers.{i}", f"blocks.{i}") for i in (0, 1)],
    ),
}


@pytest.mark.parametrize("name", list(MORE_SAME))
def test_more_of_the_same_architecture_built_differently(name: str) -> None:
    make, renames = MORE_SAME[name]
    d = tv.diff(Tiny(Spec()), make(), input_data=TINY_IDS)
    assert d.same_structure and d.renamed == renames, str(d)


def test_there_are_at_least_30_pairs_of_the_same_architecture() -> None:
    # test_diff.py: SAME, HF_SAME built three ways, eager vs export and vs compile
    pairs = [*SAME, *(f"{m} {how}" for m in HF_SAME for how in range(3)), "export", "compile", *MORE_SAME]
    assert len(set(pairs)) == len(pairs) >= 30

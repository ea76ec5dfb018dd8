"""A sweep for wrong graphs: transformers architectures from small configs (no download),
each recorded with ``draw_graph`` on the CPU and on meta, and judged by independent means
(bench/judge.py, shared with sweep_vision.py).  For every architecture (the model in
training mode, recorded in ``eval``: a copy):

* the ops recorded on the CPU and on meta are the same (names and counts, then order and
  module paths);
* the graph's output shapes are the plain forward's;
* every parameter that gets a gradient in a plain forward and backward is drawn (or the
  graph warns);
* ``lint()`` passes, and the model is unchanged afterwards (parameter objects and values,
  buffers, training flags, hooks).

``KNOWN`` lists what is expected to differ, with the reason.  Run it from the repository
root: ``PYTHONPATH=$PWD python bench/sweep.py [--full] [--heads] [model_type ...]``; it prints one line per
architecture and exits 1 when a problem not in ``KNOWN`` was found (124 architectures, about 45 s here:
114 ok, 10 known).
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
import transformers
from judge import PLAIN_FAILS, judge, outputs  # bench/judge.py: the checks, shared with sweep_vision.py

#: config fields set where the config has them (each family names them its own way)
SMALL: dict[str, Any] = dict(
    hidden_size=32,
    n_embd=32,
    d_model=32,
    dim=32,
    n_embed=32,
    num_hidden_layers=2,
    n_layer=2,
    num_layers=2,
    n_layers=2,
    encoder_layers=2,
    decoder_layers=2,
    num_decoder_layers=2,
    num_attention_heads=4,
    n_head=4,
    n_heads=4,
    num_heads=4,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=64,
    n_inner=64,
    ffn_dim=64,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
    d_ff=64,
    hidden_dim=64,
    d_kv=8,
    head_dim=8,
    vocab_size=100,
    max_position_embeddings=64,
    n_positions=64,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
    decoder_start_token_id=0,
    use_cache=False,
)

Inputs = Callable[[], dict[str, torch.Tensor]]


def ids(n: int = 8) -> Inputs:
    return lambda: {"input_ids": torch.randint(3, 100, (1, n))}


def s2s() -> dict[str, torch.Tensor]:
    return {"input_ids": torch.randint(3, 100, (1, 8)), "decoder_input_ids": torch.randint(3, 100, (1, 5))}


def pix(size: int = 32) -> Inputs:
    return lambda: {"pixel_values": torch.randn(1, 3, size, size)}


def text_image() -> dict[str, torch.Tensor]:
    return {"input_ids": torch.randint(3, 100, (1, 8)), "pixel_values": torch.randn(1, 3, 32, 32)}


def video() -> dict[str, torch.Tensor]:
    return {"pixel_values": torch.randn(1, 4, 3, 32, 32)}


def wav() -> dict[str, torch.Tensor]:
    return {"input_values": torch.randn(1, 1600)}


def whisper() -> dict[str, torch.Tensor]:
    return {"input_features": torch.randn(1, 80, 3000), "decoder_input_ids": torch.randint(3, 100, (1, 5))}


def speech() -> dict[str, torch.Tensor]:
    return {"input_features": torch.randn(1, 60, 80), "decoder_input_ids": torch.randint(3, 100, (1, 5))}


_STAGES = dict(hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1])
_CONV = dict(conv_dim=[8, 8], conv_stride=[5, 4], conv_kernel=[10, 4], num_feat_extract_layers=2)
_CONV.update(num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=2)
_MOE = dict(num_local_experts=4, num_experts_per_tok=2)

#: model_type -> (config fields beyond SMALL, inputs)
ARCHS: dict[str, tuple[dict[str, Any], Inputs]] = {
    # decoder-only
    **{
        name: ({}, ids())
        for name in [
            "gpt2",
            "gpt_neox",
            "opt",
            "bloom",
            "falcon",
            "mpt",
            "llama",
            "mistral",
            "qwen2",
            "qwen3",
            "phi",
            "phi3",
            "gemma",
            "gemma2",
            "stablelm",
            "olmo",
            "olmo2",
            "starcoder2",
            "cohere",
            "persimmon",
            "xglm",
            "biogpt",
            "ctrl",
            "granite",
            "gpt_bigcode",
            "glm",
            "glm4",
            "nemotron",
            "helium",
            "exaone4",
            "smollm3",
            "arcee",
            "ernie4_5",
            "seed_oss",
            "hunyuan_v1_dense",
            "gpt_neox_japanese",
        ]
    },
    "gpt_neo": (dict(attention_types=[[["global", "local"], 1]], window_size=4), ids()),
    "gptj": (dict(rotary_dim=4), ids()),
    "codegen": (dict(rotary_dim=4, n_ctx=64), ids()),
    # encoders
    **{
        name: ({}, ids())
        for name in [
            "bert",
            "roberta",
            "deberta",
            "deberta-v2",
            "ernie",
            "camembert",
            "xlm-roberta",
            "nystromformer",
            "canine",
            "fnet",
            "xlnet",
            "megatron-bert",
            "roformer",
            "layoutlm",
            "mpnet",
            "ibert",
            "esm",
            "data2vec-text",
            "splinter",
            "mra",
            "yoso",
            "markuplm",
        ]
    },
    "albert": (dict(embedding_size=16), ids()),
    "electra": (dict(embedding_size=16), ids()),
    "convbert": (dict(embedding_size=32), ids()),
    "squeezebert": (dict(embedding_size=32), ids()),
    "mobilebert": (dict(embedding_size=16, intra_bottleneck_size=16, true_hidden_size=16), ids()),
    "rembert": (dict(input_embedding_size=16, output_embedding_size=16), ids()),
    "longformer": (dict(attention_window=4), ids()),
    "big_bird": (dict(attention_type="block_sparse", block_size=2, num_random_blocks=1), ids(32)),
    "modernbert": (dict(global_attn_every_n_layers=2, local_attention=4), ids()),
    "xlm": (dict(emb_dim=32), ids()),
    "flaubert": (dict(emb_dim=32), ids()),
    "xmod": (dict(languages=["en_XX"], default_language="en_XX"), ids()),
    # encoder-decoder
    **{
        name: ({}, s2s)
        for name in ["t5", "mt5", "umt5", "bart", "mbart", "pegasus", "marian", "blenderbot", "prophetnet", "m2m_100"]
    },
    "led": (dict(attention_window=4), s2s),
    "switch_transformers": (dict(num_experts=4), s2s),
    # mixture of experts, state space, recurrent
    "mixtral": (_MOE, ids()),
    "phimoe": (_MOE, ids()),
    "granitemoe": (_MOE, ids()),
    "gpt_oss": (_MOE, ids()),
    "qwen2_moe": (
        dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=32),
        ids(),
    ),
    "qwen3_moe": (dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32), ids()),
    "olmoe": (dict(num_experts=4, num_experts_per_tok=2), ids()),
    "jamba": (
        dict(
            num_experts=2,
            num_experts_per_tok=1,
            mamba_d_state=8,
            mamba_dt_rank=4,
            expert_layer_period=2,
            attn_layer_period=2,
            attn_layer_offset=1,
        ),
        ids(),
    ),
    "mamba": (dict(state_size=8, expand=2, time_step_rank=4), ids()),
    "falcon_mamba": (dict(state_size=8, expand=2, time_step_rank=4), ids()),
    "mamba2": (dict(state_size=8, expand=2, n_groups=1, num_heads=8, head_dim=8, chunk_size=4), ids()),
    "rwkv": (dict(attention_hidden_size=32, context_length=64), ids()),
    "recurrent_gemma": (dict(lru_width=32, attention_window_size=8, block_types=["recurrent", "attention"]), ids()),
    # vision, video, audio, text and image
    **{
        name: (dict(image_size=32, patch_size=8), pix())
        for name in ["vit", "deit", "beit", "dinov2", "data2vec-vision"]
    },
    "yolos": (dict(image_size=[32, 32], patch_size=8, num_detection_tokens=4), pix()),
    "convnext": (dict(_STAGES, num_stages=4), pix()),
    "resnet": (dict(_STAGES, embedding_size=8), pix()),
    "poolformer": (_STAGES, pix()),
    "regnet": ({}, pix()),
    "levit": (dict(image_size=64), pix(64)),
    "mobilenet_v2": (dict(image_size=32), pix()),
    "efficientnet": (dict(image_size=32, hidden_dim=2560), pix()),
    "swin": (dict(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4), pix()),
    "mobilevit": (dict(image_size=32, hidden_sizes=[16, 16, 16], neck_hidden_sizes=[8, 8, 16, 16, 16, 16, 32]), pix()),
    "segformer": (dict(_STAGES, decoder_hidden_size=32, num_attention_heads=[1, 1, 2, 2]), pix()),
    "glpn": (dict(_STAGES, decoder_hidden_size=32, num_attention_heads=[1, 1, 2, 2]), pix()),
    "pvt": (dict(_STAGES, num_attention_heads=[1, 1, 2, 2], image_size=32), pix()),
    "videomae": (dict(image_size=32, patch_size=8, num_frames=4, tubelet_size=2), video),
    "timesformer": (dict(image_size=32, patch_size=8, num_frames=4), video),
    "wav2vec2": (_CONV, wav),
    "hubert": (_CONV, wav),
    "whisper": (dict(num_mel_bins=80, max_source_positions=1500, max_target_positions=64), whisper),
    "speech_to_text": (dict(input_feat_per_channel=80, conv_channels=16, max_source_positions=64), speech),
    "clip": ({}, text_image),
    "owlvit": ({}, text_image),
}

#: model_type -> (what is expected to differ, why)
KNOWN: dict[str, tuple[str, str]] = {
    **{
        name: (
            "ops cpu!=meta",
            "the experts kernel branches on the device: histc of .float() ids on the CPU, .int() elsewhere",
        )
        for name in ["mixtral", "phimoe", "granitemoe", "gpt_oss", "qwen2_moe", "qwen3_moe", "olmoe", "jamba"]
    },
    "switch_transformers": (
        PLAIN_FAILS,
        "expert routing indexes by a mask (nonzero): device='fake' records it",
    ),
    "xmod": (PLAIN_FAILS, "language adapters select rows by a mask (nonzero): device='fake' records it"),
}


def small(cfg: Any, extra: dict[str, Any]) -> Any:
    """``cfg`` with the fields of ``SMALL`` it has and ``extra``; sub-configs (text,
    vision) shrunk too."""
    for k, v in {**SMALL, **extra}.items():
        if hasattr(cfg, k) or k in extra:
            with contextlib.suppress(Exception):  # a field this family validates otherwise: left as it is
                setattr(cfg, k, v)
    for k in list(vars(cfg)):
        sub = getattr(cfg, k)
        if k.endswith("_config") and isinstance(sub, transformers.PretrainedConfig):
            small(sub, {f: v for f, v in (("image_size", 32), ("patch_size", 8)) if hasattr(sub, f)})
    return cfg


#: with ``--heads``: each architecture also with every task head it has (tied embeddings,
#: poolers, classifier heads); a head whose plain forward cannot run on the sweep's inputs
#: (a QA model wanting separator tokens, a config field the shrinking missed) is skipped
HEADS = (
    "AutoModelForCausalLM",
    "AutoModelForMaskedLM",
    "AutoModelForSeq2SeqLM",
    "AutoModelForSequenceClassification",
    "AutoModelForTokenClassification",
    "AutoModelForQuestionAnswering",
    "AutoModelForImageClassification",
)


def check(name: str, full: bool = False, auto: str = "AutoModel") -> list[str]:
    extra, inputs = ARCHS[name]
    torch.manual_seed(0)
    model = getattr(transformers, auto).from_config(small(transformers.AutoConfig.for_model(name), extra))
    x = inputs()
    return judge(model, x) + (outputs(model, x) if full else [])


def runs(name: str, auto: str) -> bool:
    """Whether the plain forward of ``name`` with head ``auto`` runs on the sweep's inputs."""
    extra, inputs = ARCHS[name]
    try:
        model = getattr(transformers, auto).from_config(small(transformers.AutoConfig.for_model(name), extra))
        with torch.no_grad():
            model.eval()(**inputs())
    except Exception:  # noqa: BLE001 - no such head, or inputs it does not take
        return False
    return True


def main(names: list[str]) -> int:
    flags = {"--full", "--heads"} & set(names)  # --full: judge.py ``outputs`` too; --heads: ``HEADS``
    names = [n for n in names if n not in flags]
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    new = 0
    for name in names or list(ARCHS):
        for auto in ("AutoModel", *(HEADS if "--heads" in flags else ())):
            if auto != "AutoModel" and not runs(name, auto):
                continue
            start = time.perf_counter()
            try:
                problems = check(name, "--full" in flags, auto)
            except Exception as e:  # noqa: BLE001 - a config this sweep could not build: reported
                problems = [f"setup: {type(e).__name__}: {str(e)[:160]}"]
            known = KNOWN.get(name)
            expected = known is not None and all(p.startswith(known[0]) for p in problems)
            own = not expected and problems and all(p.startswith(PLAIN_FAILS) for p in problems)
            new += bool(problems) and not expected and not own
            verdict = "ok" if not problems else f"known ({known[1]})" if expected and known else " | ".join(problems)
            verdict = f"the model's own: {verdict}" if own else verdict
            label = name if auto == "AutoModel" else f"{name} {auto.removeprefix('AutoModelFor')}"
            print(f"{label:40s} {time.perf_counter() - start:5.1f}s  {verdict}", flush=True)
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

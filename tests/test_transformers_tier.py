"""Real architectures from ``transformers``, built from tiny configs (no download).

Each architecture is recorded twice:

* on the CPU with real inputs: the output with and without recording must be identical,
  and the structure of the graph is checked against an unrecorded run;
* on meta (model built under ``torch.device("meta")``, inputs on meta), where the plain
  forward supports it.  Where it does not, the test asserts that the *plain* forward
  raises on meta, so the exemption is checked rather than assumed: if a later
  ``transformers`` makes the model meta-friendly, the test fails and asks for the case to
  be recorded on meta as well.

The structural checks: ``lint()`` passes; every module call a global forward pre-hook sees
during an unrecorded run is a ModuleNode with the same qualified path, in the same order;
inputs and outputs are listed with the real shapes; matrix-multiply-like function nodes
exist; every decoder/encoder layer has its ModuleNode.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import torch
import transformers  # a dev dependency: `make test` installs it
from torch import nn

from tensorview.graph import Graph
from tensorview.recording import Recorder
from tensorview.transform import ViewOptions, build_view

from .fixtures.hf import cache_field, written_for
from .test_transform_models import check as check_view

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)

Inputs = Callable[[str], dict[str, torch.Tensor]]

#: ops that carry the weights of a layer; every architecture here uses at least one
MATMUL_OPS = frozenset({"linear", "matmul", "bmm", "baddbmm", "addmm", "mm", "einsum", "conv1d", "conv2d"})


def token_ids(length: int = 8) -> Inputs:
    return lambda device: {"input_ids": torch.randint(0, 100, (1, length), device=device)}


def seq2seq_ids(device: str) -> dict[str, torch.Tensor]:
    return {
        "input_ids": torch.randint(0, 100, (1, 8), device=device),
        "decoder_input_ids": torch.randint(0, 100, (1, 5), device=device),
    }


def pixels(device: str) -> dict[str, torch.Tensor]:
    return {"pixel_values": torch.randn(1, 3, 32, 32, device=device)}


@dataclasses.dataclass(frozen=True)
class Arch:
    model_type: str
    config: dict[str, Any]
    inputs: Inputs
    #: module paths that must be recorded (one per layer, or per stage)
    layers: tuple[str, ...]
    auto: str = "AutoModel"
    #: why the plain forward cannot run on meta ("" when it can)
    no_meta: str = ""
    #: extra ``from_config`` arguments for the meta build
    meta_build: dict[str, Any] = dataclasses.field(default_factory=dict)


# tiny decoder/encoder settings shared by the Llama-style configs
TINY = dict(
    num_hidden_layers=2,
    hidden_size=32,
    intermediate_size=64,
    num_attention_heads=4,
    vocab_size=100,
    max_position_embeddings=64,
)
SEQ2SEQ = dict(
    d_model=32,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
    vocab_size=100,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
    decoder_start_token_id=3,
)
# MoE on meta: the plain forward fails with the default experts kernel (grouped_mm wants bf16
# on meta) and with the eager one (data-dependent routing calls .item()), so the meta build
# uses experts_implementation="batched_mm", which is data-independent; the CPU build keeps
# the default kernel (see test_moe_meta_needs_the_batched_kernel; recording alone needs no
# batched_mm on meta, see test_metafills.py, but this test compares with the plain forward)

ARCHS = [
    # decoder-only
    Arch("llama", dict(TINY, num_key_value_heads=2), token_ids(), ("layers.0", "layers.1")),
    Arch(
        "gpt2",
        dict(n_layer=2, n_embd=32, n_head=4, vocab_size=100, n_positions=64, bos_token_id=0, eos_token_id=0),
        token_ids(),
        ("transformer.h.0", "transformer.h.1", "lm_head"),
        auto="AutoModelForCausalLM",
    ),
    Arch("mistral", dict(TINY, num_key_value_heads=2), token_ids(), ("layers.0", "layers.1")),
    Arch("qwen2", dict(TINY, num_key_value_heads=2), token_ids(), ("layers.0", "layers.1")),
    Arch("phi", dict(TINY), token_ids(), ("layers.0", "layers.1")),
    Arch("gemma", dict(TINY, num_key_value_heads=2, head_dim=8), token_ids(), ("layers.0", "layers.1")),
    # encoders
    Arch("bert", dict(TINY), token_ids(), ("encoder.layer.0", "encoder.layer.1", "pooler")),
    Arch("roberta", dict(TINY), token_ids(), ("encoder.layer.0", "encoder.layer.1")),
    Arch(
        "distilbert",
        dict(n_layers=2, dim=32, hidden_dim=64, n_heads=4, vocab_size=100, max_position_embeddings=64),
        token_ids(),
        ("transformer.layer.0", "transformer.layer.1"),
    ),
    # encoder-decoder
    Arch(
        "t5",
        dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, vocab_size=100, use_cache=False),
        seq2seq_ids,
        ("encoder.block.0", "encoder.block.1", "decoder.block.0", "decoder.block.1"),
    ),
    Arch(
        # mixture of experts that formats a routing tensor into a ModuleDict key
        "switch_transformers",
        dict(
            d_model=32,
            d_kv=8,
            d_ff=64,
            num_layers=2,
            num_decoder_layers=2,
            num_heads=4,
            vocab_size=100,
            num_experts=4,
            use_cache=False,
        ),
        seq2seq_ids,
        ("encoder.block.0", "encoder.block.1", "decoder.block.0", "decoder.block.1"),
    ),
    Arch(
        "bart",
        dict(SEQ2SEQ, max_position_embeddings=64),
        seq2seq_ids,
        ("encoder.layers.0", "encoder.layers.1", "decoder.layers.0", "decoder.layers.1"),
        # the causal-mask helper asks `padding_mask.all()` for a Python bool
        no_meta="plain forward calls Tensor.item() in transformers' sdpa mask helper",
    ),
    # mixture of experts
    Arch(
        "mixtral",
        dict(TINY, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2),
        token_ids(),
        ("layers.0.mlp", "layers.0.mlp.gate", "layers.0.mlp.experts", "layers.1.mlp.experts"),
        meta_build=dict(experts_implementation="batched_mm"),
    ),
    Arch(
        "qwen2_moe",
        dict(
            TINY,
            num_key_value_heads=2,
            num_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            shared_expert_intermediate_size=32,
        ),
        token_ids(),
        ("layers.0.mlp.experts", "layers.0.mlp.shared_expert", "layers.1.mlp.experts"),
        meta_build=dict(experts_implementation="batched_mm"),
    ),
    # state space
    Arch(
        "mamba",
        dict(
            hidden_size=32,
            state_size=8,
            num_hidden_layers=2,
            vocab_size=100,
            expand=2,
            conv_kernel=4,
            time_step_rank=4,
            use_cache=False,
        ),
        token_ids(),
        ("layers.0", "layers.0.mixer", "layers.1.mixer"),
    ),
    # vision
    Arch(
        "vit",
        dict(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            image_size=32,
            patch_size=8,
        ),
        pixels,
        ("embeddings.patch_embeddings", "layers.0", "layers.1"),
    ),
    Arch(
        "convnext",
        dict(hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 2, 1], image_size=32),
        pixels,
        ("encoder.stages.0", "encoder.stages.2.layers.1", "encoder.stages.3"),
    ),
    Arch(
        "resnet",
        dict(embedding_size=8, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1], num_labels=10),
        pixels,
        ("resnet.encoder.stages.0", "resnet.encoder.stages.3", "classifier"),
        auto="AutoModelForImageClassification",
    ),
    # audio
    Arch(
        "whisper",
        dict(SEQ2SEQ, num_mel_bins=16, max_source_positions=16, max_target_positions=32),
        lambda device: {
            "input_features": torch.randn(1, 16, 32, device=device),
            "decoder_input_ids": torch.randint(0, 100, (1, 5), device=device),
        },
        ("encoder.conv1", "encoder.layers.0", "encoder.layers.1", "decoder.layers.0", "decoder.layers.1"),
    ),
    Arch(
        "wav2vec2",
        dict(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            conv_dim=(16, 16),
            conv_stride=(5, 2),
            conv_kernel=(10, 3),
            num_feat_extract_layers=2,
            num_conv_pos_embeddings=16,
            num_conv_pos_embedding_groups=2,
            vocab_size=32,
        ),
        lambda device: {"input_values": torch.randn(1, 1600, device=device)},
        ("feature_extractor.conv_layers.0", "encoder.layers.0", "encoder.layers.1"),
    ),
]
ARCH_IDS = [a.model_type for a in ARCHS]


def build(arch: Arch, device: str, **build_kwargs: Any) -> nn.Module:
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(arch.model_type, **arch.config)
    auto = getattr(transformers, arch.auto)
    with torch.device(device):
        model = auto.from_config(config, **build_kwargs)
    return model.eval()


def flat_tensors(obj: Any, *, objects: bool = False) -> list[torch.Tensor]:
    """Tensors of a (nested) output in traversal order, each object once.  ``objects`` also
    walks attributes of other objects (a KV cache such as ``DynamicCache``)."""
    found: dict[int, torch.Tensor] = {}
    seen: set[int] = set()

    def visit(o: Any, depth: int) -> None:
        if isinstance(o, torch.Tensor):
            found.setdefault(id(o), o)
            return
        if depth > 8 or id(o) in seen or isinstance(o, (str, bytes, int, float, bool, type(None))):
            return
        seen.add(id(o))
        if isinstance(o, dict):
            for v in o.values():
                visit(v, depth + 1)
        elif isinstance(o, (list, tuple)):
            for v in o:
                visit(v, depth + 1)
        elif objects and isinstance(getattr(o, "__dict__", None), dict) and not callable(o):
            for v in vars(o).values():
                visit(v, depth + 1)

    visit(obj, 0)
    return list(found.values())


def module_calls(model: nn.Module, inputs: dict[str, torch.Tensor]) -> tuple[list[str], Any]:
    """Qualified paths of every submodule call of an unrecorded run, in call order.

    A module that is not registered in the model (made on the fly inside a forward, such as
    Mamba's ``ACT2FN[act](x)``) has no qualified name; it is listed as
    ``<parent path>.<ClassName>``, the name tensorview gives it when the caller holds it in
    no attribute (one held in a plain list or dict attribute is named after it instead,
    ``input_projections.0``: calls.py, ``module_path``; no tier model has one)."""
    names = {id(m): name for name, m in model.named_modules()}
    seen: list[str] = []
    stack: list[str] = []

    def pre(m: nn.Module, args: Any) -> None:
        name = names.get(id(m))
        if name is None:
            name = (stack[-1] + "." if stack and stack[-1] else "") + type(m).__name__
        seen.append(name)
        stack.append(name)

    def post(m: nn.Module, args: Any, out: Any) -> None:
        stack.pop()

    hooks = [
        torch.nn.modules.module.register_module_forward_pre_hook(pre),
        torch.nn.modules.module.register_module_forward_hook(post, always_call=True),
    ]
    try:
        with torch.no_grad():
            out = model(**inputs)
    finally:
        for h in hooks:
            h.remove()
    assert seen and seen[0] == "", seen[:3]  # the root call comes first
    assert not stack
    return seen[1:], out


def record(model: nn.Module, inputs: dict[str, torch.Tensor], **options: Any) -> tuple[Any, Graph]:
    with torch.no_grad(), Recorder(model, **options) as rec:
        out = model(**inputs)
    assert rec._session is not None
    return out, rec._session.graph


def check_structure(arch: Arch, g: Graph, calls: list[str], inputs: dict[str, torch.Tensor], out: Any) -> None:
    g.lint()
    root = g.nodes[g.root]  # type: ignore[index]
    assert root.path == "" and root.parent is None
    # every module call, same paths, same order
    recorded = [m.path for m in g.modules() if m.id != g.root]
    assert recorded == calls
    for path in arch.layers:
        assert path in recorded, f"no ModuleNode for {path!r}"
    # inputs and outputs, with the real shapes
    assert g.inputs and g.outputs
    assert g.shapes(g.inputs) == [tuple(t.shape) for t in inputs.values()]
    out_tensors = flat_tensors(out)
    assert out_tensors
    # the returned tensors first, in order, then those kept in cache objects
    out_shapes = g.shapes(g.outputs)
    assert out_shapes[: len(out_tensors)] == [tuple(t.shape) for t in out_tensors]
    everything = flat_tensors(out, objects=True)
    assert sorted(out_shapes) == sorted(tuple(t.shape) for t in everything)
    for i in g.outputs:
        assert g.nodes[i].role in ("output", "input", "parameter", "buffer", "created", "constant")
    # the weights are used
    ops = [f.op for f in g.functions()]
    assert sum(op in MATMUL_OPS for op in ops) >= 2, sorted(set(ops))
    # the layers' ops sit inside the layers
    first_layer = next(m for m in g.modules() if m.path == arch.layers[0])
    assert any(first_layer.contains(f.id) for f in g.functions()), f"{arch.layers[0]} records no op"
    # no recorder tensor leaks out of the block, not even through a cache object
    assert {type(t) for t in everything} == {torch.Tensor}
    # every output is named after where forward returned it
    assert all(g.nodes[i].source_name for i in g.outputs)  # type: ignore[union-attr]
    # where the layers fold (fold=True: two of them), they draw consistently with one opened
    for kw in (
        {"depth": 1},
        {"depth": 3, "expand_nested": True},
        {"depth": 9, "hide_inner_tensors": False, "roll": True},
    ):
        closed = check_view(build_view(g, ViewOptions(fold=True, **kw)))  # type: ignore[arg-type]
        v = check_view(build_view(g, ViewOptions(fold=True, open_folds=True, **kw)))  # type: ignore[arg-type]
        assert any(c.members for c in v.clusters) == any(n.members for n in closed.nodes), kw


def main_output(out: Any) -> torch.Tensor:
    return out[0] if not isinstance(out, torch.Tensor) else out


@pytest.mark.parametrize("arch", ARCHS, ids=ARCH_IDS)
def test_cpu_values_unchanged_and_structure(arch: Arch) -> None:
    model = build(arch, "cpu")
    torch.manual_seed(1)
    inputs = arch.inputs("cpu")
    calls, plain = module_calls(model, inputs)
    out, g = record(model, inputs)
    assert torch.equal(main_output(out), main_output(plain))
    assert [tuple(t.shape) for t in flat_tensors(out)] == [tuple(t.shape) for t in flat_tensors(plain)]
    check_structure(arch, g, calls, inputs, out)


@pytest.mark.parametrize("arch", ARCHS, ids=ARCH_IDS)
def test_meta(arch: Arch) -> None:
    inputs = arch.inputs("meta")
    if arch.no_meta:
        # recorded on the CPU only; make sure that is still the model's limitation, not ours
        model = build(arch, "meta", **arch.meta_build)
        with pytest.raises((RuntimeError, NotImplementedError)), torch.no_grad():
            model(**inputs)
        return
    model = build(arch, "meta", **arch.meta_build)
    calls, plain = module_calls(model, inputs)
    out, g = record(model, inputs)
    assert main_output(out).device.type == "meta"
    assert [tuple(t.shape) for t in flat_tensors(out)] == [tuple(t.shape) for t in flat_tensors(plain)]
    check_structure(arch, g, calls, inputs, out)
    assert {t.device for t in g.tensors()} == {"meta"}
    # replayed shapes (the default on meta) give exactly the graph that running every op gives
    out_ran, g_ran = record(model, inputs, meta_replay=False)
    assert g.to_dict() == g_ran.to_dict()
    assert [(t.shape, t.stride()) for t in flat_tensors(out, objects=True)] == [
        (t.shape, t.stride()) for t in flat_tensors(out_ran, objects=True)
    ]


def meta_grouped_mm_takes_float32() -> bool:
    """Whether torch's meta kernel for grouped_mm (transformers' default MoE kernel) accepts
    float32: torch 2.13's takes bfloat16 only, torch 2.15's also float32 and float16."""
    grouped_mm = getattr(torch.nn.functional, "grouped_mm", None) or getattr(torch, "_grouped_mm", None)
    if grouped_mm is None:
        return False
    offs = torch.empty(2, dtype=torch.int32, device="meta")
    try:
        grouped_mm(torch.empty(4, 8, device="meta"), torch.empty(2, 8, 8, device="meta"), offs=offs)
    except RuntimeError:
        return False
    return True


def test_moe_meta_needs_the_batched_kernel() -> None:
    """Why the MoE meta builds pass ``experts_implementation``: the default build fails on meta
    even without recording, on a torch whose meta grouped_mm is bfloat16-only (2.13).  Where it
    runs (torch 2.15), ``meta_build`` is not needed; drop it once no supported torch needs it."""
    arch = next(a for a in ARCHS if a.model_type == "mixtral")
    model = build(arch, "meta")
    if meta_grouped_mm_takes_float32():
        with torch.no_grad():
            model(**arch.inputs("meta"))
        return
    with pytest.raises((RuntimeError, NotImplementedError)), torch.no_grad():
        model(**arch.inputs("meta"))


def test_tier_is_broad() -> None:
    assert len(ARCHS) >= 15
    assert len(set(ARCH_IDS)) == len(ARCH_IDS)


def test_decoders_return_their_kv_cache() -> None:
    """The decoder cases keep ``use_cache`` on (transformers' mask helper needs the cache on
    meta), so the cache tensors must leave the recorder as plain tensors and be outputs."""
    arch = next(a for a in ARCHS if a.model_type == "llama")
    model = build(arch, "cpu")
    out, g = record(model, arch.inputs("cpu"))
    cache = getattr(out, cache_field(type(out)))  # `cache` from transformers 5.24, `past_key_values` before
    kv = [t for layer in cache.layers for t in (layer.keys, layer.values)]
    assert len(kv) == 2 * 2
    assert {type(t) for t in kv} == {torch.Tensor}
    assert len(g.outputs) == 1 + len(kv)

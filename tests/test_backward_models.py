"""The joint graph of ``draw_graph(..., backward=True)`` against torchviz on twelve more
models (test_backward.py has the first eight): the autograd nodes drawn are torchviz's
for the same output (names and counts), on the CPU and on meta, and the bytes each
autograd node saved sum, per node class, to what ``saved_tensors_hooks`` sees packed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils._pytree import tree_leaves

import tensorview as tv
from tensorview.cost.memory import storage_nbytes

from .fixtures import needs
from .fixtures.hf import written_for
from .test_backward import backward_ops, torchviz_nodes

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)

pytest.importorskip("torchviz", reason=needs.TORCHVIZ)


def hf() -> Any:
    return pytest.importorskip("transformers", reason=needs.TRANSFORMERS)


def gpt2() -> tuple[nn.Module, Any]:
    t = hf()
    cfg = t.GPT2Config(n_embd=16, n_layer=2, n_head=2, vocab_size=40, n_positions=16, use_cache=False)
    return t.GPT2LMHeadModel(cfg), {"input_ids": torch.tensor([[1, 5, 7, 3]])}


def bert() -> tuple[nn.Module, Any]:
    t = hf()
    cfg = t.BertConfig(
        hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, vocab_size=40,
        max_position_embeddings=16,
    )  # fmt: skip
    return t.BertForMaskedLM(cfg), {"input_ids": torch.tensor([[1, 5, 7, 3]])}


def t5() -> tuple[nn.Module, Any]:
    t = hf()
    cfg = t.T5Config(
        d_model=16, d_kv=8, d_ff=32, num_layers=1, num_decoder_layers=1, num_heads=2, vocab_size=40, use_cache=False
    )
    ids = torch.tensor([[1, 5, 7, 3]])
    return t.T5ForConditionalGeneration(cfg), {"input_ids": ids, "decoder_input_ids": ids[:, :3]}


def mixtral() -> tuple[nn.Module, Any]:
    t = hf()
    cfg = t.MixtralConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
        num_local_experts=4, num_experts_per_tok=2, vocab_size=40, use_cache=False,
    )  # fmt: skip
    return t.MixtralForCausalLM(cfg), {"input_ids": torch.tensor([[1, 5, 7, 3]])}


def vit() -> tuple[nn.Module, Any]:
    t = hf()
    cfg = t.ViTConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, image_size=8, patch_size=4
    )
    return t.ViTModel(cfg), torch.randn(1, 3, 8, 8)


def decoder() -> tuple[nn.Module, Any]:
    """A conv-transpose decoder (an autoencoder's upsampling half)."""
    model = nn.Sequential(
        nn.Linear(4, 2 * 3 * 3), nn.Unflatten(1, (2, 3, 3)), nn.ConvTranspose2d(2, 3, 3, stride=2), nn.ReLU(),
        nn.ConvTranspose2d(3, 1, 2, stride=2, output_padding=0), nn.Sigmoid(),
    )  # fmt: skip
    return model, torch.randn(2, 4)


class BagClassifier(nn.Module):
    """Embedding + pooling: an ``EmbeddingBag`` (mean) and a max over an ``Embedding``."""

    def __init__(self) -> None:
        super().__init__()
        self.bag, self.emb, self.head = nn.EmbeddingBag(20, 6, mode="mean"), nn.Embedding(20, 6), nn.Linear(12, 2)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pooled = torch.cat([self.bag(ids), self.emb(ids).amax(dim=1)], dim=-1)
        return self.head(pooled)


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, weights = self.mha(x, x, x)
        return out + weights.sum()


class Clamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.clamp(-1, 1)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * (x.abs() <= 1)


class CustomFunction(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(5, 5), nn.Linear(5, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(Clamp.apply(self.a(x)))


class CheckpointedBlocks(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(6, 6), nn.LayerNorm(6), nn.GELU()) for _ in range(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        return x


class IntegerPaths(nn.Module):
    """Indices computed from the data (argmax, topk, gather): no gradient flows through them."""

    def __init__(self) -> None:
        super().__init__()
        self.score, self.value = nn.Linear(6, 4), nn.Linear(6, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        best = self.score(x).argmax(dim=-1, keepdim=True)
        top = self.score(x).topk(2, dim=-1).indices
        v = self.value(x)
        return v.gather(-1, best).squeeze(-1) + v.gather(-1, top).sum(-1) * (best.squeeze(-1) + 1)


def norm_cnn() -> tuple[nn.Module, Any]:
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1), nn.GroupNorm(2, 4), nn.SiLU(), nn.Conv2d(4, 4, 3, padding=1),
        nn.Flatten(2), nn.LayerNorm(16), nn.Flatten(), nn.Linear(64, 3),
    )  # fmt: skip
    return model, torch.randn(2, 3, 4, 4)


MODELS: dict[str, Callable[[], tuple[nn.Module, Any]]] = {
    "gpt2": gpt2,
    "bert": bert,
    "t5": t5,
    "mixtral": mixtral,
    "vit": vit,
    "convtranspose_decoder": decoder,
    "embedding_pooling": lambda: (BagClassifier(), torch.tensor([[1, 2, 3], [4, 5, 6]])),
    "multihead_attention": lambda: (Attention(), torch.randn(2, 5, 8)),
    "custom_function": lambda: (CustomFunction(), torch.randn(3, 5)),
    "checkpointed": lambda: (CheckpointedBlocks(), torch.randn(3, 6)),
    "integer_paths": lambda: (IntegerPaths(), torch.randn(3, 6)),
    "norm_cnn": norm_cnn,
}

#: meta's kernel for a ``reshape`` the CPU does as ``_reshape_alias`` is a ``view``
#: (docs/backward.md, "On meta"): the one rename between the CPU's nodes and meta's here
ON_META = {"ReshapeAliasBackward0": "ViewBackward0"}
#: models whose plain forward does not run on meta, so torchviz has no meta output to draw:
#: Mixtral's float32 ``grouped_mm`` has no meta kernel (tensorview records it through a fill,
#: recording/metafills.py, whose node is its own ``_GroupedMMBackward``)
NOT_ON_META = {"mixtral"}


def call(model: nn.Module, x: Any) -> Any:
    return model(**x) if isinstance(x, dict) else model(x)


def differentiable(out: Any) -> tuple[torch.Tensor, ...]:
    return tuple(t for t in tree_leaves(out) if isinstance(t, torch.Tensor) and t.grad_fn is not None)


def on(x: Any, device: str) -> Any:
    return {k: v.to(device) for k, v in x.items()} if isinstance(x, dict) else x.to(device)


@pytest.mark.parametrize(
    ("name", "device"), [(n, d) for n in sorted(MODELS) for d in ("cpu", "meta") if d == "cpu" or n not in NOT_ON_META]
)
def test_joint_graph_equals_torchviz(name: str, device: str) -> None:
    torch.manual_seed(0)
    model, x = MODELS[name]()
    model.train()
    g = tv.draw_graph(model, input_data=x, device=device, mode="train", backward=True)
    # the reference: torchviz on what a plain run of the same model on the CPU returned
    expected, _ = torchviz_nodes(differentiable(call(model, x)), dict(model.named_parameters()))
    if device == "meta":
        renamed: Counter[str] = Counter()
        for op, count in expected.items():
            renamed[ON_META.get(op, op)] += count
        expected = renamed
    assert sum(expected.values()) > 8  # a real backward graph
    assert backward_ops(g) == expected
    g.graph.lint()
    alone = g.backward_view(backward_only=True)
    assert backward_ops(alone) == expected
    alone.graph.lint()


def packed_bytes_by_node(model: nn.Module, x: Any) -> Counter[str]:
    """Storage bytes of every tensor ``saved_tensors_hooks`` sees packed, per class of the
    autograd node that saved it: the pack hook measures each tensor and hands autograd a
    number, and reading each reached node's saved tensors calls the unpack hook with the
    numbers that node holds."""
    sizes: list[int] = []
    kept: list[torch.Tensor] = []
    reader = [""]
    by_class: Counter[str] = Counter()

    def pack(t: torch.Tensor) -> int:
        sizes.append(storage_nbytes(t))
        kept.append(t)
        return len(sizes) - 1

    def unpack(i: int) -> torch.Tensor:
        by_class[reader[0]] += sizes[i]
        return kept[i]

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = call(model, x)
    seen: set[Any] = set()
    stack = [t.grad_fn for t in differentiable(out)]
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        reader[0] = type(fn).__name__
        for attr in dir(fn):
            if attr.startswith("_saved_") or attr == "saved_tensors":
                getattr(fn, attr)
        stack.extend(u for u, _ in fn.next_functions if u is not None)
    assert len(sizes) > 0
    return by_class


@pytest.mark.parametrize("name", ["gpt2", "bert", "norm_cnn", "convtranspose_decoder", "custom_function", "mixtral"])
def test_saved_bytes_per_node_equal_saved_tensors_hooks(name: str) -> None:
    torch.manual_seed(0)
    model, x = MODELS[name]()
    model.train()
    expected = packed_bytes_by_node(model, x)
    g = tv.draw_graph(model, input_data=x, mode="train", backward=True)
    saved = g.graph.annotations.layer("saved_bytes")
    marks = g.graph.annotations.layer("backward")
    ours: Counter[str] = Counter()
    for f in g.graph.functions():
        if marks.get(f.id) == "node" and saved.get(f.id):
            ours[f.op] += saved[f.id]
    assert sum(expected.values()) > 0
    assert ours == expected


# -- in-place ops on what the forward made ---------------------------------------------------
class InPlace(nn.Module):
    """In-place ops on op results (``/=``, on one result of ``max``), a residual ``+=`` on
    a module's output and ``ReLU(inplace=True)``: as in ResNets and Mixtral's router."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn, self.relu = nn.Conv2d(3, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(inplace=True)
        self.head = nn.Linear(3, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn(self.conv(x))
        out += x
        out = self.relu(out)
        scores = self.head(out.mean((2, 3)))
        scores /= 2
        values, _ = scores.max(-1)
        values *= 3
        return values


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_in_place_ops_have_their_own_autograd_nodes(device: str) -> None:
    """The recorder's tensors are no autograd views of the results they stand for, so an
    in-place op is drawn as its own node (``AddBackward0``...), as torchviz draws a plain
    run, not as ``CopySlices`` with ``AsStridedBackward0``."""
    torch.manual_seed(0)
    model = InPlace().train()
    x = torch.randn(2, 3, 4, 4)
    g = tv.draw_graph(model, input_data=x, device=device, mode="train", backward=True)
    expected, _ = torchviz_nodes(differentiable(model(x.clone())), dict(model.named_parameters()))
    assert {"AddBackward0", "ReluBackward0", "DivBackward0", "MulBackward0"} <= set(expected)
    assert backward_ops(g) == expected
    assert "CopySlices" not in backward_ops(g)
    saved = g.graph.annotations.layer("saved_bytes")
    (relu,) = [f for f in g.graph.functions() if f.op == "ReluBackward0"]
    assert saved[relu.id] == 2 * 3 * 4 * 4 * 4  # its result, as in a plain run


CALLS: list[str] = []  # (draw_graph records a copy of the model: its attributes are the copy's)


class CountedBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        CALLS.append("inner")
        return self.lin(x).tanh()


class CheckpointedCounted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner, self.out = CountedBlock(), nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.utils.checkpoint.checkpoint(self.inner, x, use_reentrant=False).sigmoid())


def test_checkpointed_nodes_save_nothing_and_are_not_recomputed() -> None:
    """What a checkpointed op's node "saved" is recomputed when read (the checkpoint's
    unpack hook runs the block again): the join reads none of it, and counts nothing, as
    ``saved_tensors_hooks`` around a plain run sees nothing packed for them."""
    model = CheckpointedCounted()
    x = torch.randn(3, 4)
    packed: list[int] = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(storage_nbytes(t)) or t, lambda t: t):
        model(x)
    CALLS.clear()
    g = tv.draw_graph(model, input_data=x, backward=True)
    assert CALLS == ["inner"]  # recorded once, never recomputed
    saved = g.graph.annotations.layer("saved_bytes")
    marks = g.graph.annotations.layer("backward")
    nodes = {f.id: f for f in g.graph.functions() if marks.get(f.id) == "node"}
    # the checkpoint keeps its input x in a node of its own (``_NoopSaveInputs``) that the
    # output does not reach: packed, but in no node drawn (nor in torchviz's picture)
    assert sum(v for k, v in saved.items() if k in nodes) == sum(packed) - storage_nbytes(x) > 0
    assert sorted((f.op, f.path) for f in nodes.values() if saved.get(f.id)) == [
        ("AddmmBackward0", "out"),
        ("SigmoidBackward0", ""),
    ]
    assert {(f.op, f.path) for f in nodes.values()} >= {("TanhBackward0", "inner"), ("AddmmBackward0", "inner.lin")}


def test_autograd_graph_of_a_checkpointed_output_runs_nothing() -> None:
    model = CheckpointedCounted()
    out = model(torch.randn(3, 4))
    CALLS.clear()
    g = tv.autograd_graph(out, dict(model.named_parameters()))
    assert CALLS == []  # no saved tensor read: the checkpoint's unpack hook would run the block
    assert {"TanhBackward0", "SigmoidBackward0"} <= {f.op for f in g.graph.functions()}
    tv.autograd_graph(out, dict(model.named_parameters()), show_saved=True)
    assert CALLS  # asked for: read (torch recomputes the block to show them), as torchviz does

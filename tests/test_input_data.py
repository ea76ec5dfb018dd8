"""What ``input_data`` and ``input_size`` become (issue 19, part A): any ``Mapping`` is
keyword arguments (a tokenizer's ``BatchEncoding`` above all), lists and tuples of any
class are positional arguments, anything else the one argument (torchview's rules,
docs/recording.md#inputs); ``input_size`` honours the default dtype, and a float input for
``nn.Embedding`` gets a hint to pass ``dtypes=[torch.long]``."""

from __future__ import annotations

import collections
import dataclasses
from typing import Any, NamedTuple

import pytest
import torch
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers
from torch import nn

import tensorview as tv

from .fixtures.hf import written_for
from .test_transformers_tier import ARCH_IDS, ARCHS, Arch, build, module_calls

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hi", "there", "hello", "world", "how", "are", "you"]


def tokenizer(*, token_type_ids: bool = False) -> transformers.PreTrainedTokenizerFast:
    """A fast tokenizer built offline from a word-level vocabulary of 11 words."""
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    names = ["input_ids", "token_type_ids", "attention_mask"] if token_type_ids else ["input_ids", "attention_mask"]
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", model_input_names=names
    )


def tiny_bert() -> nn.Module:
    config = transformers.BertConfig(
        num_hidden_layers=2,
        hidden_size=32,
        intermediate_size=64,
        num_attention_heads=4,
        vocab_size=100,
        max_position_embeddings=64,
    )
    return transformers.BertModel(config).eval()


def ops(graph: tv.ComputationGraph) -> list[str]:
    return [f.op for f in graph.graph.functions()]


def input_shapes(graph: tv.ComputationGraph) -> list[tuple[str, tuple[int, ...]]]:
    g = graph.graph
    return [(g.nodes[i].name, tuple(g.nodes[i].shape)) for i in g.inputs]  # type: ignore[attr-defined]


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_batch_encoding_is_keyword_arguments(device: str) -> None:
    enc = tokenizer(token_type_ids=True)("hi there how are you", return_tensors="pt")
    assert isinstance(enc, transformers.BatchEncoding) and not isinstance(enc, dict)
    model = tiny_bert()
    graph = tv.draw_graph(model, input_data=enc, device=device)
    assert sorted(enc) == ["attention_mask", "input_ids", "token_type_ids"]
    assert sorted(input_shapes(graph)) == [(k, (1, 5)) for k in sorted(enc)]
    paths = [m.path for m in graph.graph.modules()]
    assert "encoder.layer.1.attention.self.query" in paths and "pooler" in paths
    # the mask reached forward (it is read), and the caller's encoding is as it was
    mask = next(i for i in graph.graph.inputs if graph.graph.nodes[i].name == "attention_mask")
    assert graph.graph.successors(mask)
    assert all(v.device.type == "cpu" for v in enc.values()) and type(enc) is transformers.BatchEncoding
    assert all(p.device.type == "cpu" for p in model.parameters())


class Two(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
        return self.fc(x) if y is None else self.fc(x) - y


class Pair(NamedTuple):
    x: torch.Tensor
    y: torch.Tensor


class Couple(tuple):  # type: ignore[type-arg]
    pass


class Items(list):  # type: ignore[type-arg]
    pass


@dataclasses.dataclass
class Batch:
    x: torch.Tensor


class TakesBatch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, batch: Any) -> torch.Tensor:
        return self.fc(batch.x if isinstance(batch, Batch) else batch[0])


A, B = torch.randn(1, 4), torch.randn(2, 4)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(collections.OrderedDict([("y", B), ("x", A)]), id="OrderedDict"),
        pytest.param(collections.UserDict({"y": B, "x": A}), id="UserDict"),
        pytest.param(transformers.BatchFeature({"y": B, "x": A}), id="BatchFeature"),
    ],
)
def test_mappings_are_keyword_arguments(data: Any) -> None:
    graph = tv.draw_graph(Two(), input_data=data)
    assert sorted(input_shapes(graph)) == [("x", (1, 4)), ("y", (2, 4))]
    assert ops(graph).count("sub") == 1  # y arrived as y, not as x


def test_a_model_output_is_keyword_arguments() -> None:
    out = transformers.modeling_outputs.BaseModelOutput(last_hidden_state=A)  # a dataclass and a Mapping
    graph = tv.draw_graph(TakesBatch(), input_data=transformers.BatchFeature({"batch": out}))
    assert input_shapes(graph) == [("batch_last_hidden_state", (1, 4))]

    class Named(nn.Module):
        def forward(self, last_hidden_state: torch.Tensor) -> torch.Tensor:
            return last_hidden_state * 2

    graph = tv.draw_graph(Named(), input_data=out)
    assert input_shapes(graph) == [("last_hidden_state", (1, 4))]


@pytest.mark.parametrize(
    "data", [Pair(A, B), Couple((A, B)), Items([A, B])], ids=["namedtuple", "tuple subclass", "list subclass"]
)
def test_lists_and_tuples_of_any_class_are_positional_arguments(data: Any) -> None:
    graph = tv.draw_graph(Two(), input_data=data)
    assert [s for _, s in input_shapes(graph)] == [(1, 4), (2, 4)]
    assert ops(graph).count("sub") == 1


def test_other_objects_are_the_one_argument() -> None:
    graph = tv.draw_graph(TakesBatch(), input_data=Batch(A))
    assert [s for _, s in input_shapes(graph)] == [(1, 4)]
    # a namedtuple as one argument: wrapped in a tuple
    graph = tv.draw_graph(TakesBatch(), input_data=(Pair(A, B),))
    assert [s for _, s in input_shapes(graph)] == [(1, 4), (2, 4)]


def test_mapping_keys_must_be_names() -> None:
    with pytest.raises(tv.InvalidInputError, match=r"input_data UserDict keys must be argument names \(str\), got 0"):
        tv.draw_graph(Two(), input_data=collections.UserDict({0: A}))


def test_mapping_tensors_are_moved_to_meta() -> None:
    model = Two()
    graph = tv.draw_graph(model, input_data=collections.UserDict({"x": A, "y": B}), device="meta")
    assert {graph.graph.nodes[i].device for i in graph.graph.inputs} == {"meta"}  # type: ignore[union-attr]
    assert all(p.device.type == "cpu" for p in model.parameters())


# -- input_size: dtypes ---------------------------------------------------------------------
@pytest.fixture
def float64_default() -> Any:
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(before)
    assert torch.get_default_dtype() is before


def test_input_size_takes_the_default_dtype(float64_default: None) -> None:
    model = nn.Linear(4, 2)  # float64 parameters, made under the default
    graph = tv.draw_graph(model, input_size=[(1, 4)])
    assert [graph.graph.nodes[i].dtype for i in graph.graph.inputs] == ["float64"]  # type: ignore[union-attr]
    # given dtypes win
    graph = tv.draw_graph(nn.Linear(4, 2, dtype=torch.float32), input_size=[(1, 4)], dtypes=[torch.float32])
    assert [graph.graph.nodes[i].dtype for i in graph.graph.inputs] == ["float32"]  # type: ignore[union-attr]


class Lm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(ids))


@pytest.mark.parametrize("device", [None, "meta"])
@pytest.mark.parametrize("run", [tv.draw_graph, tv.summary], ids=["draw_graph", "summary"])
def test_float_input_size_for_an_embedding_says_pass_long(run: Any, device: str | None) -> None:
    with pytest.raises(tv.RecordingError, match=r"'embedding'") as info:
        run(Lm(), input_size=(1, 5), device=device)
    assert "pass dtypes=[torch.long]" in str(info.value) and "torch.float32" in info.value.hint
    graph = run(Lm(), input_size=(1, 5), dtypes=[torch.long], device=device)  # which works
    assert graph is not None


def test_no_dtype_hint_for_given_data_or_other_errors() -> None:
    with pytest.raises(tv.RecordingError) as info:
        tv.draw_graph(Lm(), input_data=torch.randn(1, 5))
    assert "dtypes" not in str(info.value)
    with pytest.raises(tv.RecordingError) as info:
        tv.draw_graph(nn.Linear(3, 2), input_size=(1, 5))  # a shape error, not an index one
    assert "dtypes" not in str(info.value) and not info.value.hint


# -- every transformers tier model, called with what a tokenizer (or processor) returns --------
def processor_output(arch: Arch, device: str) -> Any:
    """What a Hugging Face user passes: ``tokenizer(text)`` (a ``BatchEncoding``) for text
    models, with the decoder's ids added for encoder-decoders; the features of an image or
    audio model in a ``BatchFeature``, as its processor returns them."""
    plain = arch.inputs(device)
    tok = tokenizer()
    if "input_ids" in plain:
        enc = tok("hello world how are you hi there", return_tensors="pt")
        enc = enc.to(device) if device != "cpu" else enc
    else:
        enc = transformers.BatchFeature({k: v for k, v in plain.items() if k != "decoder_input_ids"})
    if "decoder_input_ids" in plain:
        enc["decoder_input_ids"] = tok("hi there", return_tensors="pt")["input_ids"].to(device)
    return enc


@pytest.mark.parametrize("arch", ARCHS, ids=ARCH_IDS)
def test_tier_models_take_a_tokenizers_output(arch: Arch) -> None:
    model = build(arch, "cpu")
    enc = processor_output(arch, "cpu")
    assert isinstance(enc, (transformers.BatchEncoding, transformers.BatchFeature))
    calls, _ = module_calls(model, dict(enc))
    graph = tv.draw_graph(model, input_data=enc)
    assert [m.path for m in graph.graph.modules()][1:] == calls
    assert sorted(input_shapes(graph)) == sorted((k, tuple(v.shape)) for k, v in enc.items())
    # on meta too: the mask helpers' value checks (attention_mask.all()) read the values
    # the tokenizer gave (recording/values.py), so the same calls are recorded
    meta = tv.draw_graph(model, input_data=enc, device="meta")
    assert [m.path for m in meta.graph.modules()][1:] == calls
    assert input_shapes(meta) == input_shapes(graph)
    assert {meta.graph.nodes[i].device for i in meta.graph.inputs} == {"meta"}  # type: ignore[union-attr]

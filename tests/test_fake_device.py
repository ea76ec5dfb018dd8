"""Data-dependent ops: on ``meta`` a clear error that says what to do; with
``device="fake"`` (FakeTensorMode with a ShapeEnv) they record, with symbolic sizes."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
import torch.nn.functional as F
import transformers
from torch import nn

import tensorview as tv
from tensorview.errors import RecordingError

from .fixtures.hf import written_for
from .fixtures.models import ZOO
from .test_transformers_tier import ARCHS, build, module_calls

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)


class Nonzero(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.nonzero()


class Masked(nn.Module):
    """Boolean-mask indexing: a size that depends on values, then a layer on it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x[x > 0].reshape(-1, 3)).sum()


class Item(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * x.max().item()


class ToList(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * len(x.tolist())


class Branches(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (x > 0).any():
            return x + 1
        return x - 1


@pytest.mark.parametrize(
    ("cls", "op"),
    [(Nonzero, "op 'nonzero'"), (Masked, "op 'getitem'"), (Item, "reading a tensor value"), (ToList, "reading")],
)
def test_meta_error_says_what_cannot_run_and_what_to_do(cls: type[nn.Module], op: str) -> None:
    with pytest.raises(RecordingError) as info:
        tv.draw_graph(cls(), input_size=(2, 3), device="meta")
    msg = str(info.value)
    assert f"{op}" in msg and "cannot run on the meta device" in msg
    assert "device='cpu'" in msg and "device='fake'" in msg
    assert "transformers" not in msg  # the model option hint is for Hugging Face models only


class PadByValue(nn.Module):
    """Pads by a size read from the values (as diffusers' Mochi attention does): on fake
    tensors a symbol, which the C++ pad takes as concrete integers only."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.pad(x, (0, 0, 0, x.shape[0] - (x > 0).sum().item()))


class KeyByValue(nn.Module):
    """Files results under values read from the tensor: a symbol on fake is unhashable."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sum({n: x * 2 for n in (x[:, 0] > 0).long().tolist()}.values())  # type: ignore[return-value]


@pytest.mark.parametrize("cls", [PadByValue, KeyByValue])
def test_fake_size_from_values_that_must_be_a_number_says_to_record_on_cpu(cls: type[nn.Module]) -> None:
    x = torch.randn(4, 3)
    cls()(x)  # the plain forward runs
    with pytest.raises(RecordingError) as info:
        tv.draw_graph(cls(), input_data=x, device="fake")
    hint = info.value.hint
    assert "size computed from tensor values" in hint and "device='cpu'" in hint
    assert hint in str(info.value)
    assert list(tv.draw_graph(cls(), input_data=x).graph.functions())  # on the CPU it records


class Packed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(4, 8, batch_first=True)

    def forward(self, x: torch.Tensor, lengths: Any) -> torch.Tensor:
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        return nn.utils.rnn.pad_packed_sequence(self.rnn(packed)[0], batch_first=True)[0]


def test_packed_sequences_on_meta_say_to_record_on_the_cpu() -> None:
    """draw_graph moves the lengths to meta with the other inputs; packed sequences need
    their values (a list of lengths fails on meta too, when the batch sizes are read)."""
    x, lengths = torch.randn(2, 5, 4), torch.tensor([5, 3])
    for given in (lengths, [5, 3]):
        with pytest.raises(RecordingError) as info:
            tv.draw_graph(Packed(), input_data=(x, given), device="meta")
        assert "device='cpu'" in str(info.value)
    g = tv.draw_graph(Packed(), input_data=(x, lengths), device="cpu")
    assert {"_pack_padded_sequence", "lstm", "_pad_packed_sequence"} <= {f.op for f in g.graph.functions()}


def llama_without_cache(device: str) -> nn.Module:
    """LlamaModel(use_cache=False): transformers' mask helper asks a value (packed-sequence
    detection) when there is no cache, so the plain forward fails on meta."""
    arch = next(a for a in ARCHS if a.model_type == "llama")
    config = transformers.AutoConfig.for_model("llama", **dict(arch.config, use_cache=False))
    torch.manual_seed(0)
    with torch.device(device):
        return transformers.AutoModel.from_config(config).eval()


def token_ids(device: str) -> dict[str, torch.Tensor]:
    torch.manual_seed(1)
    return {"input_ids": torch.randint(0, 100, (1, 8), device=device)}


def test_meta_error_names_the_model_option_for_transformers() -> None:
    with pytest.raises(RecordingError) as info:
        tv.draw_graph(llama_without_cache("meta"), input_data=token_ids("meta"), device="meta")
    msg = str(info.value)
    assert "cannot run on the meta device" in msg and "device='cpu'" in msg
    assert "use_cache=True" in msg


def test_fake_records_value_dependent_sizes_as_symbols() -> None:
    model = Masked()
    g = tv.draw_graph(model, input_size=(2, 3), device="fake")
    shapes = {t.name: t.shape for t in g.graph.tensors()}
    assert shapes["x"] == (2, 3) and shapes["fc_weight"] == (2, 3)
    assert shapes["getitem_out"] == ("u0",)
    assert shapes["reshape_out"] == ("u0//3", 3) and shapes["linear_out"] == ("u0//3", 2)
    assert [m.path for m in g.graph.modules()] == ["", "fc"]
    # the JSON stays strict JSON with the symbols as strings; text and DOT show them
    doc = json.loads(json.dumps(g.to_json(), allow_nan=False))
    linear = next(n for n in doc["nodes"] if n["name"] == "linear")
    assert linear["output_shapes"] == [["u0//3", 2]]
    assert "(u0//3, 2)" in g.graph.table() and "u0//3" in g.source
    # the caller's model is untouched: real parameters, on the CPU
    assert all(type(p) is nn.Parameter and p.device.type == "cpu" for p in model.parameters())


def test_fake_nonzero_and_item() -> None:
    g = tv.draw_graph(Nonzero(), input_size=(2, 3), device="fake")
    (out,) = [g.graph.nodes[i] for i in g.graph.outputs]
    assert out.shape == ("u0", 2)  # type: ignore[union-attr]
    g = tv.draw_graph(Item(), input_size=(2, 3), device="fake")
    assert [f.op for f in g.graph.functions()] == ["max", "mul"]
    assert {t.device for t in g.graph.tensors()} == {"cpu"}


def test_fake_cannot_decide_a_branch_and_says_so() -> None:
    with pytest.raises(RecordingError) as info:
        tv.draw_graph(Branches(), input_size=(2, 3), device="fake")
    assert "branches in Python on a tensor value" in str(info.value) and "device='cpu'" in str(info.value)


class Cond(nn.Module):
    """``torch.cond``: a higher-order op, whose rule for a mode is looked up by the mode's
    exact type (FakeTensorMode's rule must also serve tensorview's subclass of it)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, self.a, lambda t: self.b(t).relu(), (x,)) * 2


def test_fake_records_a_higher_order_op() -> None:
    model = Cond()
    g = tv.draw_graph(model, input_size=(2, 3), device="fake").graph
    g.lint()
    # on fake, cond cannot pick a branch: both run (traced), as in a plain FakeTensorMode run
    assert [m.path for m in g.modules()] == ["", "a", "b"]
    cond = next(f for f in g.functions() if f.op == "cond")
    assert g.shapes(g.output_tensors(cond.id)) == [(2, 3)]
    assert [f.op for f in g.functions()] == ["sum", "gt", "cond", "mul"]
    assert g.shapes(g.outputs) == [(2, 3)]
    assert all(type(p) is nn.Parameter and p.device.type == "cpu" for p in model.parameters())


@pytest.mark.parametrize("name", ["inplace_on_view", "setitem", "nested", "identity_inside", "direct_param"])
def test_fake_gives_the_cpu_graph_for_value_independent_models(name: str) -> None:
    cls, inputs = ZOO[name]
    torch.manual_seed(0)
    model = cls().eval()
    args, kwargs = inputs()
    # source=False: the two calls are on different lines, and the root call's source is the caller's
    expected = tv.draw_graph(model, input_data=args, source=False, **kwargs).to_json()
    assert tv.draw_graph(model, input_data=args, device="fake", source=False, **kwargs).to_json() == expected


def check_like_cpu(model: nn.Module, inputs: dict[str, torch.Tensor], layers: tuple[str, ...]) -> Any:
    calls, _ = module_calls(model, inputs)  # an unrecorded CPU run
    g = tv.draw_graph(model, input_data=inputs, device="fake")
    recorded = [m.path for m in g.graph.modules()][1:]
    assert recorded == calls
    assert set(layers) <= set(recorded)
    assert g.graph.shapes(g.graph.inputs) == [tuple(t.shape) for t in inputs.values()]
    assert {t.device for t in g.graph.tensors()} == {"cpu"}
    return g


@pytest.mark.parametrize("arch", [a for a in ARCHS if a.no_meta], ids=lambda a: a.model_type)
def test_fake_records_the_tier_models_that_fail_on_meta(arch: Any) -> None:
    check_like_cpu(build(arch, "cpu"), arch.inputs("cpu"), arch.layers)


def test_fake_records_llama_without_cache() -> None:
    with pytest.raises(RuntimeError), torch.no_grad():  # the plain meta forward fails
        llama_without_cache("meta")(**token_ids("meta"))
    check_like_cpu(llama_without_cache("cpu"), token_ids("cpu"), ("layers.0", "layers.1"))
    # a model built on meta records on fake too, with meta labels
    g = tv.draw_graph(llama_without_cache("meta"), input_data=token_ids("meta"), device="fake")
    assert {t.device for t in g.graph.tensors()} == {"meta"}


class Cache:
    """A cache object as transformers' DynamicCache: tensors held as attributes."""

    def __init__(self) -> None:
        self.keys: list[torch.Tensor] = []


class ReturnsCache(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, Cache]:
        cache = Cache()
        cache.keys.append(self.fc(x).transpose(0, 1))
        return x.relu(), cache


def test_fake_keeps_the_outputs_held_by_a_returned_object() -> None:
    """Tensors in an object the forward returns (a KV cache) are outputs on fake as on
    the CPU (on fake they are FakeTensors, which the recorder tracks on the side)."""
    outputs = {
        device: [(t.name, t.shape) for t in tv.draw_graph(ReturnsCache(), input_size=(2, 4), device=device).outputs]
        for device in ("cpu", "meta", "fake")
    }
    assert outputs["cpu"] == [("relu_out", (2, 4)), ("transpose_out", (4, 2))]
    assert outputs["fake"] == outputs["meta"] == outputs["cpu"]

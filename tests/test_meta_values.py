"""Values known on meta (recording/values.py): small inputs given with data keep their
values when moved to meta, ops computed from them alone follow them, and value queries
on the results (``bool()``, ``.item()``, ``.tolist()``) are answered from them, so a forward
that branches on a mask records on ``device="meta"`` the way it runs on the CPU."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.recording import values


class Branchy(nn.Module):
    """Branches on values of its mask, as Hugging Face's mask helpers do."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        keep = mask[:, None].bool()
        if keep.all():  # Tensor.__bool__ of a value computed from the mask
            y = torch.tanh(y)
        else:
            y = torch.sigmoid(y)
        n = int(mask.sum().item())  # a number read from the mask
        pos = torch.arange(mask.shape[-1], device=x.device)  # made here: its values are known
        if (pos < n).tolist()[-1]:
            y = y * 2
        return y


def ops(graph: tv.ComputationGraph) -> list[str]:
    return [f.op for f in graph.graph.functions()]


@pytest.mark.parametrize("mask", [[1, 1, 1, 1], [1, 1, 0, 0]], ids=["all ones", "padded"])
def test_meta_branches_as_the_cpu_does(mask: list[int]) -> None:
    inputs = {"x": torch.randn(1, 4), "mask": torch.tensor([mask])}
    model = Branchy()
    cpu = tv.draw_graph(model, input_data=inputs)
    meta = tv.draw_graph(model, input_data=inputs, device="meta")
    assert ops(meta) == ops(cpu)
    assert ("tanh" in ops(meta)) == all(mask) and ("mul" in ops(meta)) == all(mask)
    assert ("sigmoid" in ops(meta)) != all(mask)
    assert inputs["mask"].tolist() == [mask]  # the caller's tensors are not touched


class WritesItsMask(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        mask = mask.clone()
        mask[0, -1] = 0  # written in place: the values follow
        return x * 2 if mask.all() else x * 3


def test_values_follow_in_place_writes() -> None:
    inputs = {"x": torch.randn(1, 4), "mask": torch.ones(1, 4, dtype=torch.long)}
    cpu = tv.draw_graph(WritesItsMask(), input_data=inputs)
    meta = tv.draw_graph(WritesItsMask(), input_data=inputs, device="meta")
    assert ops(meta) == ops(cpu)
    assert inputs["mask"].tolist() == [[1, 1, 1, 1]]


class WritesFromWeights(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, mask: torch.Tensor) -> torch.Tensor:
        mask = mask.float()
        mask.mul_(self.scale)  # written from a parameter (no values on meta): values dropped
        return mask * 2 if mask.all() else mask


class AsksOfWeights(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return y if y.sum() > 0 else -y  # a value computed from weights: unknown on meta


@pytest.mark.parametrize(
    "model, inputs",
    [
        (WritesFromWeights(), {"mask": torch.ones(1, 4, dtype=torch.long)}),
        (AsksOfWeights(), {"x": torch.ones(1, 4, dtype=torch.long).float()}),
    ],
    ids=["stale after a write", "from weights"],
)
def test_values_not_known_still_fail_with_the_hint(model: nn.Module, inputs: dict[str, torch.Tensor]) -> None:
    with pytest.raises(tv.RecordingError, match="cannot be called on meta tensors") as info:
        tv.draw_graph(model, input_data=inputs, device="meta")
    assert "device='fake'" in info.value.hint


def test_big_inputs_and_meta_inputs_keep_no_values(monkeypatch: pytest.MonkeyPatch) -> None:
    inputs = {"x": torch.randn(1, 4), "mask": torch.ones(1, 4, dtype=torch.long)}
    monkeypatch.setattr(values, "LIMIT", 3)  # the mask is too big to keep
    with pytest.raises(tv.RecordingError, match="cannot be called on meta tensors"):
        tv.draw_graph(Branchy(), input_data=inputs, device="meta")
    monkeypatch.undo()
    meta_inputs = {k: v.to("meta") for k, v in inputs.items()}  # given on meta: no values at all
    with pytest.raises(tv.RecordingError, match="cannot be called on meta tensors"):
        tv.draw_graph(Branchy(), input_data=meta_inputs, device="meta")
    tv.draw_graph(Branchy(), input_data=inputs, device="meta")  # and with values it records


def test_no_random_op_runs_on_values() -> None:
    class Noisy(nn.Module):
        def forward(self, mask: torch.Tensor) -> torch.Tensor:
            return torch.bernoulli(mask.float() / 2) + torch.rand(mask.shape, device=mask.device)

    torch.manual_seed(0)
    state = torch.get_rng_state()
    graph = tv.draw_graph(Noisy(), input_data=torch.ones(1, 4, dtype=torch.long), device="meta")
    assert torch.equal(torch.get_rng_state(), state)  # the CPU's random state did not move
    assert {"bernoulli", "rand"} <= set(ops(graph)) | {n.name for n in graph.graph.tensors()}


class CountsOnValues(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        m = mask.float()
        gram = m.T @ m  # FLOPs on values: counted once, as on the CPU
        return self.fc(x) * gram.sum() if bool(gram.any()) else self.fc(x)


def test_ops_on_values_are_counted_once() -> None:
    inputs = {"x": torch.randn(1, 4), "mask": torch.ones(1, 4, dtype=torch.long)}
    cpu = tv.summary(CountsOnValues(), input_data=inputs, device="cpu")
    meta = tv.summary(CountsOnValues(), input_data=inputs)  # device="meta": values followed
    assert meta.total_flops == cpu.total_flops > 2 * 4 * 4


class PadCheck(nn.Module):
    """Asks ``pad_id in input_ids[:, [-1, 0]]`` (Tensor.__contains__), as transformers'
    ``warn_if_padding_and_no_attention_mask`` does in GPT-2, DeBERTa, RoFormer, LayoutLM..."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        y = self.emb(ids)
        if 0 in ids[:, [-1, 0]]:
            y = y * 2
        if ids[0, 1:2] in ids:  # a tensor with values on the left too
            y = y + 1
        return y


@pytest.mark.parametrize("first", [0, 5])
def test_in_on_a_tensor_with_values_is_answered_on_meta(first: int) -> None:
    """``x in t`` ran ``.item()`` on meta inside Tensor.__contains__: a RecordingError for
    a dozen transformers encoders given input_ids without an attention mask."""
    ids = torch.tensor([[first, 3, 4]])
    cpu, meta = (tv.draw_graph(PadCheck(), input_data=ids, device=d) for d in (None, "meta"))
    expected = ["embedding", "getitem", *(["mul"] if first == 0 else []), "getitem", "add"]
    assert ops(cpu) == ops(meta) == expected


class LayerDrop(nn.Module):
    """Skips each layer in training with probability ``layerdrop``, deciding on
    ``torch.rand([])`` (wav2vec2, HuBERT, M2M100, Whisper...)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(6))
        self.layerdrop = 0.5

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids)
        for layer in self.layers:
            if self.training and torch.rand([]) < self.layerdrop:
                continue
            x = layer(x)
        return x


def test_layer_drop_in_training_records_on_meta_without_moving_the_cpus_random_state() -> None:
    """``torch.rand([]) < p`` had no values on meta: 'Tensor.item() cannot be called on meta
    tensors'. A random factory now draws its values from tensorview's own generator."""
    model = LayerDrop()
    torch.manual_seed(0)
    state = torch.get_rng_state()
    runs = [ops(tv.draw_graph(model, input_data=torch.tensor([[1, 2, 3]]), device="meta", mode="train"))]
    runs += [ops(tv.draw_graph(model, input_data=torch.tensor([[1, 2, 3]]), device="meta", mode="train"))]
    assert torch.equal(torch.get_rng_state(), state)  # the CPU's random state did not move
    for run in runs:
        assert run[0] == "embedding" and run.count("lt") == 6
        assert set(run[1:]) <= {"lt", "linear"} and run.count("linear") <= 6
    assert (
        ops(tv.draw_graph(model, input_data=torch.tensor([[1, 2, 3]]), device="meta")) == ["embedding"] + ["linear"] * 6
    )  # eval: no layer dropped, no random number drawn

"""Meta replay with grad enabled (recording/gradreplay.py): aten ops replayed below
autograd give the same recording, the same autograd graph and the same results as ops run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.backward import BackwardProbe, join_backward
from tensorview.recording import Recorder
from tensorview.recording.gradreplay import GRAD_REPLAY

from .fixtures import needs
from .fixtures.hf import written_for

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)


class InplaceViews(nn.Module):
    """Ops that change a tensor's shape in place (never replayed) among ops that repeat."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.ModuleList(nn.Linear(6, 6) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outs = []
        for i, lin in enumerate(self.lin):
            y = lin(x) * 2
            for _ in range(i + 1):
                y.unsqueeze_(0)  # a different shape each time: same op, same argument metadata at first
            y = y.squeeze().t().contiguous().t()
            y.add_(1.0)
            outs.append(y.sum(-1))
        return torch.cat(outs).tanh()


def llama() -> nn.Module:
    transformers = pytest.importorskip("transformers", reason=needs.TRANSFORMERS)
    cfg = transformers.LlamaConfig(
        hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
        num_hidden_layers=3, vocab_size=50,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(cfg)


MODELS: dict[str, tuple[Callable[[], nn.Module], Callable[[], Any]]] = {
    "inplace_views": (InplaceViews, lambda: torch.randn(4, 6, device="meta")),
    "cnn": (
        lambda: nn.Sequential(
            *[nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU()) for _ in range(3)]
        ),
        lambda: torch.randn(2, 4, 8, 8, device="meta"),
    ),
    "encoder": (
        lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 3),
        lambda: torch.randn(2, 5, 8, device="meta"),
    ),
    "llama": (llama, lambda: {"input_ids": torch.zeros(1, 6, dtype=torch.long, device="meta")}),
}


def autograd_facts(out: torch.Tensor) -> list[Any]:
    """Each autograd node's class, the shapes of the gradients it receives, what it saved."""
    g = tv.autograd_graph(out, show_saved=True)
    saved = g.graph.annotations.layer("saved_bytes")
    return [(n.op, tuple(g.graph.tensor(i).shape for i in g.graph.predecessors(n.id))) for n in g.graph.functions()] + [
        sorted(saved.values())
    ]


def record(model: nn.Module, x: Any, replay: bool) -> tuple[Any, ...]:
    probe = BackwardProbe()
    with torch.enable_grad(), Recorder(model, meta_replay=replay, probes=[probe]) as rec:
        out = model(**x) if isinstance(x, dict) else model(x)
    out = out.logits if hasattr(out, "logits") else out
    joint = join_backward(rec.graph, probe, [out])
    cache = rec._session.ops.runner.meta_cache  # (opcalls.py: the runner owns the replay cache)
    below = cache.get(GRAD_REPLAY) if cache is not None else None
    result = (tuple(out.shape), out.stride(), out.dtype, out.requires_grad, type(out.grad_fn).__name__)
    return rec.graph.to_dict(), joint[False].to_dict(), autograd_facts(out), result, below.hits if below else 0


@pytest.mark.parametrize("name", sorted(MODELS))
def test_replay_below_autograd_records_what_running_records(name: str) -> None:
    torch.manual_seed(0)
    make, inputs = MODELS[name]
    model = make().to("meta").train()
    x = inputs()
    *replayed, hits = record(model, x, True)
    *ran, no_hits = record(model, x, False)
    assert replayed == ran
    assert hits >= 3 and no_hits == 0  # the repeated blocks' ops were replayed


def test_shapes_changed_in_place_are_never_replayed() -> None:
    model = InplaceViews().to("meta")
    with torch.enable_grad(), Recorder(model) as rec:
        out = model(torch.randn(4, 6, device="meta"))
    cpu = InplaceViews()
    expected = cpu(torch.randn(4, 6))
    assert out.shape == expected.shape == (12,)
    shapes = [f.op for f in rec.graph.functions() if f.op == "unsqueeze_"]
    assert len(shapes) == 6
    unsqueezed = [
        rec.graph.tensor(rec.graph.output_tensors(f.id)[0]).shape for f in rec.graph.functions() if f.op == "unsqueeze_"
    ]
    assert unsqueezed == [(1, 4, 6), (1, 4, 6), (1, 1, 4, 6), (1, 4, 6), (1, 1, 4, 6), (1, 1, 1, 4, 6)]


def test_not_used_under_another_dispatch_mode() -> None:
    """A mode under the replay would not see the ops replayed: with one on the stack
    (the cost model's FLOP counter), every op runs."""
    from torch.utils.flop_counter import FlopCounterMode

    model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(4)]).to("meta")
    counter = FlopCounterMode(display=False)
    with torch.enable_grad(), counter, Recorder(model) as rec:
        model(torch.randn(2, 8, device="meta"))
    assert GRAD_REPLAY not in rec._session.ops.runner.meta_cache
    assert counter.get_total_flops() == 4 * 2 * 2 * 8 * 8

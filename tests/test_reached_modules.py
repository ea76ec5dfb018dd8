"""Submodules a forward reaches other than through the module tree (issue 19, part C):
a closure or lambda made in ``__init__`` (torchview's custom-attention fixture), a plain
list or dict outside ``_modules``, an object that is not a module, a global.  ``draw_graph``
records a copy of the model where the mode, device or buffers would change
(recording/copies.py); a call of one of the caller's modules reached that way runs its
copy: on ``device="meta"`` it records, the caller's BatchNorm keeps its flag and its
statistics, and the call is named by the module's path (``mlp.fc``, not ``Linear``)."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv

#: a registry outside the model (a global a forward reads)
REGISTRY: dict[str, nn.Module] = {}


def mlp() -> nn.Module:
    m = nn.Module()
    m.fc = nn.Linear(4, 4)
    m.bn = nn.BatchNorm1d(4)
    return m


def closure(model: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    mlp = model.mlp

    def run(x: torch.Tensor) -> torch.Tensor:
        return mlp.bn(mlp.fc(x))

    return run


def lambda_(model: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    m = model.mlp
    return lambda x: m.bn(m.fc(x))


def plain_list(model: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    model.holder = types.SimpleNamespace(layers=[model.mlp.fc, model.mlp.bn])  # not a module, not copied
    return lambda x: functools.reduce(lambda y, f: f(y), model.holder.layers, x)


def plain_dict(model: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    model.holder = types.SimpleNamespace(parts={"fc": model.mlp.fc, "bn": model.mlp.bn})
    return lambda x: model.holder.parts["bn"](model.holder.parts["fc"](x))


def partial(model: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    def run(fc: nn.Module, bn: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return bn(fc(x))

    return functools.partial(run, model.mlp.fc, model.mlp.bn)


def global_(model: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    REGISTRY["fc"], REGISTRY["bn"] = model.mlp.fc, model.mlp.bn
    return lambda x: REGISTRY["bn"](REGISTRY["fc"](x))


HOLDERS = [closure, lambda_, plain_list, plain_dict, partial, global_]


class Reached(nn.Module):
    def __init__(self, hold: Callable[[nn.Module], Callable[[torch.Tensor], torch.Tensor]]) -> None:
        super().__init__()
        self.mlp = mlp()
        self.run = hold(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.run(x) + 1


def paths(graph: tv.ComputationGraph) -> list[str]:
    return [m.path for m in graph.graph.modules()]


def state(model: nn.Module) -> tuple[Any, ...]:
    bn = model.mlp.bn
    return (
        [m.training for m in model.modules()],
        bn.running_mean.clone(),
        bn.running_var.clone(),
        int(bn.num_batches_tracked),
        {k: v.device.type for k, v in model.state_dict().items()},
    )


def same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return a[0] == b[0] and torch.equal(a[1], b[1]) and torch.equal(a[2], b[2]) and a[3:] == b[3:]


@pytest.mark.parametrize("hold", HOLDERS, ids=[h.__name__.strip("_") for h in HOLDERS])
@pytest.mark.parametrize(
    "options",
    [{}, {"device": "meta"}, {"mode": "train"}, {"device": "meta", "mode": "train"}, {"device": "fake"}],
    ids=["eval", "meta", "train", "meta-train", "fake"],
)
def test_reached_modules_run_as_their_copies(hold: Any, options: dict[str, Any]) -> None:
    model = Reached(hold).train()
    before = state(model)
    graph = tv.draw_graph(model, input_size=(3, 4), **options)
    assert paths(graph) == ["", "mlp.fc", "mlp.bn"]
    assert same(state(model), before)  # flags, BatchNorm statistics, devices: as they were
    device = "meta" if options.get("device") == "meta" else "cpu"  # fake tensors say cpu
    assert {graph.graph.nodes[i].device for i in graph.graph.inputs} == {device}  # type: ignore[union-attr]


def test_the_copy_runs_in_the_mode_asked_for() -> None:
    model = Reached(closure).train()
    with torch.no_grad():
        model.mlp.bn.running_mean.fill_(100.0)  # eval mode subtracts it, training mode does not
    x = torch.randn(3, 4)
    ours = tv.draw_graph(model, input_data=x, depth=0)
    assert ours.graph.outputs
    seen: list[torch.Tensor] = []
    model.mlp.bn.register_forward_hook(lambda m, i, o: seen.append(o))  # on the caller's BatchNorm
    tv.draw_graph(model, input_data=x)
    assert seen and bool((seen[-1] < -50).all())  # the copy's hooks are the caller's: eval mode ran
    assert model.mlp.bn.training and float(model.mlp.bn.running_mean[0]) == 100.0


def test_summary_of_a_model_with_a_closure() -> None:
    model = Reached(lambda_).eval()
    before = state(model)
    s = tv.summary(model, input_size=(3, 4))  # mode="train", device="meta": a meta copy
    assert s.total_params == sum(p.numel() for p in model.parameters())
    assert same(state(model), before)


def test_torchview_custom_attention_fixture_shape() -> None:
    """torchview's Block: ``m = self.mlp; self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))``."""

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln = nn.LayerNorm(8)
            self.mlp = nn.ModuleDict(
                dict(c_fc=nn.Linear(8, 32), c_proj=nn.Linear(32, 8), act=nn.GELU(), dropout=nn.Dropout(0.5))
            )
            m = self.mlp
            self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.mlpf(self.ln(x))

    model = Block().train()
    for device in ("meta", None):
        graph = tv.draw_graph(model, input_size=(2, 3, 8), device=device)
        assert paths(graph) == ["", "ln", "mlp.c_fc", "mlp.act", "mlp.c_proj", "mlp.dropout"]
    assert all(m.training for m in model.modules()) and model.mlp.c_fc.weight.device.type == "cpu"


def test_copies_are_not_kept_alive() -> None:
    import gc
    import weakref

    from tensorview.recording import copies, placement

    class Holds(nn.Module):  # a submodule that holds its root: the copy's would too
        def __init__(self) -> None:
            super().__init__()
            self.mlp = mlp()
            self.mlp.__dict__["root"] = self

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.mlp.bn(self.mlp.fc(x))

    model = Holds().train()
    clone = placement.placed(model, None, "eval")
    assert clone is not model and copies.stand_ins(clone) is not None
    assert copies.stand_ins(clone)[id(model.mlp.fc)] == (model.mlp.fc, clone.mlp.fc)  # type: ignore[index]
    ref = weakref.ref(clone)
    del clone
    gc.collect()
    assert ref() is None

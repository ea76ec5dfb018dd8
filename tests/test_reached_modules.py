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


class ReadsAttributes(nn.Module):
    """A function made in ``__init__`` reads the caller's modules' tensors as attributes
    (``lin.weight``, ``bn.running_mean``), not through a module call."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)
        lin, bn = self.lin, self.bn
        self.fn = lambda x: x @ lin.weight.T + bn.running_mean

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(self.lin(x))


@pytest.mark.parametrize(("device", "mode"), [(None, "eval"), (None, "train"), ("meta", "eval"), ("fake", "eval")])
def test_attributes_of_the_callers_modules_read_by_a_closure_are_the_copys(device: str | None, mode: str) -> None:
    """Were the caller's tensors: a constant for the buffer on the CPU copy, an error on
    meta (a CPU tensor), constants on fake; now the copy's parameter and buffer, named."""
    model = ReadsAttributes().train()
    params = [(p, p.detach().clone()) for p in model.parameters()]
    mean = model.bn.running_mean
    g = tv.draw_graph(model, input_size=(2, 4), device=device, mode=mode).graph
    assert [(f.op, f.path) for f in g.functions()] == [("linear", "lin"), ("T", ""), ("matmul", ""), ("add", "")]
    sources = [(t.source_name, t.role) for t in g.tensors() if t.role in ("parameter", "buffer", "constant")]
    assert sources == [("lin.weight", "parameter"), ("lin.bias", "parameter"), ("bn.running_mean", "buffer")]
    assert g.tensor(g.input_tensors(g.by_name("matmul").id)[1]).shape == (4, 4)
    assert g.warnings == []
    assert all(p is q and torch.equal(p, v) for (p, v), q in zip(params, model.parameters()))
    assert model.bn.running_mean is mean and mean.device.type == "cpu" and model.training
    assert not tv.recording.is_patched()  # nn.Module.__getattr__ is torch's again


def test_a_tensor_of_the_callers_model_captured_directly_is_warned_on_its_node() -> None:
    """A tensor captured itself (no attribute read to redirect) is the caller's, not the
    copy's buffer: drawn as a constant, with a warning naming it (never silently)."""

    class Captures(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bn = nn.BatchNorm1d(4)
            mean = self.bn.running_mean
            self.fn = lambda x: x + mean

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fn(self.bn(x))

    g = tv.draw_graph(Captures().train(), input_size=(2, 4)).graph  # eval: a copy with its own buffers
    (constant,) = [t for t in g.tensors() if t.role == "constant"]
    (warning,) = g.warnings
    assert "buffer 'bn.running_mean' of your model was read directly" in warning
    assert g.annotations.layer("warning")[constant.id] == warning
    model = Captures()
    with tv.Recorder(model) as rec:  # no copy: the model's own buffer, read as such
        model(torch.randn(2, 4))
    plain = rec.graph.graph
    assert plain.warnings == [] and not [t for t in plain.tensors() if t.role == "constant"]

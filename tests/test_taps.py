"""Data taps (issue 3, part 2): recorded values checked against values computed by hand
while a small model trains; selection, condition, reduction, save, apply, remove, hook
removal, errors, graph annotation, and the examples of docs/taps.md."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tensorview
import tensorview.taps as taps
from tensorview.errors import InvalidInputError, InvalidTypeError
from tensorview.graph import Graph, GraphBuilder
from tensorview.taps import BackwardInput, BackwardOutput, ForwardInput, ForwardOutput

ROOT = Path(__file__).resolve().parent.parent


def mlp() -> nn.Sequential:
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(2, 2, 3, padding=1)
        self.conv2 = nn.Conv2d(2, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv2(torch.relu(self.conv1(x)))


class Net(nn.Module):
    """named_modules order: '', layer1, layer1.0, layer1.0.conv1, layer1.0.conv2, layer1.1,
    layer1.1.conv1, layer1.1.conv2, layer2, layer2.0, layer2.0.conv1, layer2.0.conv2, fc"""

    def __init__(self) -> None:
        super().__init__()
        self.layer1 = nn.Sequential(Block(), Block())
        self.layer2 = nn.Sequential(Block())
        self.fc = nn.Linear(2, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.layer2(self.layer1(x)).mean((2, 3)))


def no_hooks(model: nn.Module) -> bool:
    return all(
        not m._forward_hooks and not m._forward_pre_hooks and not m._backward_hooks and m._is_full_backward_hook is None
        for m in model.modules()
    )


# -- a real training loop ---------------------------------------------------------------
def test_training_loop_values_match_hand_computation() -> None:
    model = mlp()
    twin = copy.deepcopy(model)  # trained identically without taps
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    twin_opt = torch.optim.SGD(twin.parameters(), lr=0.5)
    data = [(torch.randn(5, 4), torch.randint(0, 3, (5,))) for _ in range(4)]

    fin = ForwardInput().modules(model, types=nn.Linear)
    fout = ForwardOutput().modules(model, types=nn.Linear)
    gin = BackwardInput().modules(model, names="2")  # the first layer's input needs no grad
    gout = BackwardOutput().children(model, indices=[1, 2])
    assert fin.paths == fout.paths == ["0", "2"] and gin.paths == ["2"] and gout.paths == ["1", "2"]

    weights = []
    for x, y in data:
        weights.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        for m, o in ((model, opt), (twin, twin_opt)):
            o.zero_grad()
            F.cross_entropy(m(x), y).backward()
            o.step()
    for tap in (fin, fout, gin, gout):
        tap.close()
    assert no_hooks(model)

    # the taps changed nothing: same parameters after training as the untapped twin
    for p, q in zip(model.parameters(), twin.parameters()):
        assert torch.equal(p, q)

    for step, ((x, y), w) in enumerate(zip(data, weights)):
        # forward by hand with this step's weights, gradients with autograd.grad
        z0 = x @ w["0.weight"].T + w["0.bias"]
        z0.requires_grad_(True)
        h = torch.relu(z0)
        z2 = h @ w["2.weight"].T + w["2.bias"]
        g_h, g_z2, g_z0 = torch.autograd.grad(F.cross_entropy(z2, y), [h, z2, z0])

        torch.testing.assert_close(fin[0][step], x)
        torch.testing.assert_close(fin[1][step], h.detach())
        torch.testing.assert_close(fout[0][step], z0.detach())
        torch.testing.assert_close(fout[1][step], z2.detach())
        torch.testing.assert_close(gin[0][step], g_h)  # grad w.r.t. the input of layer 2
        torch.testing.assert_close(gout[1][step], g_z2)  # grad w.r.t. the output of layer 2
        torch.testing.assert_close(gout[0][step], g_h)  # grad w.r.t. the ReLU's output
        torch.testing.assert_close(g_z0, g_h * (z0 > 0))  # sanity of the hand computation
    assert [fin.samples(i) for i in range(2)] == [4, 4] and gout.samples("2") == 4
    # recorded values are copies: the optimizer steps did not change them
    assert not torch.equal(fout[0][0], fout[0][1])


@pytest.mark.filterwarnings("ignore:Full backward hook is firing:UserWarning")
def test_backward_input_of_first_layer_is_none_without_input_grad() -> None:
    model = mlp()
    with BackwardInput().modules(model, indices=1) as tap:
        model(torch.randn(2, 4)).sum().backward()
    assert tap.paths == ["0"] and tap[0] == [None] and tap.samples(0) == 1

    x = torch.randn(2, 4, requires_grad=True)
    with BackwardInput().modules(model, indices=1) as tap:
        model(x).sum().backward()
    torch.testing.assert_close(tap[0][0], x.grad)


def test_multiple_inputs_and_outputs_are_tuples() -> None:
    lstm = nn.LSTM(3, 4, batch_first=True)
    x, state = torch.randn(2, 5, 3), (torch.zeros(1, 2, 4), torch.zeros(1, 2, 4))
    with ForwardInput().modules(lstm) as fin, ForwardOutput().modules(lstm) as fout:
        out, (h, c) = lstm(x, state)
    args = fin[0][0]
    assert isinstance(args, tuple) and len(args) == 2 and torch.equal(args[0], x) and torch.equal(args[1][1], state[1])
    recorded_out, (recorded_h, _) = fout[0][0]
    assert torch.equal(recorded_out, out) and torch.equal(recorded_h, h)


def test_values_are_copies_taken_before_in_place_changes() -> None:
    model = nn.Sequential(nn.Linear(3, 6), nn.ReLU(inplace=True))
    x = torch.randn(8, 3)
    with ForwardOutput().modules(model, indices=1) as out, ForwardInput().modules(model, indices=2) as inp:
        result = model(x)
    expected = model[0](x).detach()
    assert (expected < 0).any()  # so the in-place ReLU would have changed the recorded value
    torch.testing.assert_close(out[0][0], expected)
    torch.testing.assert_close(inp[0][0], expected)  # the ReLU's input as it received it
    assert out[0][0].data_ptr() != result.data_ptr() and not out[0][0].requires_grad


# -- condition, reduction, samples ------------------------------------------------------
def test_condition_records_only_when_true() -> None:
    model = mlp()
    state = {"on": False}
    tap = ForwardOutput(condition=lambda: state["on"]).modules(model, names=["0", "2"])
    xs = [torch.randn(2, 4) for _ in range(5)]
    for i, x in enumerate(xs):
        state["on"] = i % 2 == 0
        model(x)
    tap.close()
    assert tap.samples(0) == tap.samples(1) == 3
    for got, x in zip(tap[0], xs[::2]):
        torch.testing.assert_close(got, model[0](x).detach())


def test_reduction_folds_into_running_value() -> None:
    model = mlp()
    plain = ForwardOutput().modules(model, types=nn.Linear)
    summed = ForwardOutput(reduction=lambda acc, new: acc + new).modules(model, types=nn.Linear)
    maxed = BackwardOutput(reduction=torch.maximum).modules(model, names="2")
    assert summed[0] is None and summed.samples(0) == 0
    for _ in range(3):
        model(torch.randn(2, 4)).sum().backward()
    for tap in (plain, summed, maxed):
        tap.close()
    for i in range(2):
        assert summed.samples(i) == plain.samples(i) == 3
        torch.testing.assert_close(summed[i], sum(plain[i]))
    torch.testing.assert_close(maxed[0], torch.ones(2, 3))  # d(sum)/d(output) is one everywhere
    assert maxed.samples("2") == 3


def test_first_reduced_value_is_stored_as_is() -> None:
    model = nn.Linear(2, 2)
    tap = ForwardOutput(reduction=lambda acc, new: None).modules(model)
    out = model(torch.randn(1, 2))
    tap.close()
    assert torch.equal(tap[0], out)


# -- choosing modules -----------------------------------------------------------------
def test_selection_by_type_index_name_and_combinations() -> None:
    net = Net()
    convs = ["layer1.0.conv1", "layer1.0.conv2", "layer1.1.conv1", "layer1.1.conv2", "layer2.0.conv1", "layer2.0.conv2"]
    assert ForwardOutput().modules(net, types=nn.Conv2d).paths == convs
    assert ForwardOutput().modules(net, types=(nn.Linear, Block)).paths == ["layer1.0", "layer1.1", "layer2.0", "fc"]
    assert ForwardOutput().modules(net, names="layer*.0.conv1").paths == ["layer1.0.conv1", "layer2.0.conv1"]
    assert ForwardOutput().modules(net, names=["fc", "layer2"]).paths == ["layer2", "fc"]
    assert ForwardOutput().modules(net, indices=[0, 12, 3]).paths == ["", "layer1.0.conv1", "fc"]
    assert len(ForwardOutput().modules(net)) == len(list(net.modules()))
    # AND of several filters
    assert ForwardOutput().modules(net, types=nn.Conv2d, names="layer1.*").paths == convs[:4]
    assert ForwardOutput().modules(net, types=nn.Conv2d, names="layer1.*", indices=[4, 5, 6]).paths == convs[1:3]
    assert ForwardOutput().modules(net, types=nn.Linear, indices=0).paths == []
    # children: direct children only, indices over them
    assert ForwardOutput().children(net).paths == ["layer1", "layer2", "fc"]
    assert ForwardOutput().children(net, indices=2).paths == ["fc"]
    assert ForwardOutput().children(net, types=nn.Sequential, names="*2").paths == ["layer2"]
    assert ForwardOutput().children(net.layer1[0]).paths == ["conv1", "conv2"]


def test_selection_chains_and_skips_modules_already_tapped() -> None:
    net = Net()
    tap = ForwardOutput().modules(net, names="fc").modules(net, types=nn.Linear).children(net.layer2, indices=0)
    assert tap.paths == ["fc", "0"]
    net(torch.randn(1, 2, 5, 5))
    tap.close()
    assert tap.samples("fc") == 1 and tap.samples("0") == 1  # one record per call, not two


def test_tapped_selected_modules_record_what_they_return() -> None:
    net = Net()
    x = torch.randn(2, 2, 6, 6)
    with ForwardOutput().modules(net, names="layer*.0.conv1") as tap:
        net(x)
    conv1: nn.Conv2d = net.layer1[0].conv1  # type: ignore[assignment]
    torch.testing.assert_close(tap["layer1.0.conv1"][0], conv1(x).detach())
    assert tap[1][0].shape == (2, 2, 6, 6) and tap.samples(1) == 1


# -- reading, saving, changing ----------------------------------------------------------
def test_getitem_iteration_len_and_repr() -> None:
    model = mlp()
    tap = ForwardOutput().modules(model, types=nn.Linear)
    model(torch.randn(2, 4))
    tap.close()
    assert len(tap) == 2 and list(tap) == [tap[0], tap[1]] and tap[-1] is tap[1] and tap["2"] is tap[1]
    assert "ForwardOutput" in repr(tap) and "'2'" in repr(tap)


def test_save_writes_one_loadable_file_per_module(tmp_path: Path) -> None:
    net = Net()
    with ForwardOutput().modules(net, names=["", "layer*.0.conv1", "fc"]) as tap:
        net(torch.randn(1, 2, 4, 4))
        net(torch.randn(1, 2, 4, 4))
    files = tap.save(tmp_path / "out")
    assert [f.name for f in files] == ["model.pt", "layer1.0.conv1.pt", "layer2.0.conv1.pt", "fc.pt"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(f.name for f in files)
    for i, f in enumerate(files):
        loaded = torch.load(f)
        assert len(loaded) == 2 and all(torch.equal(a, b) for a, b in zip(loaded, tap[i]))


def test_save_refuses_colliding_file_names(tmp_path: Path) -> None:
    a, b = mlp(), mlp()
    tap = ForwardOutput().modules(a, names="0").modules(b, names="0")
    with pytest.raises(InvalidInputError, match=r"same file: \['0', '0'\]"):
        tap.save(tmp_path)
    tap.close()


def test_apply_maps_each_modules_data_in_place() -> None:
    model = mlp()
    with ForwardOutput().modules(model, types=nn.Linear) as tap:
        for _ in range(3):
            model(torch.randn(2, 4))
    expected = torch.stack(tap[1]).mean(0)
    assert tap.apply(torch.stack) is tap
    assert tap[0].shape == (3, 2, 8) and tap[1].shape == (3, 2, 3)
    tap.apply(lambda t: t.mean(0))
    torch.testing.assert_close(tap[1], expected)


def test_remove_drops_one_modules_hook_and_data() -> None:
    model = mlp()
    tap = ForwardOutput().modules(model, types=nn.Linear)
    model(torch.randn(2, 4))
    tap.remove(0)
    assert tap.paths == ["2"] and len(tap) == 1 and tap.samples(0) == 1
    assert not model[0]._forward_hooks and model[2]._forward_hooks
    model(torch.randn(2, 4))
    assert len(tap[0]) == 2
    tap.remove("2")
    assert len(tap) == 0 and no_hooks(model)


def test_remove_all_and_close() -> None:
    model = mlp()
    tap = BackwardOutput().modules(model, indices=[2, 3])
    closing = ForwardOutput().modules(model)
    model(torch.randn(2, 4)).sum().backward()
    closing.close()
    assert len(closing) == 4 and closing.samples(3) == 1  # data kept
    assert model[2]._backward_hooks and model[2]._is_full_backward_hook is True
    tap.remove_all()
    assert len(tap) == 0 and no_hooks(model)


def test_context_manager_removes_every_hook_also_on_error() -> None:
    model = mlp()
    with ForwardInput().modules(model) as a, ForwardOutput().modules(model) as b:
        with BackwardInput().modules(model, indices=3) as c, BackwardOutput().modules(model, indices=[2, 3]) as d:
            assert model[2]._backward_hooks and model[2]._forward_hooks and model[2]._forward_pre_hooks
            model(torch.randn(2, 4)).sum().backward()
    assert no_hooks(model)
    assert [t.samples(t.paths[-1]) for t in (a, b, c, d)] == [1, 1, 1, 1]

    with pytest.raises(RuntimeError, match="boom"):
        with BackwardOutput().modules(model, indices=3) as e, ForwardOutput().modules(model):
            model(torch.randn(2, 4)).sum().backward()
            raise RuntimeError("boom")
    assert no_hooks(model) and e.samples(0) == 1
    model.register_backward_hook  # the deprecated kind could be registered again: flag restored
    assert model[2]._is_full_backward_hook is None


def test_taps_do_not_change_outputs_or_gradients() -> None:
    model = mlp()
    twin = copy.deepcopy(model)
    x = torch.randn(3, 4, requires_grad=True)
    x2 = x.detach().clone().requires_grad_(True)
    with ForwardInput().modules(model), ForwardOutput().modules(model), BackwardInput().modules(model):
        with BackwardOutput().modules(model):
            out = model(x)
            out.pow(2).sum().backward()
    out2 = twin(x2)
    out2.pow(2).sum().backward()
    assert x.grad is not None and x2.grad is not None
    assert torch.equal(out, out2) and torch.equal(x.grad, x2.grad)
    for p, q in zip(model.parameters(), twin.parameters()):
        assert p.grad is not None and q.grad is not None and torch.equal(p.grad, q.grad)


# -- errors ----------------------------------------------------------------------------
def test_bad_arguments_raise_errors_naming_the_value() -> None:
    net = Net()
    tap = ForwardOutput()
    with pytest.raises(InvalidTypeError, match=r"model must be a torch.nn.Module, got list"):
        tap.modules([net])  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match=r"nn.Module subclasses .*got <class 'int'>"):
        tap.modules(net, types=int)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match=r"nn.Module subclasses .*got 'conv'"):
        tap.children(net, types=[nn.Linear, "conv"])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match=r"module index -1 out of range \(must be in 0..12 for 13 modules\)"):
        tap.modules(net, indices=[0, -1])
    with pytest.raises(InvalidInputError, match=r"module index 3 out of range \(must be in 0..2"):
        tap.children(net, indices=3)
    with pytest.raises(InvalidTypeError, match=r"indices must be ints, got 'fc'"):
        tap.modules(net, indices=["fc"])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match=r"names pattern 'layer9\*' matches no module \(paths: '', 'layer1'"):
        tap.modules(net, names=["fc", "layer9*"])
    with pytest.raises(InvalidTypeError, match=r"names must be strings .*got 3"):
        tap.modules(net, names=[3])  # type: ignore[list-item]
    with pytest.raises(InvalidTypeError, match=r"condition must be a callable or None, got True"):
        ForwardOutput(condition=True)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match=r"reduction must be a callable"):
        ForwardOutput(reduction="sum")  # type: ignore[arg-type]
    assert len(tap) == 0 and no_hooks(net)  # failed calls tapped nothing

    tap.modules(net, names="fc")
    with pytest.raises(InvalidInputError, match=r"tap index 1 out of range \(1 modules tapped\)"):
        tap[1]
    with pytest.raises(InvalidInputError, match=r"no tapped module with path 'fc2' \(tapped: \['fc'\]\)"):
        tap.samples("fc2")
    with pytest.raises(InvalidTypeError, match=r"tap index must be an int or a module path, got 1.5"):
        tap.remove(1.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match=r"annotate needs a tensorview Graph .*got dict"):
        tap.annotate({})
    with pytest.raises(InvalidInputError, match=r"none of the tapped modules \['fc'\] is a module node"):
        tap.annotate(ir_graph(["", "other"]))
    tap.close()
    # the errors are also the builtin kinds
    with pytest.raises(ValueError):
        tap.modules(net, indices=-2)
    with pytest.raises(TypeError):
        tap.modules(net, types="Linear")  # type: ignore[arg-type]


# -- graph annotation --------------------------------------------------------------------
def ir_graph(paths: list[str]) -> Graph:
    """A hand-built IR: a root module call and one module call per path."""
    b = GraphBuilder()
    root = b.add_module(paths[0], "Linear", "torch.nn.modules.linear", None)
    for path in paths[1:]:
        b.end_call(b.add_module(path, "Linear", "torch.nn.modules.linear", root))
    return b.finish()


def notes(g: Graph, node_id: int) -> dict[str, Any] | None:
    """The annotations of one node, ``None`` when it has none."""
    return g.annotations.of(node_id) or None


def test_annotate_notes_stats_on_matching_module_nodes() -> None:
    model = mlp()
    tap = ForwardOutput().modules(model, names=["0", "2"])
    summed = ForwardOutput(reduction=lambda a, b: a + b).modules(model, names="2")
    xs = [torch.randn(3, 4) for _ in range(2)]
    for x in xs:
        model(x)
    tap.close()
    summed.close()

    g = ir_graph(["", "0", "1", "2", "2"])  # module "2" called twice: both calls noted
    assert tap.annotate(g) is g
    values = torch.cat([model(x).detach().reshape(-1) for x in xs]).double()
    expected = {
        "mean": values.mean().item(),
        "std": values.std(correction=0).item(),
        "min": values.min().item(),
        "max": values.max().item(),
        "samples": 2,
    }
    for node in (3, 4):
        noted = notes(g, node)
        assert noted is not None and noted["stats"].keys() == expected.keys()
        for key, value in expected.items():
            assert noted["stats"][key] == pytest.approx(value)
    assert notes(g, 1) is not None and notes(g, 1)["stats"]["samples"] == 2  # type: ignore[index]
    assert notes(g, 0) is None and notes(g, 2) is None  # untapped modules untouched

    # a drawn graph holding the IR as .graph; the reduced value is what gets summarised
    drawn = SimpleNamespace(graph=ir_graph(["", "2"]))
    assert summed.annotate(drawn) is drawn
    reduced = sum(model(x).detach() for x in xs)
    assert drawn.graph.annotations.of(1)["stats"]["max"] == pytest.approx(reduced.max().item())
    assert drawn.graph.annotations.of(1)["stats"]["samples"] == 2


def test_annotate_skips_non_float_values() -> None:
    emb = nn.Sequential(nn.Embedding(5, 2))
    g = ir_graph(["", "0"])
    with ForwardInput().modules(emb, names="0") as tap:
        emb(torch.tensor([1, 2]))
    tap.annotate(g)
    assert notes(g, 1) is None  # integer indices give no statistics


# -- public API and docs -------------------------------------------------------------------
def test_public_api_is_exact() -> None:
    assert taps.__all__ == ["BackwardInput", "BackwardOutput", "ForwardInput", "ForwardOutput", "Tap"]
    assert tensorview.taps is taps
    assert all(issubclass(getattr(taps, name), taps.Tap) for name in taps.__all__)


def test_taps_md_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "taps.md").read_text(), re.S)
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)  # the example saves files
    namespace: dict[str, object] = {"__name__": "docs_taps"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"taps.md[block {i}]", "exec"), namespace)


def test_taps_left_on_while_recording_add_nothing_to_the_graph() -> None:
    from tensorview import Recorder

    model = mlp()
    x = torch.randn(2, 4)
    with Recorder(model) as plain:
        model(x)
    with ForwardOutput().modules(model) as fout, ForwardInput(reduction=lambda a, b: a + b).modules(model) as fin:
        model(x)  # one call before, so the reduction runs while recording
        with Recorder(model) as rec:
            out = model(x)
    assert rec.graph.table() == plain.graph.table()
    assert all(type(v) is torch.Tensor for data in fout for v in data) and type(fin[0]) is torch.Tensor
    assert torch.equal(fout[0][1], out) and torch.equal(fin[0], 2 * x)

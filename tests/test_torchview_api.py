"""torchview's API on tensorview: draw_graph's arguments in torchview's order and meanings,
the returned graph's torchview attributes and node objects, errors a torchview user's
``except`` catches, and the examples of torchview's README and introduction notebook run
with only the import changed (docs/migrating.md)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview import torchview
from tensorview.graph.view import DEPTH_ALL
from tests.fixtures import models as zoo
from tests.fixtures import needs

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason=needs.DOT)


class MLP(nn.Module):  # torchview's README and notebook model
    def __init__(self, inplace: bool = True) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(128, 128), nn.ReLU(inplace), nn.Linear(128, 128))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)  # type: ignore[no-any-return]


class SimpleRNN(nn.Module):  # torchview's notebook model
    def __init__(self, inplace: bool = True) -> None:
        super().__init__()
        self.hid_dim, self.input_dim, self.max_length = 2, 3, 4
        self.lstm = nn.LSTMCell(self.input_dim, self.hid_dim)
        self.activation = nn.LeakyReLU(inplace=inplace)
        self.projection = nn.Linear(self.hid_dim, self.input_dim)

    def forward(self, token_embedding: torch.Tensor) -> torch.Tensor:
        b_size = token_embedding.size()[0]
        hx = torch.randn(b_size, self.hid_dim, device=token_embedding.device)
        cx = torch.randn(b_size, self.hid_dim, device=token_embedding.device)
        for _ in range(self.max_length):
            hx, cx = self.lstm(token_embedding, (hx, cx))
            hx = self.activation(hx)
        return hx


SEEN: list[str] = []  # outside the model: recording may run on a copy of it


class TakesAnything(nn.Module):
    """``forward(x, **kwargs)``: would swallow any option passed on to it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        SEEN.extend(kwargs)
        return self.fc(x)  # type: ignore[no-any-return]


def specs(graph: tv.ComputationGraph) -> list[tuple[Any, ...]]:
    return [(t.shape, t.dtype) for t in graph.inputs]


# -- draw_graph's arguments ------------------------------------------------------------------
def test_positional_order_is_torchviews() -> None:
    x = torch.randn(2, 4)
    g = tv.draw_graph(zoo.InplaceModule(), x, None, "net", 1, "meta", None, "train")
    assert specs(g) == [((2, 4), "float32")]
    assert g.render_options.graph_name == "net" and g.options.depth == 1
    assert g.graph.inputs and g.graph[g.graph.inputs[0]].device == "meta"
    g = tv.draw_graph(zoo.InplaceModule(), None, (3, 4))  # input_size in the third place
    assert specs(g) == [((3, 4), "float32")]


def test_a_second_argument_of_numbers_is_still_a_shape() -> None:
    """tensorview's older order, draw_graph(model, input_size), keeps working."""
    assert specs(tv.draw_graph(zoo.InplaceModule(), (5, 4))) == [((5, 4), "float32")]
    assert specs(tv.draw_graph(zoo.UnusedInput(), [(1, 4), (2, 4)])) == [((1, 4), "float32"), ((2, 4), "float32")]
    assert specs(tv.draw_graph(zoo.InplaceModule(), torch.Size([2, 4]))) == [((2, 4), "float32")]
    # and tensors in the input_size place are input_data (tensorview's older third place)
    assert specs(tv.draw_graph(zoo.InplaceModule(), None, torch.ones(6, 4))) == [((6, 4), "float32")]


def test_depth_float_and_infinite() -> None:
    model = MLP()
    deep = tv.draw_graph(model, input_size=(1, 128), depth=float("inf"), hide_module_functions=False)
    assert deep.options.depth == DEPTH_ALL and deep.depth == DEPTH_ALL
    assert "linear" in {n.name.rstrip("_0123456789") for n in deep.get_view().nodes}  # the ops inside Linear
    assert tv.draw_graph(model, input_size=(1, 128), depth=1.0).options.depth == 1
    with pytest.raises(ValueError, match=r"depth must be >= 0, got -0.5"):
        tv.draw_graph(model, input_size=(1, 128), depth=-0.5)


def test_mode_none_is_eval_and_graph_dir_none_is_tb() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).train()
    before = model[1].running_mean.clone()
    g = tv.draw_graph(model, input_size=(3, 4), mode=None, graph_dir=None)
    assert torch.equal(model[1].running_mean, before) and model.training  # eval ran, on a copy
    assert "rankdir=TB" in g.source
    with pytest.raises(RuntimeError, match=r"unknown mode: 'test' \(must be one of \['eval', 'same', 'train'\]"):
        tv.draw_graph(model, input_size=(3, 4), mode="test")


def test_torchview_options_never_reach_forward() -> None:
    model = TakesAnything().eval()
    SEEN.clear()
    g = tv.draw_graph(
        model,
        torch.randn(1, 4),
        strict=False,
        collect_attributes=True,
        graph_dir=None,
        mode=None,
        expand_nested=True,
    )
    assert SEEN == [] and g.collect_attributes
    tv.draw_graph(model, torch.randn(1, 4), mask=None)  # a keyword of forward's own still goes there
    assert SEEN == ["mask"]
    with pytest.raises(TypeError, match="strict must be True or False, got 'yes'"):
        tv.draw_graph(model, torch.randn(1, 4), strict="yes")  # type: ignore[arg-type]


@needs_dot
def test_save_graph_writes_torchviews_files_and_creates_the_directory(tmp_path: Path) -> None:
    out = tmp_path / "new" / "folder"
    tv.draw_graph(zoo.InplaceModule(), torch.randn(2, 4), graph_name="net", directory=str(out), save_graph=True)
    assert (out / "net.gv").read_text().startswith("digraph net")
    assert (out / "net.gv.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    tv.draw_graph(zoo.InplaceModule(), torch.randn(2, 4), filename="x", directory=str(out), save_graph=True)
    assert (out / "x").exists() and (out / "x.png").exists()
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(tv.RenderError, match=r"cannot save the graph into directory '.*file': it is a file"):
        tv.draw_graph(zoo.InplaceModule(), torch.randn(2, 4), directory=str(blocker), save_graph=True)


@needs_dot
def test_visual_graph_render_honours_directory_and_filename(tmp_path: Path) -> None:
    g = tv.draw_graph(zoo.InplaceModule(), torch.randn(2, 4), graph_name="net", directory=str(tmp_path))
    assert (g.visual_graph.directory, g.visual_graph.filename) == (str(tmp_path), "net.gv")
    path = g.visual_graph.render(format="svg")
    assert Path(path) == tmp_path / "net.gv.svg" and (tmp_path / "net.gv").read_text() == g.source
    assert g.view(depth=1).visual_graph.directory == str(tmp_path)  # views keep where to save


def test_resize_graph_sets_the_size_in_place() -> None:
    g = tv.draw_graph(zoo.InplaceModule(), torch.randn(2, 4))
    g.resize_graph(scale=0.5)
    assert g.visual_graph.graph_attr["size"] == "6.0,6.0"  # 0.5 * max(12, rows * 0.3)
    g.resize_graph(scale=1.0, size_per_element=10.0, min_size=1)
    rows = len(g.visual_graph.body)
    assert g.visual_graph.graph_attr["size"] == f"{rows * 10.0},{rows * 10.0}"
    assert 'size="' in g.visual_graph.source
    with pytest.raises(ValueError, match="scale must be a number >= 0, got -1"):
        g.resize_graph(scale=-1)


# -- the returned graph's torchview attributes --------------------------------------------------
def test_node_objects_and_hierarchy() -> None:
    g = tv.draw_graph(MLP(), input_size=(2, 128), hide_inner_tensors=False)
    (inp,) = g.root_container
    assert isinstance(inp, torchview.TensorNode) and (inp.name, inp.depth, inp.tensor_shape) == (
        "input-tensor",
        0,
        (2, 128),
    )
    assert list(g.input_nodes) == list(g.root_container)
    (out,) = g.output_nodes
    assert (out.name, out.depth, out.tensor_shape) == ("output-tensor", 0, (2, 128)) and out.is_leaf()
    ((container, top),) = g.node_hierarchy.items()
    assert container.depth == -1 and top[0] is inp
    ((model, inside),) = top[1].items()
    assert (model.name, model.depth, model.input_shape, model.output_shape) == ("MLP", 0, [(2, 128)], [(2, 128)])
    ((seq, layers),) = inside[0].items()
    names = [next(iter(item)).name for item in layers if isinstance(item, dict)]
    assert seq.name == "Sequential" and names == ["Linear", "ReLU", "Linear"]
    linear = next(iter(layers[0]))
    assert linear.depth == 2 and linear.is_container and not linear.is_activation and not seq.is_container
    assert inp.children[0] is model and inp in seq.parents and inp in linear.parents


def test_traverse_graph_visits_down_to_depth_with_torchviews_rules() -> None:
    seen: list[tuple[str, int]] = []

    def collect(**kwargs: Any) -> None:
        node = kwargs["cur_node"]
        if isinstance(node, (torchview.ModuleNode, torchview.FunctionNode)):
            seen.append((node.name, node.depth))

    g = tv.draw_graph(MLP(), input_size=(2, 128), depth=2)
    g.traverse_graph(collect, cur_node=g.node_hierarchy, subgraph=None)
    assert seen == [("MLP", 0), ("Sequential", 1), ("Linear", 2), ("ReLU", 2), ("Linear", 2)]
    seen.clear()
    g.view(hide_module_functions=False, depth=3).traverse_graph(collect)  # opens Linear: its op
    assert ("linear", 3) in seen
    with pytest.raises(TypeError, match="action_fn must be callable"):
        g.traverse_graph(None)


def test_edge_list_is_the_drawn_edges() -> None:
    g = tv.draw_graph(MLP(), input_size=(2, 128), depth=2)
    pairs = [(a.name, b.name) for a, b in g.edge_list]
    assert pairs == [
        ("input-tensor", "Linear"),
        ("Linear", "ReLU"),
        ("ReLU", "Linear"),
        ("Linear", "output-tensor"),
    ]
    assert len(g.edge_list) == sum(e.count for e in g.get_view().edges)


def test_collect_attributes() -> None:
    g = tv.draw_graph(zoo.InplaceModule(), input_size=(1, 4), collect_attributes=True, hide_module_functions=False)
    found: dict[str, Any] = {}

    def collect(**kwargs: Any) -> None:
        node = kwargs["cur_node"]
        if not isinstance(node, torchview.TensorNode):
            found.setdefault(node.name, node.attributes)

    g.traverse_graph(collect, cur_node=g.node_hierarchy, subgraph=None)
    assert found["Linear"] == "Linear(training=False, in_features=4, out_features=4)"
    assert found["ReLU"] == "ReLU(training=False, inplace=True)"
    assert found["InplaceModule"] == "InplaceModule(training=False)"
    assert found["linear"] == (
        "[[Tensor(shape=(1, 4), dtype=torch.float32), Tensor(shape=(4, 4), dtype=torch.float32), "
        "Tensor(shape=(4,), dtype=torch.float32)], {}]"
    )
    plain = tv.draw_graph(zoo.InplaceModule(), input_size=(1, 4))
    assert not plain.collect_attributes
    assert all(
        next(iter(d)).attributes is None for d in plain.node_hierarchy.values() for d in d if isinstance(d, dict)
    )


# -- errors a torchview user's except catches ------------------------------------------------------
def test_errors_are_the_builtin_types_torchview_raises() -> None:
    model = zoo.InplaceModule()
    with pytest.raises(RuntimeError, match="pass exactly one of input_size or input_data"):
        tv.draw_graph(model, torch.randn(1, 4), (1, 4))
    with pytest.raises(RuntimeError):
        tv.draw_graph(model)
    with pytest.raises(TypeError, match="bad input_size"):
        tv.draw_graph(model, input_size={0: 1})
    with pytest.raises(TypeError, match="bad input_size 'hello'"):
        tv.draw_graph(model, input_size="hello")
    with pytest.raises(ValueError):
        tv.draw_graph(model, torch.randn(1, 4), depth=-1)
    with pytest.raises(RuntimeError):  # the forward raised
        tv.draw_graph(model, input_size=(1, 3))
    for err in (tv.InvalidInputError,):  # and they stay tensorview's own
        with pytest.raises(err):
            tv.draw_graph(model, input_size="hello")


# -- torchview's README and introduction notebook, import changed ------------------------------
def test_torchview_readme_example_runs_unchanged() -> None:
    from tensorview.torchview import draw_graph

    model = MLP()
    batch_size = 2
    # device='meta' -> no memory is consumed for visualization
    model_graph = draw_graph(model, input_size=(batch_size, 128), device="meta")
    assert "Linear" in model_graph.visual_graph.source


def test_torchview_notebook_examples_run_unchanged() -> None:
    from tensorview.torchview import draw_graph

    model_graph_1 = draw_graph(
        MLP(),
        input_size=(2, 128),
        graph_name="MLP",
        hide_inner_tensors=False,
        hide_module_functions=False,
    )
    assert "linear" in model_graph_1.visual_graph.source
    model_graph_2 = draw_graph(SimpleRNN(), input_size=(2, 3), graph_name="RecursiveNet", roll=True)
    model_graph_2.visual_graph  # noqa: B018 - the notebook displays it
    model_graph_2.resize_graph(scale=0.5)
    assert model_graph_2.visual_graph.graph_attr["size"] == "6.0,6.0"
    assert "×4" in model_graph_2.visual_graph.source or "x4" in model_graph_2.visual_graph.source


def test_the_torchview_module_exports_torchviews_names() -> None:
    assert torchview.draw_graph is tv.draw_graph and torchview.ComputationGraph is tv.ComputationGraph
    assert set(torchview.__all__) >= {
        "draw_graph",
        "ComputationGraph",
        "Node",
        "TensorNode",
        "ModuleNode",
        "FunctionNode",
    }
    s = torchview.NodeContainer([1, 2, 1])
    s.add(3)
    assert list(s) == [1, 2, 3]

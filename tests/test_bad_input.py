"""Bad input (issue 8, section C): a clear error that names the bad value and says what
is allowed, and nothing of the user's altered; inputs torchview users write are accepted."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.graph import View, ViewNode
from tensorview.recording import is_patched

from .fixtures import models as zoo
from .fixtures import needs
from .fixtures.hf import written_for

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)


@pytest.fixture
def graph() -> tv.ComputationGraph:
    return tv.draw_graph(zoo.InplaceModule(), input_size=(2, 4))


def input_specs(graph: tv.ComputationGraph) -> list[tuple[str, tuple[int, ...], str, str]]:
    g = graph.graph
    return [(n.name, tuple(n.shape), n.dtype, n.device) for n in (g.nodes[i] for i in g.inputs)]  # type: ignore[attr-defined]


def assert_intact(model: nn.Module, device: str = "cpu") -> None:
    assert all(p.device.type == device for p in model.parameters())
    assert not is_patched()


# -- make_dot, stylers, Recorder options, save -----------------------------------------------
def test_make_dot_needs_a_recorded_graph() -> None:
    with pytest.raises(
        tv.InvalidTypeError, match=r"make_dot needs a tensorview Graph or ComputationGraph .*got str: 'x'"
    ):
        tv.make_dot("x")


def test_make_dot_styler_cls_must_be_a_styler_class(graph: tv.ComputationGraph) -> None:
    with pytest.raises(
        tv.InvalidTypeError, match=r"styler_cls must be GraphvizStyler or a subclass of it, got <class 'int'>"
    ):
        tv.make_dot(graph, styler_cls=int)


def test_make_dot_styler_instance_says_pass_the_class(graph: tv.ComputationGraph) -> None:
    with pytest.raises(
        tv.InvalidTypeError, match=r"must be a class .*got an instance of GraphvizStyler: pass the class"
    ):
        tv.make_dot(graph, styler_cls=tv.GraphvizStyler())
    assert "fontname=Helvetica" in tv.make_dot(graph, styler_cls=tv.GraphvizStyler, fontname="Helvetica").source


def test_view_styler_must_be_a_styler_instance(graph: tv.ComputationGraph) -> None:
    with pytest.raises(tv.InvalidTypeError, match=r"styler must be a GraphvizStyler instance .*got str: 'x'"):
        graph.view(styler="x")
    with pytest.raises(
        tv.InvalidTypeError, match=r"got the class GraphvizStyler: pass an instance, e.g. styler=GraphvizStyler\(\)"
    ):
        graph.view(styler=tv.GraphvizStyler)
    assert graph.styler is None  # the graph it was called on is unchanged


def test_recorder_options_checked_at_construction() -> None:
    model = zoo.InplaceModule()
    with pytest.raises(tv.InvalidTypeError, match=r"options must be a ViewOptions or None, got 'x'"):
        tv.Recorder(model, options="x")  # type: ignore[arg-type]
    with pytest.raises(tv.InvalidTypeError, match=r"render_options must be a RenderOptions or None, got ViewOptions"):
        tv.Recorder(model, render_options=tv.ViewOptions())  # type: ignore[arg-type]
    assert_intact(model)
    with tv.Recorder(model, options=tv.ViewOptions(depth=1)) as rec:
        model(torch.randn(2, 4))
    assert rec.graph.options.depth == 1


def test_save_format_must_be_a_str(graph: tv.ComputationGraph, tmp_path: Path) -> None:
    with pytest.raises(
        tv.InvalidTypeError, match=r"save format must be a str, one of \['svg', .*'json', 'html'.*\], got int: 5"
    ):
        graph.save(tmp_path / "x.svg", format=5)  # type: ignore[arg-type]
    assert not (tmp_path / "x.svg").exists()


def test_bytes_paths_are_accepted_and_other_paths_named(graph: tv.ComputationGraph, tmp_path: Path) -> None:
    out = graph.save(bytes(tmp_path / "g.gv"))  # type: ignore[arg-type]
    assert out == str(tmp_path / "g.gv") and (tmp_path / "g.gv").read_text() == graph.source
    tv.draw_graph(
        zoo.InplaceModule(),
        input_size=(2, 4),
        save_graph=True,
        filename=b"m.gv",  # type: ignore[arg-type]
        directory=bytes(tmp_path),
    )  # type: ignore[arg-type]
    assert (tmp_path / "m.gv").exists()
    with pytest.raises(tv.InvalidTypeError, match=r"save path must be a str or os.PathLike .*got int: 5"):
        graph.save(5)  # type: ignore[arg-type]


# -- taps --------------------------------------------------------------------------------------
def test_tap_indices_and_names_of_the_wrong_type() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    with pytest.raises(tv.InvalidTypeError, match=r"indices must be an int or a list of them, got float: 1.0"):
        tv.taps.ForwardOutput().modules(model, indices=1.0)  # type: ignore[arg-type]
    with pytest.raises(tv.InvalidTypeError, match=r"names must be a str pattern or a list of them, got int: 5"):
        tv.taps.ForwardOutput().modules(model, names=5)  # type: ignore[arg-type]
    with pytest.raises(
        tv.InvalidTypeError, match=r"types must be a torch.nn.Module subclass or a list of them, got int: 5"
    ):
        tv.taps.ForwardOutput().modules(model, types=5)  # type: ignore[arg-type]
    assert not model._forward_hooks and not model[0]._forward_hooks  # nothing was hooked


# -- Renderer ----------------------------------------------------------------------------------
def test_renderer_without_hooks_says_which_to_implement(graph: tv.ComputationGraph) -> None:
    class Nothing(tv.Renderer):
        pass

    class NodesOnly(tv.Renderer):
        def render_node(self, node: ViewNode) -> str:
            return node.name

    view: View = graph.get_view()
    with pytest.raises(
        NotImplementedError, match="Nothing must implement the Renderer hook.* render_node and render_edge"
    ):
        Nothing().render(view)
    with pytest.raises(NotImplementedError, match=r"NodesOnly must implement the Renderer hook\(s\) render_edge \("):
        NodesOnly().render(view)


# -- numpy integers ----------------------------------------------------------------------------
def test_numpy_integers_in_input_size_and_depth_are_accepted() -> None:
    np = pytest.importorskip("numpy", reason=needs.NUMPY)
    model = zoo.UnusedInput()
    graph = tv.draw_graph(model, input_size=[(np.int64(2), np.int32(4)), (2, np.int64(4))], depth=np.int64(1))
    assert input_specs(graph) == [("x", (2, 4), "float32", "cpu"), ("unused", (2, 4), "float32", "cpu")]
    assert graph.options.depth == 1 and type(graph.options.depth) is int
    assert type(graph.view(depth=np.int16(2)).options.depth) is int
    with tv.taps.ForwardOutput().children(nn.Sequential(nn.Linear(3, 4)), indices=np.int64(0)) as tap:
        assert tap.paths == ["0"]


# -- devices -----------------------------------------------------------------------------------
def test_meta_model_recorded_on_cpu_says_it_has_no_data() -> None:
    with torch.device("meta"):
        model = zoo.InplaceModule()
    with pytest.raises(
        tv.InvalidInputError,
        match=r"cannot record InplaceModule on cpu: its parameters are on the meta device and hold no data "
        r"\(e.g. 'fc.weight'\).*device='meta'.*to_empty",
    ):
        tv.draw_graph(model, input_size=(2, 4), device="cpu")
    assert_intact(model, "meta")


def test_meta_input_data_with_a_cpu_model() -> None:
    model = zoo.InplaceModule()
    x = torch.randn(2, 4, device="meta")
    with pytest.raises(
        tv.InvalidInputError,
        match=r"input_data tensor\(shape=\(2, 4\), dtype=torch.float32, device=meta\) is on the meta device "
        r"and holds no data, so it cannot be moved to cpu.*pass device='meta'",
    ):
        tv.draw_graph(model, input_data=x)
    assert_intact(model)
    assert input_specs(tv.draw_graph(model, input_data=x, device="meta"))[0][3] == "meta"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error for a machine without a GPU")
def test_cuda_without_a_gpu() -> None:
    model = zoo.InplaceModule()
    with pytest.raises(
        tv.InvalidInputError,
        match=r"device 'cuda' is not available here \(torch.cuda.is_available\(\) is False.*use device='cpu', or device='meta'",
    ):
        tv.draw_graph(model, input_size=(2, 4), device="cuda")
    with pytest.raises(tv.InvalidInputError, match=r"device 'cuda:1' is not available"):
        tv.draw_graph(model, input_size=(2, 4), device="cuda:1")
    assert_intact(model)


def test_forward_kwargs_tensors_are_moved_to_the_device() -> None:
    mask = torch.zeros(2, 4, dtype=torch.bool)
    graph = tv.draw_graph(zoo.KwargsModel(), input_data=torch.randn(2, 4), device="meta", mask=mask, scale=2.0)
    assert input_specs(graph) == [("x", (2, 4), "float32", "meta"), ("mask", (2, 4), "bool", "meta")]
    assert mask.device.type == "cpu"  # the caller's tensor is not moved
    meta_mask = torch.zeros(2, 4, dtype=torch.bool, device="meta")
    with pytest.raises(
        tv.InvalidInputError,
        match=r"forward keyword argument 'mask' tensor\(shape=\(2, 4\), dtype=torch.bool, device=meta\)",
    ):
        tv.draw_graph(zoo.KwargsModel(), input_data=torch.randn(2, 4), mask=meta_mask)


# -- input_size and dtypes ---------------------------------------------------------------------
def test_dtypes_input_size_cannot_make() -> None:
    model = zoo.InplaceModule()
    with pytest.raises(
        tv.InvalidInputError,
        match=r"dtypes: input_size cannot make a torch.qint8 tensor .*use a floating, complex, integer or bool dtype",
    ):
        tv.draw_graph(model, input_size=(2, 4), dtypes=torch.qint8)
    # a dtype torch cannot make on that device: torch's reason, and what to do
    with pytest.raises(
        tv.InvalidInputError,
        match=r"cannot make an input tensor of shape \(2, 4\) and dtype torch.float8_e4m3fn on cpu: .*device='meta'",
    ):
        tv.draw_graph(model, input_size=(2, 4), dtypes=torch.float8_e4m3fn)
    assert_intact(model)


def test_input_size_dimension_too_large() -> None:
    with pytest.raises(
        tv.InvalidInputError, match=r"shape \(1, 10{30}\) has a dimension over 2\*\*63 - 1 .*0\.\.9223372036854775807"
    ):
        tv.draw_graph(zoo.InplaceModule(), input_size=(1, 10**30))


def test_a_model_class_instead_of_an_instance() -> None:
    with pytest.raises(
        tv.InvalidTypeError, match=r"got the class nn.Linear: pass an instance, e.g. nn.Linear\(\.\.\.\)"
    ):
        tv.draw_graph(nn.Linear, input_size=(2, 4))  # type: ignore[arg-type]
    with pytest.raises(
        tv.InvalidTypeError,
        match=r"Recorder needs a torch.nn.Module instance, got the class InplaceModule: pass an instance",
    ):
        tv.Recorder(zoo.InplaceModule)  # type: ignore[arg-type]


def test_dtypes_with_input_data_is_an_error() -> None:
    x = torch.randn(2, 4)
    with pytest.raises(
        tv.InvalidInputError, match=r"dtypes=torch.float64 applies to input_size only; with input_data, give tensors"
    ):
        tv.draw_graph(zoo.InplaceModule(), input_data=x, dtypes=torch.float64)
    assert x.dtype == torch.float32


# -- misspelled options ------------------------------------------------------------------------
class KwargsOnly(nn.Module):
    """Like a Hugging Face model: named inputs, the rest in ``**kwargs``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        # an object, not a dict: draw_graph may run a copy of the module tree, which shares
        # the model's objects but gives each dict, list and set attribute a copy of its own
        self.log = types.SimpleNamespace(seen={})

    @property
    def seen(self) -> dict[str, Any]:
        return self.log.seen

    def forward(self, input_ids: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        self.log.seen = dict(kwargs)
        return self.fc(input_ids)


class DeclaresDept(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, dept: int = 0) -> torch.Tensor:
        return self.fc(x) * dept


@pytest.mark.parametrize("typo", ["dept", "depht"])
def test_misspelled_option_says_did_you_mean(typo: str) -> None:
    model = KwargsOnly()
    with pytest.raises(
        tv.InvalidInputError,
        match=rf"unknown draw_graph option '{typo}': did you mean depth\? \(KwargsOnly.forward does not declare "
        rf"'{typo}': it would go into forward's \*\*kwargs\); to pass '{typo}' to forward anyway.*"
        rf"input_data={{'input_ids': ..., '{typo}': ...}}",
    ):
        tv.draw_graph(model, input_size=(2, 4), **{typo: 2})
    assert model.seen == {}  # forward never ran
    with pytest.raises(
        tv.InvalidInputError,
        match=r"did you mean roll\? \(Linear.forward does not declare 'rol': forward takes no such keyword",
    ):
        tv.draw_graph(nn.Linear(4, 4), input_size=(2, 4), rol=True)
    # the way round it works, and a keyword forward declares is passed as usual
    tv.draw_graph(model, input_data={"input_ids": torch.randn(2, 4), typo: 2})
    assert model.seen == {typo: 2}
    tv.draw_graph(DeclaresDept(), input_size=(2, 4), dept=2)


def test_misspelled_option_in_a_transformers_model() -> None:
    transformers = pytest.importorskip("transformers", reason=needs.TRANSFORMERS)
    config = transformers.LlamaConfig(
        vocab_size=100,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    model = transformers.LlamaModel(config)
    with pytest.raises(tv.InvalidInputError, match=r"'dept': did you mean depth\? \(LlamaModel.forward"):
        tv.draw_graph(model, input_size=(1, 5), dtypes=torch.long, dept=2)


# -- torchview's draw_graph(model, x) ----------------------------------------------------------
def test_tensors_in_the_input_size_place_are_input_data() -> None:
    x, y = torch.randn(2, 4), torch.randn(3, 4, dtype=torch.float64)
    assert input_specs(tv.draw_graph(zoo.InplaceModule(), x)) == [("x", (2, 4), "float32", "cpu")]
    assert input_specs(tv.draw_graph(zoo.UnusedInput(), (x, y))) == [
        ("x", (2, 4), "float32", "cpu"),
        ("unused", (3, 4), "float64", "cpu"),
    ]
    assert input_specs(tv.draw_graph(zoo.UnusedInput(), {"x": x, "unused": y}, device="meta")) == [
        ("x", (2, 4), "float32", "meta"),
        ("unused", (3, 4), "float64", "meta"),
    ]
    assert x.device.type == "cpu"
    assert input_specs(tv.draw_graph(zoo.InplaceModule(), torch.Size([2, 4]))) == [("x", (2, 4), "float32", "cpu")]
    assert input_specs(tv.record(zoo.InplaceModule(), "m", x)) == [("x", (2, 4), "float32", "cpu")]


def test_errors_never_print_a_whole_tensor() -> None:
    x = torch.arange(10_000.0).reshape(100, 100)
    with pytest.raises(
        tv.InvalidTypeError, match=r"got tensor\(shape=\(100, 100\), dtype=torch.float32, device=cpu\)$"
    ):
        tv.draw_graph(zoo.InplaceModule(), input_size=(2, 4), dtypes=x)
    with pytest.raises(tv.InvalidInputError, match=r"^pass exactly one of input_size or input_data \(got both\)$"):
        tv.draw_graph(zoo.InplaceModule(), x, input_size=x)
    with pytest.raises(tv.InvalidInputError, match=r"bad input_size \[1.5, 1.5, .*\.\.\.: expected a shape") as info:
        tv.draw_graph(zoo.InplaceModule(), [1.5] * 1000)
    assert len(str(info.value)) < 250
    with pytest.raises(
        tv.InvalidTypeError,
        match=r"draw_graph needs a torch.nn.Module, got Tensor: tensor\(shape=\(100, 100\), [^,]*, device=cpu\)$",
    ):
        tv.draw_graph(x, input_size=(2, 4))  # type: ignore[arg-type]


# -- issue 21 C4 ------------------------------------------------------------------------------
@pytest.mark.parametrize("option", ["meta_replay", "keep_parameters"])
@pytest.mark.parametrize("value", [1, "yes", None])
def test_recorder_flags_must_be_bools(option: str, value: object) -> None:
    with pytest.raises(tv.InvalidTypeError, match=rf"{option} must be True or False, got {type(value).__name__}: "):
        tv.Recorder(nn.Linear(2, 2), **{option: value})


def test_recorder_probes_of_the_wrong_kind_are_named() -> None:
    from tensorview.recording import SourceProbe

    with pytest.raises(tv.InvalidTypeError, match=r"probes must be a list of tensorview.recording.Probe .*got int: 5"):
        tv.Recorder(nn.Linear(2, 2), probes=5)  # type: ignore[arg-type]
    with pytest.raises(tv.InvalidTypeError, match=r"got SourceProbe: .* \(pass \[SourceProbe\(\.\.\.\)\]\)"):
        tv.Recorder(nn.Linear(2, 2), probes=SourceProbe())  # type: ignore[arg-type]
    with pytest.raises(tv.InvalidTypeError, match=r"Probe instances, got 3"):
        tv.Recorder(nn.Linear(2, 2), probes=[3])  # type: ignore[list-item]


class BadRepr:
    def __repr__(self) -> str:
        raise ValueError("repr exploded")


@pytest.mark.parametrize(
    "call",
    [
        lambda: tv.taps.ForwardOutput().modules(BadRepr()),  # type: ignore[arg-type]
        lambda: tv.taps.ForwardOutput().modules(nn.Linear(2, 2), indices=[BadRepr()]),  # type: ignore[list-item]
        lambda: tv.draw_graph(BadRepr(), input_size=(1, 2)),  # type: ignore[arg-type]
        lambda: tv.draw_graph(nn.Linear(2, 2), input_size=(1, 2), source=BadRepr()),  # type: ignore[arg-type]
        lambda: tv.summary(nn.Linear(2, 2), input_size=(1, 2), depth=BadRepr()),  # type: ignore[arg-type]
        lambda: tv.Recorder(nn.Linear(2, 2), meta_replay=BadRepr()),  # type: ignore[arg-type]
        lambda: tv.Recorder(nn.Linear(2, 2), probes=BadRepr()),  # type: ignore[arg-type]
    ],
)
def test_a_raising_repr_never_hides_the_error(call: Any) -> None:
    with pytest.raises(tv.InvalidTypeError, match=r"<BadRepr object \(its repr raised ValueError\)>"):
        call()

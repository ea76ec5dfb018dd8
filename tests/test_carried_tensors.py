"""Tensors carried inside plain Python objects (torchvision's ``ImageList``, a ``Box``, a
KV cache, objects registered with ``torch.utils._pytree``) cross module boundaries with
edges, like tensors passed directly; the objects are never copied, rebuilt or changed."""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree
from torch import nn

from tensorview.graph import Graph, ModuleNode, TensorNode
from tensorview.recording import Recorder
from tensorview.recording.tree import flat_tensors, map_tensors
from tests.fixtures import detection as det
from tests.fixtures import needs
from tests.fixtures.hf import written_for

pytestmark = [written_for]  # names and config fields of transformers models (fixtures/hf.py)


class Box:
    def __init__(self, t: torch.Tensor) -> None:
        self.t = t


class A(nn.Module):
    def forward(self, x: torch.Tensor) -> Box:
        return Box(torch.sigmoid(x))


class B(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, box: Box) -> torch.Tensor:
        return self.lin(box.t)


class M(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = A(), B()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x))


def record(model: nn.Module, *args: Any, **kwargs: Any) -> tuple[Any, Graph]:
    with torch.no_grad(), Recorder(model) as rec:
        out = model(*args, **kwargs)
    return out, rec.graph


def call(g: Graph, name: str) -> ModuleNode:
    """The one call of ``name``: a path, or ``path.method`` for a method call."""
    (m,) = [
        m for m in g.modules() if (m.path if getattr(m, "method", None) is None else f"{m.path}.{m.method}") == name
    ]
    return m


def within(g: Graph, node_id: int, m: ModuleNode) -> bool:
    """Whether node ``node_id`` was made inside call ``m`` (by its chain of parents)."""
    p = g.nodes[node_id].parent
    while p is not None:
        if p == m.id:
            return True
        p = g.nodes[p].parent
    return False


def boundary_problems(g: Graph, m: ModuleNode) -> list[str]:
    """Tensors used inside call ``m`` that did not enter it, or made inside it and used
    outside without leaving it (parameters and buffers are exempt)."""
    edges = set(g.edges)
    problems = []
    for s, d in edges:
        src = g.nodes[s]
        if not isinstance(src, TensorNode) or src.is_param or d == m.id or isinstance(g.nodes[d], TensorNode):
            continue
        inside_src, inside_dst = within(g, s, m), m.contains(d)
        if not inside_src and inside_dst and (s, m.id) not in edges:
            problems.append(f"{src.name} enters {m.call_name} without an edge")
        if inside_src and not inside_dst and (m.id, s) not in edges:
            problems.append(f"{src.name} leaves {m.call_name} without an edge")
    return sorted(problems)


def test_box_reproducer() -> None:
    out, g = record(M(), torch.randn(1, 3))
    a, b = call(g, "a"), call(g, "b")
    assert (g.shapes(g.input_tensors(a.id)), g.shapes(g.output_tensors(a.id))) == ([(1, 3)], [(1, 3)])
    assert (g.shapes(g.input_tensors(b.id)), g.shapes(g.output_tensors(b.id))) == ([(1, 3)], [(1, 2)])
    (t,) = g.output_tensors(a.id)
    assert g.input_tensors(b.id) == [t]  # an edge a -> sigmoid_out -> b
    assert boundary_problems(g, a) == [] and boundary_problems(g, b) == []
    assert type(out) is torch.Tensor and out.shape == (1, 2)


def test_objects_are_passed_as_they_are_and_left_unchanged() -> None:
    seen: list[Any] = []

    class Keep(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.b = B()

        def forward(self, box: Box) -> torch.Tensor:
            seen.append(box)
            return self.b(box)

    box = Box(torch.randn(1, 3))
    t = box.t
    model = Keep()
    with torch.no_grad():
        expected = model.b.lin(t)
    out, g = record(model, box)
    assert seen == [box] and box.t is t and type(box.t) is torch.Tensor  # not copied, not altered
    assert vars(box) == {"t": t}
    (x,) = g.inputs  # the root input held by an object is named after its attribute
    assert g.nodes[x].name == "box_t" and g.nodes[x].role == "input"
    assert g.input_tensors(call(g, "b").id) == [x]
    assert type(out) is torch.Tensor and torch.equal(out, expected)


def test_draw_graph_takes_an_object_as_input_data() -> None:
    """torchview's ``draw_graph(model, x)`` form with an object holding the tensor."""
    import tensorview as tv

    box = Box(torch.randn(1, 3))
    for graph in (tv.draw_graph(B(), box), tv.draw_graph(B(), input_data=[box])):
        g = graph.graph
        assert [g.nodes[i].name for i in g.inputs] == ["box_t"]
        assert g.input_tensors(call(g, "lin").id) == g.inputs
    assert type(box.t) is torch.Tensor


def test_only_tensors_used_inside_enter_a_call() -> None:
    """A cache-like object passed to every layer, which stores a tensor in it and reads the
    one the layer before stored: each layer gets an edge from that one tensor only (not
    from everything the cache holds), and what it stores and a later layer reads is one of
    its results."""

    class Cache:
        def __init__(self) -> None:
            self.layers: list[Any] = []

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x: torch.Tensor, cache: Cache) -> torch.Tensor:
            previous = cache.layers[-1]
            cache.layers.append(self.lin(x))
            return x + previous

    class Stack(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(Layer() for _ in range(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            cache = Cache()
            cache.layers.append(x * 2)
            for layer in self.layers:
                x = layer(x, cache)
            return x

    _, g = record(Stack(), torch.randn(1, 3))
    (mul_out,) = g.output_tensors(next(f.id for f in g.functions() if f.op == "mul"))
    stored = mul_out
    for i in range(3):
        layer = call(g, f"layers.{i}")
        ins, outs = g.input_tensors(layer.id), g.output_tensors(layer.id)
        assert len(ins) == 2 and stored in ins  # x, and the one cached tensor it reads
        lin_out = g.output_tensors(call(g, f"layers.{i}.lin").id)[0]
        # stored in the cache and read by the next layer: a result of this one (the last
        # layer's is never read again, so nothing takes it out of that layer)
        assert (lin_out in outs) == (i < 2)
        stored = lin_out
        assert boundary_problems(g, layer) == []


def test_results_inside_returned_objects_and_versions_made_in_place() -> None:
    class Pad(nn.Module):
        def forward(self, x: torch.Tensor) -> Box:
            out = x.new_zeros(2, 5)
            out[:, :3].copy_(x)  # the result is a version made through a view
            return Box(out)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.pad = Pad()
            self.fc = nn.Linear(5, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(self.pad(x).t)

    _, g = record(Net(), torch.randn(2, 3))
    pad, fc = call(g, "pad"), call(g, "fc")
    (t,) = g.output_tensors(pad.id)
    assert g.input_tensors(fc.id) == [t] and g.nodes[t].shape == (2, 5)
    assert boundary_problems(g, pad) == [] and boundary_problems(g, fc) == []


class Registered:
    """A type registered with torch.utils._pytree (as for torch.export); its tensor is
    kept under a name its flatten function knows."""

    def __init__(self, data: torch.Tensor, scale: float) -> None:
        self._data = data
        self.scale = scale


pytree.register_pytree_node(
    Registered,
    lambda r: ([r._data], r.scale),
    lambda values, scale: Registered(values[0], scale),
)


class Slotted:
    __slots__ = ("t", "__hidden")

    def __init__(self, t: torch.Tensor) -> None:
        self.t = t


@dataclasses.dataclass
class Pair:
    left: torch.Tensor
    right: torch.Tensor


@pytest.mark.parametrize(
    ("wrap", "first"),
    [
        (lambda t: Registered(t, 2.0), lambda o: o._data),
        (Slotted, lambda o: o.t),
        (lambda t: Pair(t, t + 1), lambda o: o.left),
    ],
    ids=["pytree", "slots", "dataclass"],
)
def test_pytree_types_slots_and_dataclasses(wrap: Any, first: Any) -> None:
    class Make(nn.Module):
        def forward(self, x: torch.Tensor) -> Any:
            return wrap(x.relu())

    class Use(nn.Module):
        def forward(self, obj: Any) -> torch.Tensor:
            return first(obj) * 3

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.make, self.use = Make(), Use()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.use(self.make(x))

    _, g = record(Net(), torch.randn(1, 3))
    make, use = call(g, "make"), call(g, "use")
    assert g.output_tensors(make.id) and set(g.output_tensors(make.id)) >= set(g.input_tensors(use.id))
    assert g.input_tensors(use.id)
    assert boundary_problems(g, make) == [] and boundary_problems(g, use) == []


def test_walks_are_bounded() -> None:
    from tensorview.recording.objects import MAX_OBJECT_DEPTH

    t = torch.randn(2)
    cyclic = Box(t)
    cyclic.me = cyclic  # type: ignore[attr-defined]
    assert flat_tensors(cyclic, objects=True) == [t]
    deep: Any = Box(t)
    for _ in range(MAX_OBJECT_DEPTH + 2):
        deep = Box(deep)  # type: ignore[arg-type]
    assert flat_tensors(deep, objects=True) == []  # deeper than the object limit: not walked
    holder = Box(nn.Linear(2, 2))  # type: ignore[arg-type]
    assert flat_tensors(holder, objects=True) == []  # modules are never walked
    huge = Box(list(range(100_000)) + [t])  # type: ignore[arg-type]
    assert flat_tensors(huge, objects=True) == []  # past the visit budget
    # map_tensors never rebuilds an object: it hands the tensors over and keeps the object
    seen: list[torch.Tensor] = []
    assert map_tensors(cyclic, lambda x: x * 2, objects=seen.append) is cyclic and seen == [t]


def test_namedtuples_and_model_outputs_still_rebuilt() -> None:
    transformers = pytest.importorskip("transformers", reason=needs.TRANSFORMERS)
    out = transformers.modeling_outputs.BaseModelOutput(last_hidden_state=torch.zeros(1))
    new = map_tensors(out, lambda x: x + 1)
    assert type(new) is type(out) and new is not out and new.last_hidden_state.item() == 1.0
    assert map_tensors(out, lambda x: x) is out


@pytest.mark.parametrize("make", [det.GeneralizedRCNN, det.RetinaNet], ids=["rcnn", "retinanet"])
def test_detection_fixture_boundaries(make: Any) -> None:
    model = make().eval()
    images = det.images()
    with torch.no_grad():
        expected = model(images)
    out, g = record(model, images)
    assert all(torch.equal(o["boxes"], e["boxes"]) for o, e in zip(out, expected))
    transform, backbone = call(g, "transform"), call(g, "backbone")
    (batch,) = g.output_tensors(transform.id)
    assert g.nodes[batch].shape == (2, 3, 64, 64)
    assert g.input_tensors(backbone.id) == [batch]  # transform -> ImageList.tensors -> backbone
    post = call(g, "transform.postprocess")
    assert post.method == "postprocess" and g.output_tensors(post.id)
    for m in g.modules():
        if m.depth == 1:
            assert boundary_problems(g, m) == [], m.call_name


TORCHVISION_MODELS = [
    "fasterrcnn_resnet50_fpn",
    "maskrcnn_resnet50_fpn",
    "keypointrcnn_resnet50_fpn",
    "retinanet_resnet50_fpn",
    "fcos_resnet50_fpn",
    "ssd300_vgg16",
]


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is None, reason=needs.TORCHVISION)
@pytest.mark.parametrize("name", TORCHVISION_MODELS)
def test_torchvision_detection_transform_feeds_backbone(name: str) -> None:
    from torchvision.models import detection

    kwargs: dict[str, Any] = {"weights": None, "weights_backbone": None}
    if name != "ssd300_vgg16":
        kwargs.update(min_size=64, max_size=96)
    model = getattr(detection, name)(**kwargs).eval()
    _, g = record(model, [torch.rand(3, 64, 80), torch.rand(3, 72, 64)])
    transform, backbone = call(g, "transform"), call(g, "backbone")
    batch = g.output_tensors(transform.id)
    assert batch and set(g.input_tensors(backbone.id)) == set(batch)
    assert call(g, "transform.postprocess").method == "postprocess"

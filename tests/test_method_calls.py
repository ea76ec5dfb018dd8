"""A submodule used through a method other than ``forward`` (``self.enc.embed(x)``) is a
module call of that submodule, marked with the method's name, holding what it runs."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.graph import Graph, ModuleNode
from tensorview.recording import Probe, Recorder
from tensorview.render import JsonRenderer


class Enc(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.lin(x))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = Enc()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.enc.embed(x) + 1


def record(model: nn.Module, *args: Any) -> Graph:
    with torch.no_grad(), Recorder(model) as rec:
        model(*args)
    return rec.graph


def op(g: Graph, name: str) -> Any:
    (f,) = [f for f in g.functions() if f.op == name]
    return f


def test_method_call_is_a_box_holding_what_it_runs() -> None:
    g = record(Net(), torch.randn(1, 3))
    root, enc, lin = list(g.modules())
    assert (enc.path, enc.method, enc.parent) == ("enc", "embed", root.id)
    assert (lin.path, lin.method, lin.parent) == ("enc.lin", None, enc.id)
    assert op(g, "sigmoid").parent == enc.id and op(g, "add").parent == root.id
    # x enters the method call; its result leaves it for the add in the root
    assert g.input_tensors(enc.id) == g.inputs
    (out,) = g.output_tensors(enc.id)
    assert g.input_tensors(op(g, "add").id)[0] == out
    assert g.nodes[out].parent == enc.id


def test_labels_json_and_table_name_the_method() -> None:
    model = Net()
    with torch.no_grad(), tv.Recorder(model) as rec:
        model(torch.randn(1, 3))
    graph = rec.graph
    assert "enc.embed: Enc" in graph.view(depth=1).source
    assert "enc.embed: Enc" in graph.view(depth=2, expand_nested=True).source  # the cluster too
    data = graph.to_json()
    methods = {n["name"]: n.get("method") for n in data["nodes"] if n["kind"] == "module"}
    assert methods == {"model": None, "enc_embed": "embed", "enc_lin": None}
    assert sum("method" in n for n in data["nodes"]) == 1  # only set where there is one
    view = json.loads(JsonRenderer().render(graph.view(depth=1).get_view()))
    assert [n.get("method") for n in view["nodes"] if n["kind"] == "module"] == ["embed"]
    assert "Enc.embed" in graph.graph.table()


class Inner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(3, 3)

    def project(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).tanh()


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Inner()
        self.scale = nn.Parameter(torch.ones(3))

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self._helper(self.inner.project(x))

    def _helper(self, x: torch.Tensor) -> torch.Tensor:  # a method of the same module
        return free_function(x) * self.scale


def free_function(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x)


class Nested(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.outer = Outer()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.outer.encode(x)
        return self.outer.encode(y) - self._own_helper(x)

    def _own_helper(self, x: torch.Tensor) -> torch.Tensor:  # the root's own: no box
        return x.exp()


def test_nested_methods_helpers_and_repeats() -> None:
    g = record(Nested(), torch.randn(1, 3))
    mods = list(g.modules())
    assert [(m.path, m.method) for m in mods] == [
        ("", None),
        ("outer", "encode"),
        ("outer.inner", "project"),
        ("outer.inner.proj", None),
        ("outer", "encode"),
        ("outer.inner", "project"),
        ("outer.inner.proj", None),
    ]
    assert [m.call_index for m in mods if m.path == "outer"] == [0, 1]
    first = mods[1]
    # the helper method of the same module and the free function it calls stay in its box
    relu, mul = [f for f in g.functions() if f.op in ("relu", "mul")][:2]
    assert relu.parent == first.id and mul.parent == first.id
    assert all(g.nodes[f.parent].path == "outer.inner" for f in g.functions() if f.op == "tanh")
    assert op(g, "exp").parent == g.root and op(g, "sub").parent == g.root
    # the second call is fed by the first
    assert g.input_tensors(mods[4].id) == g.output_tensors(first.id)
    with torch.no_grad():
        graph = tv.draw_graph(Nested(), input_size=(1, 3), depth=1, roll=True)
    assert graph.source.count("outer.encode: Outer") == 1  # the repeated method call rolls


def test_method_and_forward_calls_of_one_module_are_told_apart() -> None:
    class Both(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc = Enc()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.enc.embed(x) + self.enc.lin(x)

    g = record(Both(), torch.randn(1, 3))
    assert [(m.path, m.method) for m in g.modules()] == [
        ("", None),
        ("enc", "embed"),
        ("enc.lin", None),
        ("enc.lin", None),
    ]
    assert list(g.modules())[3].parent == g.root  # the direct call of enc.lin is not in the box


def test_failure_inside_a_method_names_its_module() -> None:
    class Bad(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def embed(self, x: torch.Tensor) -> torch.Tensor:
            return self.lin(x) @ torch.ones(4, 4)

    class Net2(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bad = Bad()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.bad.embed(x)

    with pytest.raises(tv.RecordingError) as info:
        tv.draw_graph(Net2(), input_size=(1, 3))
    assert info.value.module_path == "bad"
    assert "'bad' (Bad)" in str(info.value)
    g = info.value.graph.graph
    (box,) = [m for m in g.modules() if m.method == "embed"]
    assert box.failed


def test_probes_see_method_calls_open_and_close() -> None:
    class Count(Probe):
        name = "ops_inside"

        def __init__(self) -> None:
            self.n: dict[int, int] = {}

        def enter_call(self, m: ModuleNode, module: nn.Module) -> None:
            self.n[m.id] = 0

        def exit_op(self, fn: Any, func: Any) -> None:
            for i in self.open:
                if i in self.n:
                    self.n[i] += 1

        def layers(self) -> dict[str, dict[int, int]]:
            return {self.name: self.n}

    model = Net()
    with torch.no_grad(), Recorder(model, probes=[Count()]) as rec:
        model(torch.randn(1, 3))
    counts = {rec.graph.nodes[i].call_name: n for i, n in rec.graph.annotations.layer("ops_inside").items()}
    assert counts == {"enc.embed": 2, "enc.lin": 1}


def test_meta_replay_gives_the_same_graph() -> None:
    with torch.device("meta"):
        model = Nested()
    x = torch.randn(1, 3, device="meta")
    graphs = []
    for replay in (True, False):
        with torch.no_grad(), Recorder(model, meta_replay=replay) as rec:
            model(x)
        graphs.append(rec.graph.to_dict())
    assert graphs[0] == graphs[1]


def test_ops_in_a_decorated_forward_are_placed_without_walking_the_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """A forward behind a decorator (``functools.wraps``: transformers' attention and layer
    forwards) is known by the code of the function it wraps: ops in its body need no walk
    up the Python stack for method calls (``Methods.resync``), and method calls of its
    submodules are still found."""
    import functools

    from tensorview.recording import methods

    def decorated(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return wrapped

    class Sub(nn.Module):
        def encode(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.sub, self.lin = Sub(), nn.Linear(4, 4)

        @decorated
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for _ in range(5):
                x = shift(x + 1)  # a function called from the body (``rotate_half``)
            return self.sub.encode(self.lin(x))

    def shift(x: torch.Tensor) -> torch.Tensor:
        return x - 1

    walks: list[str] = []
    resync = methods.Methods.resync

    def counted(self: Any, f: Any, callee: Any) -> None:
        walks.append(f.f_code.co_name)
        resync(self, f, callee)

    monkeypatch.setattr(methods.Methods, "resync", counted)
    with Recorder(Net()) as rec:
        rec.model(torch.zeros(1, 4))
    assert walks == ["encode"]  # was a walk for the body and one for each call of ``shift``
    calls = {m.call_name: m for m in rec.ir.modules()}
    assert set(calls) == {"", "lin", "sub.encode"} and calls["sub.encode"].method == "encode"
    mul = next(f for f in rec.ir.functions() if f.name.startswith("mul"))
    assert mul.parent == calls["sub.encode"].id

"""Issue 21, part A: classes of models that were recorded as wrong graphs (a method that
calls its own module first, a module assigned in forward, parameters written through
``.data``, ``torch.vmap`` inside forward, deep nesting)."""

from __future__ import annotations

import torch
from torch import nn

import tensorview as tv
from tensorview.graph import Graph, ModuleNode
from tensorview.recording import Recorder


def record(model: nn.Module, *inputs: torch.Tensor) -> Graph:
    with Recorder(model) as rec:
        model(*inputs)
    return rec.graph


def calls(g: Graph) -> list[tuple[str, str | None]]:
    """``(call_name, parent's call_name)`` of every module call, in order."""
    return [(m.call_name, g.module(m.parent).call_name if m.parent is not None else None) for m in g.modules()]


def call_of(g: Graph, call_name: str) -> ModuleNode:
    (m,) = [m for m in g.modules() if m.call_name == call_name]
    return m


# -- a submodule's method whose first torch call is the module itself ----------------------


class Enc(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self(x) * 2  # the module itself first, then an op

    def generate(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(2):
            x = self(x)  # only calls of the module itself, then an op
        return x.tanh()


class UsesMethod(nn.Module):
    def __init__(self, method: str) -> None:
        super().__init__()
        self.enc = Enc()
        self.method = method

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return getattr(self.enc, self.method)(x) + 1


def test_method_calling_its_module_first_is_a_method_call() -> None:
    g = record(UsesMethod("encode"), torch.randn(2, 4))
    assert calls(g) == [("", None), ("enc.encode", ""), ("enc", "enc.encode"), ("enc.fc", "enc")]
    encode = call_of(g, "enc.encode")
    (mul,) = [f for f in g.functions() if f.op == "mul"]
    assert mul.parent == encode.id  # the op after the call belongs to the method, not the caller
    (add,) = [f for f in g.functions() if f.op == "add"]
    assert add.parent == g.root
    # the method's result leaves it and feeds the caller's add
    (mul_out,) = g.successors(mul.id)
    assert (encode.id, mul_out) in g.edges and (mul_out, add.id) in g.edges


def test_generate_loop_of_module_calls_is_one_method_call() -> None:
    g = record(UsesMethod("generate"), torch.randn(2, 4))
    assert calls(g) == [
        ("", None),
        ("enc.generate", ""),
        ("enc", "enc.generate"),
        ("enc.fc", "enc"),
        ("enc", "enc.generate"),
        ("enc.fc", "enc"),
    ]
    (tanh,) = [f for f in g.functions() if f.op == "tanh"]
    assert tanh.parent == call_of(g, "enc.generate").id


# -- modules assigned or made in forward ------------------------------------------------------


class Attn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.q(x)


class SwitchesAttn(nn.Module):
    """Replaces its attention inside forward (BigBird switches implementations so)."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = Attn()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.attn = Attn()  # registered in forward: the old one may be freed now
        act = nn.ReLU()  # made in forward, never registered
        kept = [nn.Tanh()]
        return kept[0](act(self.attn(x)))


class HasBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = SwitchesAttn()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.block.gate = nn.Sigmoid()  # registered on a child, called from here
        return self.block.gate(self.block(x))


def test_module_assigned_in_forward_gets_its_attribute_path() -> None:
    g = tv.draw_graph(HasBlock(), input_size=(2, 4)).graph
    assert [(m.path, m.cls_name) for m in g.modules()] == [
        ("", "HasBlock"),
        ("block", "SwitchesAttn"),
        ("block.attn", "Attn"),
        ("block.attn.q", "Linear"),
        ("block.ReLU", "ReLU"),  # a local: its class, under the call that made it
        ("block.Tanh", "Tanh"),
        ("block.gate", "Sigmoid"),
    ]
    assert not any("_modules" in n.path for n in g.nodes)

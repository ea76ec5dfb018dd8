"""Ops whose meta kernel refuses what their CPU kernel takes (recording/metafills.py):
``torch._grouped_mm`` in float32, transformers' default mixture-of-experts kernel.  On
meta and fake the recording must be the CPU's: same ops, shapes, dtypes and edges, and the
same cost numbers."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import torch
from torch import nn

import tensorview as tv
from tensorview.graph import Graph
from tensorview.recording import Recorder

from .test_transformers_tier import ARCHS, build

pytestmark = pytest.mark.skipif(not hasattr(torch, "_grouped_mm"), reason="this torch has no grouped_mm")


class GroupedExperts(nn.Module):
    """Two experts applied to jagged groups of tokens, as MoE kernels do."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.w = nn.Parameter(torch.randn(2, 8, 16) / 4)  # strides: multiples of 16 bytes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        offs = torch.tensor([2, x.shape[0]], dtype=torch.int32, device=x.device)
        return torch._grouped_mm(h, self.w, offs=offs).relu()


def structure(g: Graph) -> list[Any]:
    """The graph without devices: kinds, names, paths, ops, shapes, dtypes, edges."""
    out: list[Any] = [list(g.edges)]
    for n in g.nodes:
        out.append(
            (n.kind, n.name, n.path, getattr(n, "op", None), getattr(n, "shape", None), getattr(n, "dtype", None))
        )
    return out


def meta_copy(model: nn.Module) -> nn.Module:
    with torch.device("meta"):
        twin = type(model)()
    return twin.eval()


def test_meta_kernel_refuses_float32() -> None:
    """What the fill is for (on torch 2.13); where a later torch's meta kernel takes float32,
    the fill is never used and the other tests here hold all the same."""
    a = torch.empty(6, 8, device="meta")
    b = torch.empty(2, 8, 16, device="meta")
    offs = torch.empty(2, dtype=torch.int32, device="meta")
    try:
        out = torch._grouped_mm(a, b, offs=offs)
    except RuntimeError as e:
        assert "BF16" in str(e)
    else:  # a torch whose meta kernel takes it: what the fill gives, too
        assert (out.shape, out.dtype) == ((6, 16), torch.float32)


@pytest.mark.parametrize("grad", [False, True])
def test_grouped_mm_records_on_meta_as_on_the_cpu(grad: bool) -> None:
    torch.manual_seed(0)
    model = GroupedExperts().eval()
    x = torch.randn(6, 8)
    with torch.set_grad_enabled(grad), Recorder(model) as cpu:
        out = model(x)
    meta_model = meta_copy(model)
    with torch.set_grad_enabled(grad), Recorder(meta_model) as meta:
        out_meta = meta_model(x.to("meta"))
    assert "_grouped_mm" in [f.op for f in cpu.graph.functions()]
    assert structure(meta.graph) == structure(cpu.graph)
    assert (out_meta.shape, out_meta.stride(), out_meta.dtype) == (out.shape, out.stride(), out.dtype)
    assert out_meta.requires_grad == out.requires_grad == grad
    meta.graph.lint()


def test_grouped_mm_costs_on_meta_what_it_costs_on_the_cpu() -> None:
    """Training memory included: the fill's autograd saves what the real op saves."""
    torch.manual_seed(0)
    model = GroupedExperts()
    x = torch.randn(6, 8)
    cpu = tv.summary(model, input_data=x, device="cpu")
    meta = tv.summary(model, input_data=x)  # meta, the default
    fake = tv.summary(model, input_data=x, device="fake")
    assert cpu.saved_bytes is not None and cpu.saved_bytes > 6 * 8 * 4  # the grouped_mm input at least
    for s in (meta, fake):
        assert (s.total_params, s.total_flops, s.saved_bytes, s.training_memory_bytes) == (
            cpu.total_params,
            cpu.total_flops,
            cpu.saved_bytes,
            cpu.training_memory_bytes,
        )
        assert [(r.path, r.saved_bytes) for r in s.rows] == [(r.path, r.saved_bytes) for r in cpu.rows]


def test_mixtral_with_its_default_experts_kernel_draws_on_meta_and_fake() -> None:
    """A float32 Mixtral as ``from_config`` builds it (grouped_mm experts): the same ops on
    CPU, meta and fake, and the same cost numbers."""
    arch = next(a for a in ARCHS if a.model_type == "mixtral")
    model = build(arch, "cpu")  # (the tier's meta build passes experts_implementation; this one does not)
    ids = {"input_ids": torch.randint(0, 100, (1, 8))}
    ops = {}
    for device in ("cpu", "meta", "fake"):
        g = tv.draw_graph(model, input_data=ids, device=device)
        ops[device] = [f.op for f in g.graph.functions()]
    assert ops["cpu"].count("_grouped_mm") == 2 * 2  # gate_up and down, per layer
    assert ops["fake"] == ops["cpu"]
    # transformers casts histc's input by device type: float on the CPU, int elsewhere (meta)
    assert len(ops["meta"]) == len(ops["cpu"])
    assert {(a, b) for a, b in zip(ops["cpu"], ops["meta"]) if a != b} <= {("float", "int")}
    cpu = tv.summary(model, input_data=ids, device="cpu")
    meta = tv.summary(model, input_data=ids)
    assert (meta.total_flops, meta.saved_bytes) == (cpu.total_flops, cpu.saved_bytes)


def test_fake_does_not_log_the_refusals_it_fills(caplog: pytest.LogCaptureFixture) -> None:
    """FakeTensorMode logs a traceback for every meta kernel that raises; for a filled op
    that would only alarm (the recording succeeds), so it is dropped."""
    with caplog.at_level(logging.ERROR, logger="torch._subclasses.fake_tensor"):
        g = tv.draw_graph(GroupedExperts(), input_data=torch.randn(6, 8), device="fake")
    assert "_grouped_mm" in [f.op for f in g.graph.functions()]
    assert not [r for r in caplog.records if "attempting to run meta" in r.getMessage()]

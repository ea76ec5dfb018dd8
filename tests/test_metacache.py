"""Meta replay of results that are views of tensors an op made internally."""

from __future__ import annotations

import torch
from torch import nn

from tensorview.recording import Recorder
from tensorview.recording.metacache import flat_args as _flat


class Linears(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def test_linear_on_3d_input_is_replayed_as_a_new_tensor() -> None:
    with torch.device("meta"):
        model = Linears()
    x = torch.zeros(2, 8, 16, device="meta")
    with torch.no_grad():
        plain = model(x)
    assert plain._is_view() and plain._base is not None  # F.linear: a view of its mm result
    results = []
    for replay in (True, False):
        with torch.no_grad(), Recorder(model, meta_replay=replay) as rec:
            out = model(x)
        results.append((rec.graph.to_dict(), rec._session.meta_hits, out))  # type: ignore[union-attr]
    (g_replay, hits, out_replay), (g_ran, no_hits, out_ran) = results
    assert hits >= 3 and no_hits == 0  # linear 2..4 replayed
    assert g_replay == g_ran
    assert (out_replay.shape, out_replay.stride(), out_replay.dtype) == (out_ran.shape, out_ran.stride(), out_ran.dtype)


def test_flat_arguments() -> None:
    t = torch.zeros(1)
    assert _flat((t, [t, t], (1, 2)), {"x": t})
    assert not _flat(([[t]],), {})
    assert not _flat(([{"a": t}],), {})
    assert not _flat(({"a": t},), {})


class InPlaceViews(nn.Module):
    """Ops that change their argument's shape in place, repeated (BigBird's block-sparse
    attention calls ``unsqueeze_(2)`` on four matmul results, then concatenates them)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outs = []
        for i in range(4):
            a = torch.matmul(x + i, self.w)
            a.unsqueeze_(2)
            a.transpose_(0, 1)
            a.squeeze_(1)
            outs.append(a)
        return torch.cat(outs, dim=1)


def test_in_place_view_ops_replayed_change_their_argument_as_the_op_does() -> None:
    """A replayed ``unsqueeze_`` returned its argument unchanged (a 4-D tensor where the op
    makes a 5-D one): the next op failed on meta, or drew wrong shapes."""
    import tensorview as tv

    cpu, meta = (tv.draw_graph(InPlaceViews(), input_size=(1, 4, 2, 8), device=d).graph for d in (None, "meta"))
    assert [f.op for f in meta.functions()] == [f.op for f in cpu.functions()]
    assert [t.shape for t in meta.tensors()] == [t.shape for t in cpu.tensors()]
    assert meta.shapes(meta.outputs) == cpu.shapes(cpu.outputs) == [(4, 4, 2, 8)]
    with torch.device("meta"):
        model = InPlaceViews()
    x = torch.zeros(1, 4, 2, 8, device="meta")
    with torch.no_grad(), Recorder(model) as rec:
        out = model(x)
    assert out.shape == (4, 4, 2, 8)
    assert rec._session is not None and rec._session.meta_hits > 0  # the replay path ran

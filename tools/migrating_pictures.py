"""Draw the small pictures of docs/migrating.md (docs/images/migrating-*.svg).

    python tools/migrating_pictures.py        # needs Graphviz dot

Each picture is one small model of the differences table, drawn by tensorview with its
defaults, and where an option gives torchview's picture, with that option too.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

import tensorview as tv

OUT = Path(__file__).resolve().parent.parent / "docs" / "images"


class Blocks(nn.Module):
    """Four identical blocks in a row: folded by default."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.ReLU()) for _ in range(4)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)  # type: ignore[no-any-return]


class Outputs(nn.Module):
    """Returns a result and a pair of states."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(4, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out, h = self.rnn(x)
        return out, (h, h * 2)


class Masked(nn.Module):
    """Builds a causal mask in forward: a created tensor feeding masked_fill."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = self.proj(x) @ x.transpose(-1, -2)
        mask = torch.ones(x.shape[-2], x.shape[-2]).triu(1).bool()
        return scores.masked_fill(mask, float("-inf")).softmax(-1)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    x8 = torch.randn(1, 8)
    pictures = {
        "migrating-fold": tv.draw_graph(Blocks(), x8, graph_dir="LR"),
        "migrating-fold-false": tv.draw_graph(Blocks(), x8, graph_dir="LR", fold=False),
        "migrating-outputs": tv.draw_graph(Outputs(), torch.randn(3, 1, 4)),
        "migrating-created": tv.draw_graph(Masked(), torch.randn(1, 3, 4)),
    }
    for name, graph in pictures.items():
        path = graph.save(OUT / f"{name}.svg")
        print(path, Path(path).stat().st_size, "bytes")


if __name__ == "__main__":
    main()

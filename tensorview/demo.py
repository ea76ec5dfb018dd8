"""Render a small demo model: ``python -m tensorview.demo docs/images/demo.svg``.

The model is a tiny residual CNN (the shape of a ResNet block stack), recorded on the
``meta`` device so no memory is allocated, drawn at depth 3 with nested boxes."""

from __future__ import annotations

import os
import sys

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x
        return self.relu(out)


class TinyResNet(nn.Module):
    def __init__(self, channels: int = 16, blocks: int = 2, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1), nn.ReLU())
        self.layer1 = nn.Sequential(*[Block(channels) for _ in range(blocks)])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer1(self.stem(x))
        return self.fc(torch.flatten(self.pool(x), 1))


def main(argv: list[str]) -> int:
    import tensorview as tv

    path = argv[1] if len(argv) > 1 else "demo.svg"
    graph = tv.draw_graph(TinyResNet(), input_size=(1, 3, 32, 32), device="meta", depth=3, expand_nested=True)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    print(graph.table())
    try:
        graph.save(path)
    except tv.RenderError as e:  # no Graphviz program: still leave the DOT source
        graph.save(os.path.splitext(path)[0] + ".gv")
        print(e, file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

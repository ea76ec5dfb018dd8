"""torchvision-free replicas of torchvision's ``densenet201`` and ``raft_small``, for the
layout benchmarks (torchvision has no CPU build on the development machine).

Same module tree (names and classes as torchvision registers them), same control flow
(the dense layers' concatenation inside the layer, RAFT's correlation pyramid built by
a method of ``corr_block``, 12 recurrent updates with grid sampling between them), same
shapes; written from torchvision's architecture description (densenet.py, optical_flow/
raft.py), not copied.  Pretrained weights and weight initialisation are left out: a
drawing depends on neither.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

META = torch.device("meta")


# -- densenet201 ------------------------------------------------------------------------------
class _DenseLayer(nn.Module):
    def __init__(self, in_features: int, growth: int, bn_size: int) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(in_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(in_features, bn_size * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def bn_function(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        return self.conv1(self.relu1(self.norm1(torch.cat(inputs, 1))))

    def forward(self, x: list[torch.Tensor]) -> torch.Tensor:
        return self.conv2(self.relu2(self.norm2(self.bn_function(x))))


class _DenseBlock(nn.ModuleDict):
    def __init__(self, layers: int, in_features: int, growth: int, bn_size: int) -> None:
        super().__init__()
        for i in range(layers):
            self.add_module(f"denselayer{i + 1}", _DenseLayer(in_features + i * growth, growth, bn_size))

    def forward(self, init: torch.Tensor) -> torch.Tensor:
        features = [init]
        for _, layer in self.items():
            features.append(layer(features))
        return torch.cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(in_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(in_features, out_features, 1, bias=False)
        self.pool = nn.AvgPool2d(2, stride=2)


class DenseNet(nn.Module):
    """torchvision's DenseNet-BC; ``densenet201``: growth 32, blocks (6, 12, 48, 32), init 64."""

    def __init__(self, growth: int = 32, blocks: tuple[int, ...] = (6, 12, 48, 32), init: int = 64) -> None:
        super().__init__()
        self.features = nn.Sequential(
            OrderedDict(
                conv0=nn.Conv2d(3, init, 7, stride=2, padding=3, bias=False),
                norm0=nn.BatchNorm2d(init),
                relu0=nn.ReLU(inplace=True),
                pool0=nn.MaxPool2d(3, stride=2, padding=1),
            )
        )
        n = init
        for i, size in enumerate(blocks):
            self.features.add_module(f"denseblock{i + 1}", _DenseBlock(size, n, growth, 4))
            n += size * growth
            if i != len(blocks) - 1:
                self.features.add_module(f"transition{i + 1}", _Transition(n, n // 2))
                n //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(n))
        self.classifier = nn.Linear(n, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.features(x), inplace=True)
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(out, (1, 1)), 1))


def densenet201() -> tuple[nn.Module, dict[str, Any]]:
    with torch.device(META):
        model = DenseNet()
    return model.eval(), {"x": torch.zeros(1, 3, 224, 224, device=META)}


def densenet121_cpu() -> tuple[nn.Module, dict[str, Any]]:
    """densenet121 (blocks 6/12/24/16) with real weights on the CPU, a 64x64 image: the CNN
    whose recording overhead per op is measured against its plain forward."""
    torch.manual_seed(0)
    return DenseNet(blocks=(6, 12, 24, 16)).eval(), {"x": torch.randn(1, 3, 64, 64)}


# -- raft_small -----------------------------------------------------------------------------
def conv_norm_act(cin: int, cout: int, k: int, stride: int = 1, norm: Any = None, act: bool = True) -> nn.Sequential:
    """torchvision.ops.Conv2dNormActivation: conv, optional norm, optional ReLU."""
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, bias=True)]
    if norm is not None:
        layers.append(norm(cout))
    if act:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


class BottleneckBlock(nn.Module):
    def __init__(self, cin: int, cout: int, norm: Any, stride: int = 1) -> None:
        super().__init__()
        self.convnormrelu1 = conv_norm_act(cin, cout // 4, 1, norm=norm)
        self.convnormrelu2 = conv_norm_act(cout // 4, cout // 4, 3, stride, norm=norm)
        self.convnormrelu3 = conv_norm_act(cout // 4, cout, 1, norm=norm)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = nn.Identity() if stride == 1 else conv_norm_act(cin, cout, 1, stride, norm=norm, act=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.convnormrelu3(self.convnormrelu2(self.convnormrelu1(x)))
        return self.relu(self.downsample(x) + y)


class FeatureEncoder(nn.Module):
    def __init__(self, layers: tuple[int, ...], norm: Any, strides: tuple[int, ...] = (2, 1, 2, 2)) -> None:
        super().__init__()
        self.convnormrelu = conv_norm_act(3, layers[0], 7, strides[0], norm=norm)
        for i in range(3):
            first = BottleneckBlock(layers[i], layers[i + 1], norm, strides[i + 1])
            setattr(self, f"layer{i + 1}", nn.Sequential(first, BottleneckBlock(layers[i + 1], layers[i + 1], norm)))
        self.conv = nn.Conv2d(layers[3], layers[4], 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.convnormrelu(x)
        return self.conv(self.layer3(self.layer2(self.layer1(x))))


class CorrBlock(nn.Module):
    """All-pairs correlation pyramid (``build_pyramid``) sampled around each pixel's
    current match (``index_pyramid``)."""

    def __init__(self, levels: int = 4, radius: int = 3) -> None:
        super().__init__()
        self.levels, self.radius = levels, radius
        self.corr_pyramid: list[torch.Tensor] = []
        self.out_channels = levels * (2 * radius + 1) ** 2

    def build_pyramid(self, fmap1: torch.Tensor, fmap2: torch.Tensor) -> None:
        b, c, h, w = fmap1.shape
        corr = torch.matmul(fmap1.view(b, c, h * w).transpose(1, 2), fmap2.view(b, c, h * w))
        corr = (corr.view(b, h, w, 1, h, w) / torch.sqrt(torch.tensor(c))).reshape(b * h * w, 1, h, w)
        self.corr_pyramid = [corr]
        for _ in range(self.levels - 1):
            corr = F.avg_pool2d(corr, kernel_size=2, stride=2)
            self.corr_pyramid.append(corr)

    def index_pyramid(self, centroids_coords: torch.Tensor) -> torch.Tensor:
        side = 2 * self.radius + 1
        d = torch.linspace(-self.radius, self.radius, side)
        delta = torch.stack(torch.meshgrid(d, d, indexing="ij"), dim=-1).to(centroids_coords.device)
        delta = delta.view(1, side, side, 2)
        b, _, h, w = centroids_coords.shape
        coords = centroids_coords.permute(0, 2, 3, 1).reshape(b * h * w, 1, 1, 2)
        indexed = []
        for volume in self.corr_pyramid:
            indexed.append(grid_sample(volume, coords + delta).view(b, h, w, -1))
            coords = coords / 2
        return torch.cat(indexed, dim=-1).permute(0, 3, 1, 2).contiguous()


def grid_sample(img: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """``F.grid_sample`` with absolute pixel coordinates (torchvision's optical_flow._utils)."""
    h, w = img.shape[-2:]
    x, y = grid.split([1, 1], dim=-1)
    x = 2 * x / (w - 1) - 1
    if h > 1:
        y = 2 * y / (h - 1) - 1
    return F.grid_sample(img, torch.cat([x, y], dim=-1), mode="bilinear", align_corners=True)


def coords_grid(batch: int, h: int, w: int) -> torch.Tensor:
    ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    return torch.stack([xs, ys], dim=0).float()[None].repeat(batch, 1, 1, 1)


class MotionEncoder(nn.Module):
    def __init__(self, corr_channels: int) -> None:
        super().__init__()
        self.convcorr1 = conv_norm_act(corr_channels, 96, 1)
        self.convcorr2 = nn.Identity()
        self.convflow1 = conv_norm_act(2, 64, 7)
        self.convflow2 = conv_norm_act(64, 32, 3)
        self.conv = conv_norm_act(96 + 32, 82 - 2, 3)

    def forward(self, flow: torch.Tensor, corr_features: torch.Tensor) -> torch.Tensor:
        corr = self.convcorr2(self.convcorr1(corr_features))
        motion = self.convflow2(self.convflow1(flow))
        return torch.cat([self.conv(torch.cat([corr, motion], dim=1)), flow], dim=1)


class ConvGRU(nn.Module):
    def __init__(self, input_size: int, hidden: int) -> None:
        super().__init__()
        self.convz = nn.Conv2d(hidden + input_size, hidden, 3, padding=1)
        self.convr = nn.Conv2d(hidden + input_size, hidden, 3, padding=1)
        self.convq = nn.Conv2d(hidden + input_size, hidden, 3, padding=1)

    def forward(self, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        hx = torch.cat([h, x], dim=1)
        z = torch.sigmoid(self.convz(hx))
        r = torch.sigmoid(self.convr(hx))
        q = torch.tanh(self.convq(torch.cat([r * h, x], dim=1)))
        return (1 - z) * h + z * q


class RecurrentBlock(nn.Module):
    def __init__(self, input_size: int, hidden: int) -> None:
        super().__init__()
        self.convgru1 = ConvGRU(input_size, hidden)
        self.hidden_size = hidden

    def forward(self, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return self.convgru1(h, x)  # raft_small has one GRU (the second one passes h through)


class FlowHead(nn.Module):
    def __init__(self, cin: int, hidden: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, hidden, 3, padding=1)
        self.conv2 = nn.Conv2d(hidden, 2, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(self.relu(self.conv1(x)))


class UpdateBlock(nn.Module):
    def __init__(self, corr_channels: int, context: int, hidden: int) -> None:
        super().__init__()
        self.motion_encoder = MotionEncoder(corr_channels)
        self.recurrent_block = RecurrentBlock(82 + context, hidden)
        self.flow_head = FlowHead(hidden, 128)
        self.hidden_state_size = hidden

    def forward(
        self, hidden: torch.Tensor, context: torch.Tensor, corr: torch.Tensor, flow: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.cat([context, self.motion_encoder(flow, corr)], dim=1)
        hidden = self.recurrent_block(hidden, x)
        return hidden, self.flow_head(hidden)


class RAFT(nn.Module):
    """raft_small: bottleneck encoders (instance norm for features, none for context),
    4-level correlation pyramid of radius 3, a one-GRU update block, flow upsampled by
    interpolation (no mask predictor)."""

    def __init__(self) -> None:
        super().__init__()
        self.feature_encoder = FeatureEncoder((32, 32, 64, 96, 128), nn.InstanceNorm2d)
        self.context_encoder = FeatureEncoder((32, 32, 64, 96, 160), None)
        self.corr_block = CorrBlock(levels=4, radius=3)
        self.update_block = UpdateBlock(self.corr_block.out_channels, 160 - 96, 96)
        self.mask_predictor = None

    def forward(self, image1: torch.Tensor, image2: torch.Tensor, num_flow_updates: int = 12) -> list[torch.Tensor]:
        b, _, h, w = image1.shape
        fmap1, fmap2 = torch.chunk(self.feature_encoder(torch.cat([image1, image2], dim=0)), chunks=2, dim=0)
        self.corr_block.build_pyramid(fmap1, fmap2)
        hidden, context = torch.split(self.context_encoder(image1), [96, 64], dim=1)
        hidden, context = torch.tanh(hidden), F.relu(context)
        coords0 = coords_grid(b, h // 8, w // 8).to(fmap1.device)
        coords1 = coords_grid(b, h // 8, w // 8).to(fmap1.device)
        flows = []
        for _ in range(num_flow_updates):
            coords1 = coords1.detach()
            corr = self.corr_block.index_pyramid(centroids_coords=coords1)
            hidden, delta = self.update_block(hidden, context, corr, coords1 - coords0)
            coords1 = coords1 + delta
            flow = coords1 - coords0
            flows.append(8 * F.interpolate(flow, size=(h, w), mode="bilinear", align_corners=True))
        return flows


def raft_small() -> tuple[nn.Module, dict[str, Any]]:
    with torch.device(META):
        model = RAFT()
    image = torch.zeros(1, 3, 224, 224, device=META)
    return model.eval(), {"image1": image, "image2": image.clone()}


# -- resnet50 -------------------------------------------------------------------------------
def resnet50(device: str = "meta") -> tuple[nn.Module, dict[str, Any]]:
    """torchvision's ``resnet50`` layout (the replica of tests/fixtures/cost_models.py, whose
    parameter count the tests check against torchvision's), a 224x224 image; random weights
    on the CPU."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.fixtures.cost_models import ResNet50

    torch.manual_seed(0)
    with torch.device(device):
        model = ResNet50()
    return model, {"x": torch.randn(1, 3, 224, 224, device=device)}

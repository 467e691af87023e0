"""The detectors object-detection builds: torchvision's, and a small FCOS of its own.

Standalone on purpose: torch and torchvision only, no TrainLab, so that an
exported model folder carries this file and its ``predict.py`` rebuilds the
network without TrainLab installed.

Nothing is ever downloaded: every torchvision builder is called with
``weights=None, weights_backbone=None``; weights already on the machine are
loaded afterwards from a file (``load_weights``).  Labels are 1..n for the n
classes (0 is the background, as every torchvision detector expects), so a
detector has ``n + 1`` outputs.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

import torch
from torch import nn

# name -> (torchvision builder, what it is); "small-fcos" is built here.
ARCHITECTURES = {
    "small-fcos": "FCOS on a small CNN of TrainLab's (three feature levels, strides 8-32), from scratch; fast on a CPU",
    "fasterrcnn_mobilenet_v3_large_fpn": "Faster R-CNN, MobileNetV3-Large FPN backbone",
    "fasterrcnn_mobilenet_v3_large_320_fpn": "Faster R-CNN, MobileNetV3-Large FPN backbone, tuned for small images",
    "fasterrcnn_resnet50_fpn_v2": "Faster R-CNN, ResNet-50 FPN v2 backbone",
    "retinanet_resnet50_fpn_v2": "RetinaNet, ResNet-50 FPN v2 backbone",
    "fcos_resnet50_fpn": "FCOS, ResNet-50 FPN backbone",
    "ssdlite320_mobilenet_v3_large": "SSDlite, MobileNetV3-Large backbone, 320 px inputs",
}
# Where each torchvision detector keeps its backbone (what backbone-only weights load into).
BACKBONE_PREFIX = {"ssdlite320_mobilenet_v3_large": "backbone.features", "small-fcos": "backbone.body"}


class SmallBackbone(nn.Module):
    """Four conv stages (strides 2, 4, 8, 16, then 32) and 1x1 projections of the last three."""

    def __init__(self, widths: tuple[int, ...] = (16, 32, 64, 96, 128), out_channels: int = 64) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        channels = 3
        self.taps: list[int] = []
        for index, width in enumerate(widths):
            layers.append(nn.Sequential(
                nn.Conv2d(channels, width, 3, stride=2, padding=1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(width, width, 3, padding=1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
            ))  # fmt: skip
            channels = width
            if index >= len(widths) - 3:
                self.taps.append(index)
        self.body = nn.ModuleList(layers)
        self.project = nn.ModuleList(nn.Conv2d(widths[i], out_channels, 1) for i in self.taps)
        self.out_channels = out_channels

    def forward(self, x: torch.Tensor) -> OrderedDict[str, torch.Tensor]:
        features = OrderedDict()
        for index, layer in enumerate(self.body):
            x = layer(x)
            if index in self.taps:
                level = self.taps.index(index)
                features[str(level)] = self.project[level](x)
        return features


def _small_fcos(num_classes: int, image_size: int, **kwargs: Any) -> nn.Module:
    from torchvision.models.detection import FCOS
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.models.detection.fcos import FCOSHead

    backbone = SmallBackbone()
    anchors = AnchorGenerator(sizes=((8,), (16,), (32,)), aspect_ratios=((1.0,),) * 3)
    head = FCOSHead(backbone.out_channels, 1, num_classes, num_convs=2)
    return FCOS(backbone, num_classes, min_size=image_size, max_size=image_size, anchor_generator=anchors, head=head,
                **kwargs)  # fmt: skip


def build_detector(arch: str, num_classes: int, image_size: int, **kwargs: Any) -> nn.Module:
    """A detector for ``num_classes`` classes (plus the background), with random weights.

    ``image_size`` is the longer side the detector resizes its inputs to
    (SSDlite always takes 320 x 320).  ``kwargs`` go to the builder
    (``score_thresh``, ``detections_per_img``, ...).
    """
    outputs = num_classes + 1
    if arch == "small-fcos":
        return _small_fcos(outputs, image_size, **kwargs)
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown detector {arch!r}: one of {', '.join(ARCHITECTURES)}")
    from torchvision.models import detection

    builder = getattr(detection, arch)
    if arch.startswith("ssdlite"):
        kwargs = {k: v for k, v in kwargs.items() if k in ("score_thresh", "detections_per_img")}
        return builder(weights=None, weights_backbone=None, num_classes=outputs, **kwargs)
    sizes = {"min_size": image_size, "max_size": image_size}
    if arch.startswith("fasterrcnn"):  # its own keyword for the final threshold
        if "score_thresh" in kwargs:
            kwargs["box_score_thresh"] = kwargs.pop("score_thresh")
        if "detections_per_img" in kwargs:
            kwargs["box_detections_per_img"] = kwargs.pop("detections_per_img")
    return builder(weights=None, weights_backbone=None, num_classes=outputs, **sizes, **kwargs)


def load_weights(model: nn.Module, state: dict[str, torch.Tensor], arch: str) -> tuple[int, list[str]]:
    """Load full-detector or backbone-only weights; (tensors loaded, what did not fit).

    Tensors whose shape differs from the model's (a head for another number
    of classes) are left out and named.  A backbone-only file (an ImageNet
    classifier's ``features.*`` or ``conv1``/``layer1``..., as torchvision
    saves them) is matched under the detector's backbone.
    """
    own = model.state_dict()
    prefixes = ("", "backbone.body.", "backbone.", BACKBONE_PREFIX.get(arch, "backbone.body") + ".")
    best: dict[str, torch.Tensor] = {}
    for prefix in prefixes:
        candidate = {prefix + k: v for k, v in state.items() if prefix + k in own}
        if len(candidate) > len(best):
            best = candidate
    fits = {k: v for k, v in best.items() if tuple(v.shape) == tuple(own[k].shape)}
    skipped = sorted(set(best) - set(fits))
    model.load_state_dict(fits, strict=False)
    return len(fits), skipped


# -- the exported graph -------------------------------------------------------
# torchvision's detectors end in box decoding and non-maximum suppression, whose
# number of boxes depends on the data: torch.export cannot trace that.  The
# one-stage detectors (FCOS, RetinaNet, SSDlite) are exported up to their raw
# head outputs, which have fixed shapes; resizing, normalization, anchors,
# decoding and NMS stay in Python (``detect_with_graph``), run by the same
# torchvision code as in training.  Faster R-CNN runs NMS between its two
# stages, so no graph before it holds the whole network: it goes to ONNX whole
# (torchvision's detectors are written to export to ONNX), which needs the
# onnx extra.
GRAPH_FILE, ONNX_FILE = "model.pt2", "model.onnx"
ONNX_EXTRA = "pip install 'trainlab[onnx]'"


def graph_kind(arch: str) -> str:
    """How ``arch`` exports: "torch" (torch.export, up to the head outputs) or "onnx" (the whole detector)."""
    return "onnx" if arch.startswith("fasterrcnn") else "torch"


class RawNetwork(nn.Module):
    """A detector's backbone and head: a padded, normalized batch in; its feature maps and raw head outputs out."""

    def __init__(self, detector: nn.Module) -> None:
        super().__init__()
        self.backbone, self.head = detector.backbone, detector.head

    def forward(self, images: torch.Tensor) -> tuple[tuple[torch.Tensor, ...], dict[str, torch.Tensor]]:
        features = self.backbone(images)
        if isinstance(features, torch.Tensor):
            features = OrderedDict([("0", features)])
        maps = list(features.values())
        return tuple(maps), self.head(maps)


def export_graph(detector: nn.Module, arch: str, image_size: int, path: Any) -> None:
    """``RawNetwork(detector)`` through torch.export to ``path`` (a .pt2 file), batch and padded size dynamic.

    The detector pads its batch to a multiple of 32 (SSDlite: always 320 x 320), so those are the shapes exported.
    """
    from torch.export import Dim, export, save

    network = RawNetwork(detector).eval()
    batch = Dim("batch", min=1, max=64)
    if arch.startswith("ssdlite"):
        example = torch.zeros(2, 3, 320, 320)
        shapes = {"images": {0: batch}}
    else:
        # an example of sizes 1 would fix them at 1 (torch.export specializes 0 and 1): the example is at least 3 x 2
        steps = max(3, -(-int(image_size) // 32))
        h, w = Dim("h", min=1, max=steps), Dim("w", min=1, max=steps)
        example = torch.zeros(2, 3, 32 * steps, 32 * (steps - 1))
        shapes = {"images": {0: batch, 2: 32 * h, 3: 32 * w}}
    with torch.no_grad():
        program = export(network, (example,), dynamic_shapes=shapes)
    save(program, str(path))


def detect_with_graph(network: Any, detector: nn.Module, images: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
    """What ``detector(images)`` gives in evaluation mode, with ``network`` (the exported RawNetwork) for its backbone and head.

    ``detector`` supplies the pre- and post-processing only (none of it has weights).
    """
    from torchvision.models.detection.ssd import SSD

    original_sizes = [(int(image.shape[-2]), int(image.shape[-1])) for image in images]
    image_list, _ = detector.transform(images)
    maps, head_outputs = network(image_list.tensors)
    maps = list(maps)
    anchors = detector.anchor_generator(image_list, maps)
    if isinstance(detector, SSD):
        detections = detector.postprocess_detections(head_outputs, anchors, image_list.image_sizes)
    else:  # FCOS and RetinaNet: outputs split by feature level, as their forward does
        per_level = [m.size(2) * m.size(3) for m in maps]
        per_location = head_outputs["cls_logits"].size(1) // sum(per_level)
        per_level = [n * per_location for n in per_level]
        split_outputs = {k: list(v.split(per_level, dim=1)) for k, v in head_outputs.items()}
        split_anchors = [list(a.split(per_level)) for a in anchors]
        detections = detector.postprocess_detections(split_outputs, split_anchors, image_list.image_sizes)
    return detector.transform.postprocess(detections, image_list.image_sizes, original_sizes)


def export_onnx(detector: nn.Module, image_size: int, path: Any) -> None:
    """The whole detector (one image in; boxes, labels, scores out) as ONNX; ImportError without the onnx extra."""
    import onnx  # noqa: F401  (the exporter writes through it)

    example = [torch.rand(3, int(image_size), int(image_size))]
    # The tracing exporter warns about each Python-side shape computation in torchvision's detectors
    # (tracer warnings, dynamic_axes naming); the round trip through onnxruntime is what the tests check.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(detector.eval(), (example,), str(path), opset_version=17, dynamo=False,
                          input_names=["image"], output_names=["boxes", "labels", "scores"],
                          dynamic_axes={"image": [1, 2], "boxes": [0], "labels": [0], "scores": [0]})  # fmt: skip


# -- tiling: small objects on large images --------------------------------------
# A large image resized to the detector's input shrinks small objects to a few
# pixels.  Tiled, the detector sees the image in overlapping windows at its own
# resolution; the windows' detections are shifted back into the image and
# merged: duplicates (same class, IoU from ``iou``) are suppressed, and two
# boxes from different windows covering the same object (the smaller one at
# least ``ios`` inside the other: an object cut by a window's edge) become one
# box, their union, with the higher score.
TILE_OVERLAP = 0.2  # of the tile's side: an object up to this size is whole in some window


def tile_windows(width: int, height: int, tile: int, overlap: float = TILE_OVERLAP) -> list[tuple[int, int, int, int]]:
    """Windows ``(x0, y0, x1, y1)`` of side ``tile`` covering the image, overlapping by ``overlap``; the last ones flush with the edge."""

    def starts(length: int) -> list[int]:
        if length <= tile:
            return [0]
        stride = max(1, int(tile * (1.0 - overlap)))
        return [*range(0, length - tile, stride), length - tile]

    return [(x, y, min(x + tile, width), min(y + tile, height)) for y in starts(height) for x in starts(width)]


def merge_tiles(boxes: torch.Tensor, scores: torch.Tensor, labels: torch.Tensor, tiles: torch.Tensor,
                iou: float = 0.5, ios: float = 0.5, limit: int = 100) -> dict[str, torch.Tensor]:  # fmt: skip
    """Detections gathered from overlapping windows (``tiles``: each one's window) as one image's, best first, at most ``limit`` (as a detector gives)."""
    keep = scores.argsort(descending=True)[: 8 * limit]  # best first; the pairwise work below bounded
    boxes, scores, labels, tiles = boxes[keep], scores[keep], labels[keep], tiles[keep]
    count = len(boxes)
    lt = torch.max(boxes[:, None, :2], boxes[None, :, :2])
    rb = torch.min(boxes[:, None, 2:], boxes[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    area = (boxes[:, 2:] - boxes[:, :2]).clamp(min=0).prod(-1)
    same = labels[:, None] == labels[None, :]
    duplicate = same & (inter >= iou * (area[:, None] + area[None, :] - inter).clamp(min=1e-6))
    cut = same & (tiles[:, None] != tiles[None, :]) & (inter >= ios * torch.min(area[:, None], area[None, :]).clamp(min=1e-6))
    merged = boxes.clone()
    gone = torch.zeros(count, dtype=torch.bool, device=boxes.device)
    kept: list[int] = []
    for i in range(count):  # greedy non-maximum suppression, best score first
        if gone[i]:
            continue
        kept.append(i)
        gone[i] = True
        members = (duplicate[i] | cut[i]) & ~gone
        joined = members & cut[i]
        if bool(joined.any()):
            group = torch.cat([merged[i : i + 1], boxes[joined]])
            merged[i] = torch.cat([group[:, :2].min(0).values, group[:, 2:].max(0).values])
        gone |= members
        if len(kept) >= limit:
            break
    index = torch.tensor(kept, dtype=torch.long, device=boxes.device)
    return {"boxes": merged[index].reshape(-1, 4), "scores": scores[index], "labels": labels[index]}


def drop_repeats_across_classes(out: dict[str, torch.Tensor], iou: float) -> dict[str, torch.Tensor]:
    """One image's detections without each box whose IoU with a higher-scored box reaches ``iou``,
    whatever their classes: the detectors suppress overlaps within a class only, so one object
    could be reported twice, under two labels.  ``iou`` of 1 or more keeps every box."""
    if iou >= 1.0 or out["boxes"].shape[0] < 2:
        return out
    from torchvision.ops import nms

    keep = nms(out["boxes"].float(), out["scores"].float(), float(iou))  # best first, as the detector gives them
    return {key: value[keep] for key, value in out.items()}


def detect_tiled(run: Any, image: torch.Tensor, tile: int, overlap: float = TILE_OVERLAP, batch: int = 8) -> dict[str, torch.Tensor]:
    """One image's detections, ``run`` (the detector, or anything taking a list of images) called on its windows.

    An image no larger than ``tile`` is one window: ``run`` sees it whole.
    """
    height, width = int(image.shape[-2]), int(image.shape[-1])
    windows = tile_windows(width, height, tile, overlap)
    if len(windows) == 1:
        return run([image])[0]
    parts = []
    for start in range(0, len(windows), batch):
        chunk = windows[start : start + batch]
        outputs = run([image[..., y0:y1, x0:x1] for x0, y0, x1, y1 in chunk])
        for offset, ((x0, y0, _, _), out) in enumerate(zip(chunk, outputs)):
            shift = torch.tensor([x0, y0, x0, y0], dtype=out["boxes"].dtype, device=out["boxes"].device)
            parts.append((out["boxes"] + shift, out["scores"], out["labels"], torch.full_like(out["labels"], start + offset)))
    boxes, scores, labels, tiles = (torch.cat(list(column)) for column in zip(*parts))
    return merge_tiles(boxes, scores, labels, tiles)

"""Images and their boxes as detectors take them, with box-aware augmentation.

Each item is ``(image, target, key)``: the image a ``tv_tensors.Image`` of
uint8 (upright: EXIF orientation applied, as the boxes were), its longer
side ``image_size`` (aspect ratio kept), and the target a dict of
``boxes`` (``tv_tensors.BoundingBoxes``, XYXY in that image's pixels),
``labels`` (1..n; 0 is the background) and ``iscrowd``.  Training
augmentation runs through ``torchvision.transforms.v2``, which moves, crops
and drops the boxes with the pixels; ``SanitizeBoundingBoxes`` removes the
boxes a crop made empty, with their labels.

Tiled (``tile``), training sees each image in overlapping windows of
``tile`` pixels at its own resolution (``tile_windows``), each a separate
example: its boxes clipped to the window, shifted into it, and left out when
less than ``MIN_VISIBLE`` of a box is inside; evaluation gets the whole image
at its own resolution, which the detector sees window by window.

Decoded and resized images are kept in memory (up to a byte budget) so
that later epochs skip decoding: what is kept is before any random
augmentation, its aspect ratio as the file's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torchvision import tv_tensors
from torchvision.transforms import v2
from trainlab import ExampleList

from trainlab_plugins.detection.formats import ImageBoxes
from trainlab_plugins.detection.networks import tile_windows

AUGMENTATIONS = ("auto", "none", "light", "standard")
# augmentation=auto: standard from this many epochs, light (flips) below. The heavy policy pays only
# over long schedules (torchvision's references train their 26-epoch detectors with flips alone and keep
# photometric distortion, zoom-out and IoU crops for SSD's hundreds of epochs); on shorter runs it
# slows how fast the boxes come.
STANDARD_FROM_EPOCHS = 30
MIN_VISIBLE = 0.25  # of a box's area inside a training window, for the window to keep it


def resolve_augmentation(value: str, epochs: int) -> str:
    """``auto``: standard (photometric, crops, flips) for runs of ``STANDARD_FROM_EPOCHS`` or more, light (flips) below."""
    if value == "auto":
        return "standard" if epochs >= STANDARD_FROM_EPOCHS else "light"
    return value


def train_transform(augmentation: str, image_size: int, hflip: bool = True, photometric: bool = True) -> v2.Transform | None:
    """The random part of training: after the cached resize, before the batch."""
    steps: list[v2.Transform] = []
    if augmentation == "standard":
        if photometric:
            steps.append(v2.RandomPhotometricDistort(p=0.5))
        steps += [
            v2.RandomApply([v2.RandomZoomOut(fill=114, side_range=(1.0, 2.0))], p=0.2),
            v2.RandomApply([v2.RandomIoUCrop(min_scale=0.5)], p=0.3),
        ]
    if augmentation in ("light", "standard") and hflip:
        steps.append(v2.RandomHorizontalFlip(0.5))
    if not steps:
        return None
    steps += [v2.Resize(size=None, max_size=image_size, antialias=True), v2.SanitizeBoundingBoxes(min_size=1.0)]
    return v2.Compose(steps)


def decode(path: str) -> torch.Tensor:
    """An image file as upright RGB uint8 (C, H, W); OSError when it cannot be read."""
    from PIL import Image, ImageOps

    with Image.open(path) as image:
        upright = ImageOps.exif_transpose(image).convert("RGB")
    return v2.functional.pil_to_tensor(upright)


def resize_longer(image: torch.Tensor, image_size: int) -> tuple[torch.Tensor, float]:
    """(the image with its longer side ``image_size``, the scale applied)."""
    height, width = image.shape[-2:]
    scale = image_size / max(height, width)
    if scale == 1.0:
        return image, 1.0
    size = [max(1, round(height * scale)), max(1, round(width * scale))]
    return v2.functional.resize(image, size, antialias=True), scale


def crop_boxes(boxes: Sequence[Sequence[float]], window: tuple[int, int, int, int], min_visible: float = MIN_VISIBLE,
               min_size: float = 1.0) -> tuple[list[list[float]], list[int]]:  # fmt: skip
    """``boxes`` (image pixels) seen through ``window``: clipped to it and shifted into its pixels; (those kept, their indices).

    A box is kept when at least ``min_visible`` of its area is inside and both its clipped sides are ``min_size`` or more.
    """
    x0, y0, x1, y1 = window
    kept, index = [], []
    for i, (bx0, by0, bx1, by1) in enumerate(boxes):
        cx0, cy0, cx1, cy1 = max(bx0, x0), max(by0, y0), min(bx1, x1), min(by1, y1)
        if cx1 - cx0 < min_size or cy1 - cy0 < min_size:
            continue
        area = max(1e-9, (bx1 - bx0) * (by1 - by0))
        if (cx1 - cx0) * (cy1 - cy0) < min_visible * area:
            continue
        kept.append([cx0 - x0, cy0 - y0, cx1 - x0, cy1 - y0])
        index.append(i)
    return kept, index


class DetectionDataset(torch.utils.data.Dataset):
    """A split's images and boxes (``ImageBoxes``), resized and augmented."""

    def __init__(self, items: Sequence[ImageBoxes], image_size: int, transform: v2.Transform | None,
                 keep_crowd: bool, cache_bytes: int = 0, tile: int = 0, crop: bool = False) -> None:  # fmt: skip
        self.items = list(items)
        self.image_size = image_size
        self.tile = tile  # > 0: images at their own resolution; crop: one example per window
        self.windows = [(i, w) for i, item in enumerate(self.items) for w in tile_windows(item.width, item.height, tile)] \
            if tile and crop else None
        self.transform = transform
        self.keep_crowd = keep_crowd  # evaluation keeps crowd boxes (the metric ignores matches to them)
        self.cache_bytes = cache_bytes
        self._cache: dict[int, tuple[torch.Tensor, float]] = {}
        self._cached = 0

    def __len__(self) -> int:
        return len(self.windows) if self.windows is not None else len(self.items)

    def item_index(self, key: int) -> int:
        """The image an example key is of (a window's image when tiled)."""
        return self.windows[key][0] if self.windows is not None else key

    def _image(self, index: int) -> tuple[torch.Tensor, float]:
        kept = self._cache.get(index)
        if kept is not None:
            return kept
        image, scale = decode(self.items[index].path), 1.0
        if not self.tile:
            image, scale = resize_longer(image, self.image_size)
        size = image.numel()
        if self._cached + size <= self.cache_bytes:
            self._cache[index] = (image, scale)
            self._cached += size
        return image, scale

    def __getitem__(self, key: int) -> tuple[Any, dict[str, Any], int]:
        index = self.item_index(key)
        item = self.items[index]
        try:
            image, _ = self._image(index)
        except OSError:
            # a file that became unreadable after the data check: an empty image with no boxes
            return tv_tensors.Image(torch.zeros(3, 32, 32, dtype=torch.uint8)), _target([], [], [], (32, 32)), key
        keep = [i for i, crowd in enumerate(item.crowd) if self.keep_crowd or not crowd]
        # the image may have been resized to whole pixels: scale each axis by what it became
        sy, sx = image.shape[-2] / item.height, image.shape[-1] / item.width
        boxes = [[b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy] for b in (item.boxes[i] for i in keep)]
        if self.windows is not None:
            window = self.windows[key][1]
            boxes, inside = crop_boxes(boxes, window)
            keep = [keep[i] for i in inside]
            image = image[:, window[1] : window[3], window[0] : window[2]]
        target = _target(boxes, [item.labels[i] + 1 for i in keep], [item.crowd[i] for i in keep], tuple(image.shape[-2:]))
        image = tv_tensors.Image(image)
        if self.transform is not None:
            image, target = self.transform(image, target)
        elif self.windows is None:  # evaluation: the file's own size, to report boxes in its pixels
            target["file_size"] = torch.tensor([item.height, item.width], dtype=torch.float32)
        return image, target, key


def _target(boxes: list[list[float]], labels: list[int], crowd: list[bool], canvas: tuple[int, int]) -> dict[str, Any]:
    return {
        "boxes": tv_tensors.BoundingBoxes(torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4), format="XYXY", canvas_size=canvas),
        "labels": torch.tensor(labels, dtype=torch.int64),
        "iscrowd": torch.tensor(crowd, dtype=torch.bool),
    }


def collate(items: list[tuple[Any, dict[str, Any], int]]) -> dict[str, Any]:
    """Images of different sizes and their targets, one per example (``ExampleList``), and the keys."""
    return {
        "images": ExampleList(image.as_subclass(torch.Tensor) for image, _, _ in items),
        "targets": ExampleList({k: v.as_subclass(torch.Tensor) for k, v in target.items()} for _, target, _ in items),
        "keys": torch.tensor([key for _, _, key in items], dtype=torch.int64),
    }

"""object-detection's augmentation moves, crops and drops boxes exactly as it does the pixels."""

from __future__ import annotations

import pytest
import torch
from torchvision import tv_tensors
from trainlab import ExampleList
from trainlab_plugins.detection.dataset import (
    STANDARD_FROM_EPOCHS,
    DetectionDataset,
    collate,
    resolve_augmentation,
    train_transform,
)
from trainlab_plugins.detection.formats import ImageBoxes

OBJECTS = [[8, 10, 28, 26], [40, 30, 60, 58], [70, 4, 92, 20]]


def _scene() -> tuple[torch.Tensor, list[list[int]]]:
    """Black, with a white rectangle at each box: the pixels tell where each box must be."""
    image = torch.zeros(3, 64, 96, dtype=torch.uint8)
    for x0, y0, x1, y1 in OBJECTS:
        image[:, y0:y1, x0:x1] = 255
    return image, OBJECTS


def _white_extent(image: torch.Tensor, box: torch.Tensor) -> list[float]:
    """The bright pixels' extent inside (a margin around) ``box``."""
    x0, y0, x1, y1 = box.tolist()
    h, w = image.shape[-2:]
    ys, xs = slice(max(0, int(y0) - 2), min(h, int(y1) + 3)), slice(max(0, int(x0) - 2), min(w, int(x1) + 3))
    bright = image[0, ys, xs] > 127
    rows, cols = bright.any(1).nonzero().flatten(), bright.any(0).nonzero().flatten()
    return [xs.start + cols.min().item(), ys.start + rows.min().item(), xs.start + cols.max().item() + 1, ys.start + rows.max().item() + 1]


def test_flips_crops_and_zooms_move_boxes_with_the_pixels():
    transform = train_transform("standard", 96, photometric=False)
    image, boxes = _scene()
    moved = dropped = 0
    for seed in range(40):
        torch.manual_seed(seed)
        target = {"boxes": tv_tensors.BoundingBoxes(torch.tensor(boxes, dtype=torch.float32), format="XYXY", canvas_size=(64, 96)),
                  "labels": torch.tensor([1, 2, 3])}  # fmt: skip
        out_image, out = transform(tv_tensors.Image(image), target)
        assert len(out["boxes"]) == len(out["labels"]) and max(out_image.shape[-2:]) == 96
        dropped += 3 - len(out["boxes"])
        for box in out["boxes"]:
            want = box.tolist()
            # a crop may cut through a rectangle: the box is cut with it; resizing blurs edges by a pixel
            assert _white_extent(out_image, box) == pytest.approx(want, abs=1.5)
            moved += 1
    assert moved > 60 and dropped > 0  # crops did drop boxes they cut away, and most boxes were checked


def test_the_dataset_scales_boxes_with_the_image_and_collates_examples(tmp_path):
    from PIL import Image

    image, boxes = _scene()
    path = tmp_path / "scene.png"
    Image.fromarray(image.permute(1, 2, 0).numpy()).save(path)
    item = ImageBoxes(str(path), 96, 64, [[float(v) for v in b] for b in boxes], [0, 1, 2], [False, False, True])
    train = DetectionDataset([item], image_size=48, transform=None, keep_crowd=False)
    shown, target, key = train[0]
    assert shown.shape[-2:] == (32, 48) and key == 0
    assert target["boxes"].tolist() == [[4.0, 5.0, 14.0, 13.0], [20.0, 15.0, 30.0, 29.0]]  # the crowd box left out of training
    assert target["labels"].tolist() == [1, 2]  # 1..n: 0 is the background
    evaluated = DetectionDataset([item], image_size=48, transform=None, keep_crowd=True)
    batch = collate([evaluated[0], train[0]])
    assert isinstance(batch["images"], ExampleList) and isinstance(batch["targets"], ExampleList)
    assert batch["targets"][0]["iscrowd"].tolist() == [False, False, True] and batch["keys"].tolist() == [0, 0]


def test_auto_augmentation_is_light_on_short_runs_and_standard_on_long_ones():
    assert resolve_augmentation("auto", 12) == "light"  # the default run: flips only
    assert resolve_augmentation("auto", STANDARD_FROM_EPOCHS) == "standard"
    assert resolve_augmentation("standard", 1) == "standard" and resolve_augmentation("none", 100) == "none"

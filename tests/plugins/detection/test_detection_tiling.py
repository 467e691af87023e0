"""Tiling for small objects on large images: windows, boxes cut and mapped back exactly, detections merged across seams."""

from __future__ import annotations

import pytest
import torch
from PIL import Image
from trainlab import UsageError
from trainlab_plugins.detection.dataset import DetectionDataset, crop_boxes
from trainlab_plugins.detection.formats import ImageBoxes
from trainlab_plugins.detection.networks import detect_tiled, drop_repeats_across_classes, tile_windows
from trainlab_plugins.detection.task import resolve_tile


def test_windows_cover_the_image_overlap_and_end_flush_with_its_edges():
    windows = tile_windows(300, 130, 100, overlap=0.2)
    assert sorted({w[0] for w in windows}) == [0, 80, 160, 200] and sorted({w[1] for w in windows}) == [0, 30]
    assert all(x1 - x0 == 100 and y1 - y0 == 100 for x0, y0, x1, y1 in windows)
    covered = torch.zeros(130, 300, dtype=torch.bool)
    for x0, y0, x1, y1 in windows:
        covered[y0:y1, x0:x1] = True
    assert covered.all()
    assert tile_windows(90, 60, 100) == [(0, 0, 90, 60)]  # no larger than a tile: itself


def test_a_window_keeps_the_boxes_it_sees_clipped_and_they_map_back_exactly(tmp_path):
    # a 240 x 160 image, white where each box is: the pixels say where each box must be in a window
    boxes = [[10, 12, 40, 30], [90, 70, 130, 100], [150, 20, 158, 150], [200, 130, 236, 158]]
    pixels = torch.zeros(160, 240, 3, dtype=torch.uint8)
    for i, (x0, y0, x1, y1) in enumerate(boxes):
        pixels[y0:y1, x0:x1] = 60 + 40 * i
    path = tmp_path / "large.png"
    Image.fromarray(pixels.numpy()).save(path)
    item = ImageBoxes(str(path), 240, 160, boxes, [0, 1, 0, 1], [False] * 4)
    data = DetectionDataset([item], image_size=64, transform=None, keep_crowd=False, tile=100, crop=True)
    windows = tile_windows(240, 160, 100)
    assert len(data) == len(windows) == 6  # one example per window, at the image's own resolution

    seen = set()
    for key, window in enumerate(windows):
        image, target, got_key = data[key]
        assert got_key == key and tuple(image.shape[-2:]) == (window[3] - window[1], window[2] - window[0])
        x0, y0, x1, y1 = window
        assert torch.equal(image.permute(1, 2, 0), pixels[y0:y1, x0:x1])  # the window's pixels, unscaled
        for box, label in zip(target["boxes"].tolist(), target["labels"].tolist()):
            back = [box[0] + x0, box[1] + y0, box[2] + x0, box[3] + y0]
            original = next(i for i, b in enumerate(boxes) if item.labels[i] + 1 == label and
                            all(abs(v - c) < 1e-6 for v, c in zip(back, [max(b[0], x0), max(b[1], y0), min(b[2], x1), min(b[3], y1)])))
            seen.add(original)
            # and the pixels inside the box are that object's, up to its clipped edges
            bx0, by0, bx1, by1 = (int(v) for v in box)
            assert (image[0, by0:by1, bx0:bx1] == 60 + 40 * original).all()
    assert seen == {0, 1, 2, 3}

    # a box cut so that under a quarter of it is inside is not kept: the window shows a sliver of it
    assert crop_boxes([[90, 0, 110, 10]], (0, 0, 94, 50)) == ([], [])
    assert crop_boxes([[90, 0, 110, 10]], (0, 0, 100, 50)) == ([[90, 0, 100, 10]], [0])


def _bright_blobs(crops: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
    """A stand-in detector: each grey level in a crop is one object, boxed; cut by the crop's edge it scores higher."""
    outputs = []
    for crop in crops:
        boxes, scores = [], []
        width = crop.shape[-1]
        for level in crop[0].unique().tolist():
            if level == 0:
                continue
            ys, xs = (crop[0] == level).nonzero(as_tuple=True)
            box = [xs.min().item(), ys.min().item(), xs.max().item() + 1, ys.max().item() + 1]
            boxes.append(box)
            scores.append(0.9 if box[0] == 0 or box[2] == width else 0.8)
        outputs.append({"boxes": torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4), "scores": torch.tensor(scores),
                        "labels": torch.ones(len(boxes), dtype=torch.int64)})
    return outputs


def test_tiled_detection_finds_an_object_on_a_seam_once_whole():
    objects = {
        1: [100, 10, 140, 30],  # across the first window's right edge (120): cut there, whole in the second
        2: [85, 50, 110, 70],  # inside the overlap (80-120): whole in both windows
        3: [10, 40, 30, 60],
        4: [20, 45, 40, 65],  # overlaps 3 in the same window: two objects, kept apart
        5: [160, 60, 190, 90],
    }
    image = torch.zeros(3, 100, 200)
    for level, (x0, y0, x1, y1) in objects.items():
        image[:, y0:y1, x0:x1] = level / 10
    assert tile_windows(200, 100, 120) == [(0, 0, 120, 100), (80, 0, 200, 100)]
    found = detect_tiled(_bright_blobs, image, 120)
    got = sorted(tuple(b) for b in found["boxes"].tolist())
    # object 3's box stays whole under 4 (its left part shows): each object once, as its whole box
    assert got == sorted(tuple(map(float, b)) for b in objects.values())
    cut = found["scores"][[b == [100.0, 10.0, 140.0, 30.0] for b in found["boxes"].tolist()].index(True)]
    assert float(cut) == pytest.approx(0.9)  # the cut box scored higher; it became the union, the whole object
    # without tiling the stand-in sees the whole image: the same boxes
    whole = _bright_blobs([image])[0]
    assert sorted(tuple(b) for b in whole["boxes"].tolist()) == got


def test_tile_auto_tiles_small_boxes_on_large_images_only():
    def items(side: int, box: int) -> list[ImageBoxes]:
        return [ImageBoxes(f"{i}.jpg", side, side, [[0, 0, box, box]], [0], [False]) for i in range(5)]

    assert resolve_tile("auto", items(2000, 40), 512)[0] == 512  # 2 % of the side, 2000 px images
    assert resolve_tile("auto", items(2000, 400), 512)[0] == 0  # large boxes: resizing keeps them visible
    assert resolve_tile("auto", items(600, 10), 512)[0] == 0  # the image is about the input size already
    assert resolve_tile("off", items(2000, 40), 512)[0] == 0 and resolve_tile("640", items(100, 5), 512)[0] == 640
    with pytest.raises(UsageError, match="tile=big"):
        resolve_tile("big", items(100, 5), 512)


def test_an_object_boxed_under_two_classes_is_reported_once_under_the_likelier():
    out = {
        "boxes": torch.tensor([[10.0, 10, 50, 50], [11, 11, 50, 51], [12, 10, 49, 50], [60, 60, 90, 90], [12, 12, 40, 40]]),
        "scores": torch.tensor([0.9, 0.6, 0.5, 0.4, 0.35]),
        "labels": torch.tensor([1, 2, 3, 2, 1]),
    }
    kept = drop_repeats_across_classes(out, 0.7)
    # the square's and triangle's copies of the circle go; a box elsewhere and one inside it (IoU 0.49) stay
    assert kept["labels"].tolist() == [1, 2, 1] and kept["scores"].tolist() == pytest.approx([0.9, 0.4, 0.35])
    assert torch.equal(kept["boxes"][1], out["boxes"][3])
    assert drop_repeats_across_classes(out, 1.0) is out  # 1 keeps every box
    empty = {k: v[:0] for k, v in out.items()}
    assert drop_repeats_across_classes(empty, 0.7)["boxes"].shape == (0, 4)

"""Training and evaluation transforms (torchvision v2, picklable).

The transforms end in a uint8 tensor: batches travel to the device as bytes
(a quarter of float32) and are normalised there, in ``ImageClassificationTask.to_device``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# (min, max) share of the image area a training crop covers.
LIGHT_SCALE = (0.8, 1.0)
STANDARD_SCALE = (0.08, 1.0)  # torchvision's RandomResizedCrop default (ImageNet recipe)
# auto picks light crops only for runs of at least AUTO_MIN_EPOCHS epochs on
# images whose median shorter side is at least AUTO_MIN_SIDE px; otherwise none.
# Measured (bench/image_augmentation.py, 10 classes of 32 px shapes): light
# crops cost accuracy at 5 epochs (0.53 vs 0.81) and did not pay back by 10
# (0.989 vs 0.993, 0.950 vs 0.986 over two seeds); ImageNet-style crops cost
# far more (0.10 / 0.52).
AUTO_MIN_EPOCHS = 10
AUTO_MIN_SIDE = 128
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class Augmentation:
    """The resolved training augmentation of a run."""

    name: str  # none, light or standard
    hflip: bool

    def describe(self) -> str:
        crop = {"none": "no random crop", "light": "random crop of 80-100%", "standard": "random-resized crop 8-100%"}
        return f"{self.name} ({crop[self.name]}, {'with' if self.hflip else 'no'} horizontal flip)"


def resolve_augmentation(choice: str, hflip: str, epochs: int, median_side: int = 0) -> Augmentation:
    """``auto`` -> light for long runs on large images, else none; hflip auto -> only for standard."""
    name = choice
    if choice == "auto":
        name = "light" if epochs >= AUTO_MIN_EPOCHS and median_side >= AUTO_MIN_SIDE else "none"
    flip = name == "standard" if hflip == "auto" else str(hflip).lower() == "true"
    return Augmentation(name, flip)


def eval_resize(image_size: int, crop_fraction: float) -> int:
    return int(math.floor(image_size / crop_fraction + 1e-6))


def eval_transform(image_size: int, crop_fraction: float = 1.0):
    """Resize the shorter side, take the centre square, as uint8 CHW."""
    from torchvision.transforms import v2

    return v2.Compose(
        [
            v2.Resize(eval_resize(image_size, crop_fraction), antialias=True),
            v2.CenterCrop(image_size),
            v2.PILToTensor(),
        ]
    )


def train_transform(augmentation: Augmentation, image_size: int, crop_fraction: float = 1.0):
    from torchvision.transforms import v2

    if augmentation.name == "none":
        steps = [v2.Resize(eval_resize(image_size, crop_fraction), antialias=True), v2.CenterCrop(image_size)]
    else:
        scale = LIGHT_SCALE if augmentation.name == "light" else STANDARD_SCALE
        steps = [v2.RandomResizedCrop(image_size, scale=scale, antialias=True)]
    if augmentation.hflip:
        steps.append(v2.RandomHorizontalFlip())
    steps.append(v2.PILToTensor())
    return v2.Compose(steps)


def decode_side(augmentation: Augmentation | None, image_size: int, crop_fraction: float = 1.0) -> int:
    """The shorter side a decoded image needs so the transform never upsamples a reduced decode."""
    if augmentation is None or augmentation.name == "none":
        return eval_resize(image_size, crop_fraction)
    scale = LIGHT_SCALE if augmentation.name == "light" else STANDARD_SCALE
    # The smallest crop covers scale[0] of the area at an aspect ratio up to 4:3.
    return int(math.ceil(image_size / math.sqrt(scale[0]) * math.sqrt(4 / 3)))


class ShrinkTo:
    """Reduce a PIL image so its shorter side is at most ``side`` px (never enlarges)."""

    def __init__(self, side: int):
        self.side = int(side)

    def __call__(self, image):
        from PIL import Image

        short = min(image.size)
        if short <= self.side:
            return image
        scale = self.side / short
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        return image.resize(size, Image.Resampling.BILINEAR)


def cached_parts(augmentation: Augmentation | None, image_size: int, crop_fraction: float = 1.0):
    """(fixed, random): a split's transform cut where the decoded images can be kept.

    ``fixed`` turns a decoded PIL image into the uint8 tensor kept in memory,
    ``random`` (None when nothing is random) runs on that tensor at each
    read.  Evaluation and augmentation ``none`` keep the final image; random
    crops keep the image reduced to ``decode_side`` (their smallest crop
    still needs no upsampling) and crop it at each read.
    """
    from torchvision.transforms import v2

    flip = [v2.RandomHorizontalFlip()] if augmentation is not None and augmentation.hflip else []
    if augmentation is None or augmentation.name == "none":
        random = v2.Compose(flip) if flip else None
        return eval_transform(image_size, crop_fraction), random
    fixed = v2.Compose([ShrinkTo(decode_side(augmentation, image_size, crop_fraction)), v2.PILToTensor()])
    scale = LIGHT_SCALE if augmentation.name == "light" else STANDARD_SCALE
    return fixed, v2.Compose([v2.RandomResizedCrop(image_size, scale=scale, antialias=True), *flip])


def cached_bytes(augmentation: Augmentation | None, image_size: int, sizes, crop_fraction: float = 1.0) -> int:
    """What ``cached_parts``' fixed tensors of images of ``sizes`` ((width, height) each) take in memory."""
    if augmentation is None or augmentation.name == "none":
        return 3 * image_size * image_size * len(sizes)
    side = decode_side(augmentation, image_size, crop_fraction)
    total = 0
    for width, height in sizes:
        scale = min(1.0, side / max(1, min(width, height)))
        total += 3 * max(1, round(width * scale)) * max(1, round(height * scale))
    return total

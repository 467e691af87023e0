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

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
# auto: a run this short ends before augmentation pays for the slower fit
# (bench/image_augmentation.py measures the trade-off).
AUTO_MIN_EPOCHS = 5
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


def resolve_augmentation(choice: str, hflip: str, epochs: int) -> Augmentation:
    """``auto`` -> none below AUTO_MIN_EPOCHS epochs, light otherwise; hflip auto -> only for standard."""
    name = choice
    if choice == "auto":
        name = "none" if epochs < AUTO_MIN_EPOCHS else "light"
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

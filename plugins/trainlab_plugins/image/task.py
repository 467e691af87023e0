"""The runtime side of image-classification (imported when a run starts).

What it shares with the other image tasks (data, backbones, transforms,
export, predictor) is ``trainlab_plugins.image.base.ImageTask``.
"""

from __future__ import annotations

from typing import Any

from trainlab import ClassificationTask
from trainlab_plugins.image.base import ImageTask, auto_workers, usable_cores  # the two rules: where they always were
from trainlab_plugins.image.labels import ClassLabels

__all__ = ["ImageClassificationTask", "auto_workers", "usable_cores"]


class ImageClassificationTask(ImageTask, ClassificationTask):
    """Class folders or a table of images and labels -> a CNN; see docs/tasks/image-classification.md."""

    def label_reader(self) -> ClassLabels:
        return ClassLabels()

    def output_description(self) -> dict[str, Any]:
        return {"kind": "logits", "activation": "softmax", "value": "the class of the largest output"}

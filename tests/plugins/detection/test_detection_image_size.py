"""image_size=auto follows the data: the training images' median longer side, never blown up, capped per device."""

from __future__ import annotations

import pytest
import torch
from trainlab import UsageError
from trainlab.api.params import ENGINE_PARAMS, resolve
from trainlab.api.taskbase import RunContext
from trainlab_dev.detection_samples import write_coco
from trainlab_plugins.detection import SPEC
from trainlab_plugins.detection.formats import ImageBoxes
from trainlab_plugins.detection.task import ObjectDetectionTask, resolve_image_size


def _prepared(data, **params):
    resolved = resolve(SPEC, ENGINE_PARAMS, {}, {"device": "cpu", "model": "small-fcos", **params})
    logs: list[str] = []
    ctx = RunContext(device=torch.device("cpu"), precision="fp32", seed=0, run_dir=None, params=resolved, log=logs.append)
    task = ObjectDetectionTask(SPEC, resolved)
    task.prepare(str(data), ctx)
    return task, logs


def test_small_images_train_at_their_own_size(tmp_path):
    task, logs = _prepared(write_coco(tmp_path / "shapes", {"train": 4, "val": 2}, size=48, seed=1))
    assert task.image_size == 48 and "image_size auto: 48 px (the images' own size; median image 48 px)" in logs
    image, _, _ = task.dataset("val")[0]
    assert tuple(image.shape[-2:]) == (48, 48)  # not resized up to a fixed size
    assert task.fitted_state()["image_size"] == 48 and task.model_description()["image_size"] == 48


def test_large_images_are_capped_per_device_and_a_number_is_taken_as_given():
    items = [ImageBoxes(path=f"{i}.jpg", width=side, height=side * 3 // 4) for i, side in enumerate((900, 1000, 1200))]
    assert resolve_image_size("auto", items, cuda=False)[0] == 320
    assert resolve_image_size("auto", items, cuda=True)[0] == 512
    assert resolve_image_size("auto", items[:1] * 2 + [ImageBoxes("s.jpg", 200, 100)], cuda=False)[0] == 320
    assert resolve_image_size("auto", [ImageBoxes("s.jpg", 200, 100)] * 3, cuda=True)[0] == 200
    assert resolve_image_size("640", items, cuda=False)[0] == 640
    with pytest.raises(UsageError, match="image_size=big: auto, or the longer side in pixels"):
        resolve_image_size("big", items, cuda=False)

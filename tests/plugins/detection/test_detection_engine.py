"""The engine splits a detection batch (lists of images and box dicts) into micro-batches of whole images."""

from __future__ import annotations

from trainlab_dev.detection_samples import write_coco


def test_micro_batches_hold_whole_images(tmp_path, monkeypatch):
    from trainlab.engine.scripting import RunRequest, run_training
    from trainlab_plugins.detection import task as detection

    seen = []
    step = detection.ObjectDetectionTask.train_step

    def spy(self, model, batch, ctx):
        seen.append([tuple(image.shape) for image in batch["images"]])
        assert len(batch["images"]) == len(batch["targets"])
        return step(self, model, batch, ctx)

    monkeypatch.setattr(detection.ObjectDetectionTask, "train_step", spy)
    data = write_coco(tmp_path / "shapes", {"train": 12, "val": 4}, size=48, seed=2)
    params = {"epochs": "1", "image_size": "48", "batch_size": "6", "model": "small-fcos", "micro_batch_size": "2", "export": "off"}
    result = run_training(RunRequest(task="object-detection", data=str(data), params=params, out=str(tmp_path / "run")))
    assert result.status == "completed", result.error
    # two steps of 6 images, each in three micro-batches of two whole (3, 48, 48) images, not of sliced channels
    assert seen == [[(3, 48, 48)] * 2] * 6 and result.steps == 2

"""The engine splits a detection batch (lists of images and box dicts) into micro-batches of whole images."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trainlab.api.events import EvalResult
from trainlab.cli.reporting import ConsoleProgress, eval_lines
from trainlab.runfolder.tail import read_events
from trainlab_dev.detection_samples import write_coco
from trainlab_plugins.detection import SPEC


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
    params = {"epochs": "1", "image_size": "32", "batch_size": "6", "model": "small-fcos", "micro_batch_size": "2", "export": "off"}
    result = run_training(RunRequest(task="object-detection", data=str(data), params=params, out=str(tmp_path / "run")))
    assert result.status == "completed", result.error
    # two steps of 6 images, each in three micro-batches of two whole (3, 32, 32) images, not of sliced channels
    assert seen == [[(3, 32, 32)] * 2] * 6 and result.steps == 2

    # trained on images resized from 48 to 32 px, the report's boxes are in the files' pixels, where the window draws them
    coco = json.loads((data / "val.json").read_text())
    names = {image["id"]: Path(image["file_name"]).name for image in coco["images"]}
    truth: dict[str, list] = {}
    for a in coco["annotations"]:
        x, y, w, h = a["bbox"]
        truth.setdefault(names[a["image_id"]], []).append([x, y, x + w, y + h])
    report = json.loads((tmp_path / "run" / "eval.json").read_text())
    # the detectors give no loss in evaluation: no validation loss anywhere, rather than a 0 never measured
    assert "loss" in report and report["loss"] is None and "loss" not in result.metrics
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["loss"] for line in lines if '"event":"eval"' in line] == [None]
    evals = [e for e in read_events(tmp_path / "run" / "metrics.jsonl") if isinstance(e, EvalResult)]
    assert len(evals) == 1 and evals[0].loss is None and evals[0].metrics["map"] is not None
    notes: list[str] = []
    ConsoleProgress(type("Out", (), {"note": staticmethod(notes.append)})()).on_event(evals[0])
    assert notes and notes[0].startswith("epoch 1: val") and "map " in notes[0] and "loss" not in notes[0]
    assert not any("loss" in line for line in eval_lines(report, SPEC)[1:]), eval_lines(report, SPEC)
    rows = next(d for d in report["details"] if d["name"] == "worst_images")["rows"]
    assert len(rows) == 4
    for row in rows:
        drawn = [v for box in sorted(b["box"] for b in row["image"]["boxes"] if b["role"] == "true") for v in box]
        assert drawn == pytest.approx([v for box in sorted(truth[Path(row["image"]["image"]).name]) for v in box], abs=0.01)

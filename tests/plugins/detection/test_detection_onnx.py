"""Faster R-CNN, which torch.export cannot hold (NMS between its two stages), exports whole to ONNX;
onnxruntime running model.onnx through the folder's own predict.py gives the rebuilt network's boxes."""

from __future__ import annotations

import importlib.util
import json
import runpy

import pytest
from trainlab_dev.detection_samples import write_coco

MISSING = [name for name in ("onnx", "onnxruntime") if importlib.util.find_spec(name) is None]


@pytest.mark.long
@pytest.mark.skipif(bool(MISSING), reason=f"the onnx extra is not installed (missing: {', '.join(MISSING)}): pip install 'trainlab[onnx]'")
def test_faster_rcnn_exports_to_onnx_and_onnxruntime_gives_the_same_boxes(tmp_path):
    from trainlab.engine.scripting import RunRequest, run_training

    data = write_coco(tmp_path / "shapes", {"train": 8, "val": 4}, size=64, seed=3)
    params = {"epochs": "1", "batch_size": "4", "image_size": "64", "model": "fasterrcnn_mobilenet_v3_large_320_fpn",
              "device": "cpu", "precision": "fp32", "score_threshold": "0.0"}  # fmt: skip
    result = run_training(RunRequest(task="object-detection", data=str(data), params=params, out=str(tmp_path / "run")))
    assert result.status == "completed", result.error
    folder = tmp_path / "run" / "model"
    assert (folder / "model.onnx").is_file() and not (folder / "model.pt2").exists()
    events = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    logs = [e["message"] for e in events if e["event"] == "log"]
    assert any(line.startswith("exported graph:") and "model.onnx" in line for line in logs), logs

    program = runpy.run_path(str(folder / "predict.py"))  # its functions, as `python predict.py [--graph]` calls them
    images = sorted(str(p) for p in (data / "val").glob("*.jpg"))
    network, meta = program["load"](folder)
    graph, _ = program["load_graph"](folder)
    rebuilt = program["detect"](network, meta, images, threshold=0.0)
    exported = program["detect"](graph, meta, images, threshold=0.0)
    assert rebuilt, "a model that scores no box tells nothing about the round trip"
    assert [(r["image_id"], r["label"]) for r in exported] == [(r["image_id"], r["label"]) for r in rebuilt]
    for ours, theirs in zip(exported, rebuilt):
        assert ours["score"] == pytest.approx(theirs["score"], abs=1e-4)
        assert ours["bbox"] == pytest.approx(theirs["bbox"], abs=0.02)

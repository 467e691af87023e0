"""object-detection through the real CLI: train, eval, predict and the exported program (resume: --runslow), on a tiny set."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from helpers import one_json_line
from torchvision.ops import box_iou
from trainlab_dev.detection_samples import write_yolo

# a tiny detector on tiny images: this tests the plumbing, not the accuracy
FAST = ("--set", "image_size=64", "--set", "batch_size=8", "--set", "model=small-fcos")
# every box reported: a model trained this little scores few boxes over the default 0.3
ALL_BOXES = ("--set", "score_threshold=0.0")


def _tiny_run(cli, tmp_path):
    data = write_yolo(tmp_path / "shapes", {"train": 16, "val": 8}, size=64, seed=1)
    label = min((data / "labels" / "train").glob("*.txt"))
    label.write_text(label.read_text() + "9 0.5 0.5 0.1 0.1\n")  # a class data.yaml does not name
    out = tmp_path / "run"
    result = cli("train", "object-detection", "--data", data, "--epochs", "1", *FAST, *ALL_BOXES, "--out", out, "--json")
    assert result.returncode == 0, result.stderr
    images = data / "images" / "val"
    (images / "broken.jpg").write_bytes(b"not an image")
    return result, label, out, images


def test_monitor_loss_is_refused_in_one_line_naming_the_metrics_to_monitor(cli, tmp_path):
    data = write_yolo(tmp_path / "shapes", {"train": 4, "val": 2}, size=64, seed=1)
    result = cli("train", "object-detection", "--data", data, "--epochs", "1", *FAST, "--set", "monitor=loss",
                 "--out", tmp_path / "run")  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-1] == ("trainlab: error: monitor=loss: object detection measures no validation loss (its detectors "
                         "give none in evaluation); monitor one of map, map50, map75, mar_100")  # fmt: skip
    assert "Traceback" not in result.stderr and not (tmp_path / "run" / "checkpoints").exists()


@pytest.mark.long
def test_train_eval_predict_and_the_exported_program(cli, tmp_path):
    result, label, out, images = _tiny_run(cli, tmp_path)
    first = one_json_line(result)
    assert first["status"] == "completed" and set(first["metrics"]) >= {"map", "map50", "map75", "mar_100"}
    assert first["best"]["metric"] == "map"
    assert f"skipped: {label}:" in result.stderr and "unknown class: 9" in result.stderr
    assert "train: 16 images" in result.stderr and "training loss by part: classification" in result.stderr
    # the detectors give no loss in evaluation: no validation loss is printed, rather than a 0 never measured
    epoch = [line for line in result.stderr.splitlines() if line.startswith("epoch 1: val")]
    assert epoch and "map " in epoch[0] and "loss" not in epoch[0], result.stderr
    assert "loss" not in first["metrics"]

    report = json.loads((out / "eval.json").read_text())
    assert "loss" in report and report["loss"] is None
    details = {d["name"]: d for d in report["details"]}
    assert [r["class"] for r in details["per_class"]["rows"]] == ["circle", "square", "triangle"]
    assert len(details["worst_images"]["rows"]) == 8 and details["pr_curves"]["kind"] == "series"

    evaluated = cli("eval", out, "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    assert one_json_line(evaluated)["metrics"]["map"] == pytest.approx(report["metrics"]["map"], abs=1e-6)
    assert one_json_line(evaluated)["loss"] is None
    told = cli("eval", out)
    shown = [line for line in told.stdout.splitlines() if line.strip().startswith("map ")]
    assert told.returncode == 0 and shown and "loss" not in shown[0] and "loss 0" not in told.stdout, told.stdout

    coco = cli("predict", out, images, "--out", tmp_path / "boxes.json")
    results = json.loads((tmp_path / "boxes.json").read_text())
    assert json.loads((out / "model" / "model.json").read_text())["cross_class_iou"] == 0.7
    for image_id in {r["image_id"] for r in results}:  # one box per object: none of other classes overlapping by 0.7 (rounded boxes)
        boxes = [r for r in results if r["image_id"] == image_id]
        xyxy = torch.tensor([[x, y, x + w, y + h] for x, y, w, h in (r["bbox"] for r in boxes)])
        overlap = box_iou(xyxy, xyxy)
        assert not any(overlap[i, j] >= 0.71 and boxes[i]["label"] != boxes[j]["label"]
                       for i in range(len(boxes)) for j in range(i))
    assert coco.returncode == 2 and (coco.stdout + coco.stderr).count("broken.jpg\terror:") == 1
    assert {r["category_id"] for r in results} <= {1, 2, 3} and all(len(r["bbox"]) == 4 for r in results)
    # image ids are positions in the call (broken.jpg, first by name, is 1): the unreadable one has no box
    assert {r["image_id"] for r in results} <= set(range(2, 10)) and all("broken" not in r["file_name"] for r in results)

    # the exported folder predicts without TrainLab: its modules cannot be imported in that process
    program = out / "model" / "predict.py"
    first_image = min(images.glob("val_*.jpg"))
    block = "import sys; [sys.modules.__setitem__(m, None) for m in ('trainlab', 'trainlab_plugins')]; "
    run = f"{block}import runpy; sys.argv = [{str(program)!r}, {str(first_image)!r}]; runpy.run_path({str(program)!r}, run_name='__main__')"
    alone = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, timeout=180, cwd=tmp_path, check=False)
    assert alone.returncode == 0, alone.stderr
    theirs = json.loads(alone.stdout)
    ours = [r for r in results if r["file_name"] == str(first_image)]
    assert ours, "a model that scores no box tells nothing about the round trip"
    assert [(t["label"], t["score"], t["category_id"]) for t in theirs] == [(o["label"], o["score"], o["category_id"]) for o in ours]
    for t, o in zip(theirs, ours):
        assert t["bbox"] == pytest.approx(o["bbox"], abs=0.02)

    # the graph torch.export wrote (backbone and head; decoding and NMS in predict.py), loaded back without TrainLab
    assert (out / "model" / "model.pt2").is_file() and "exported graph:" in result.stderr
    run = run.replace("[" + repr(str(program)) + ",", "[" + repr(str(program)) + ", '--graph',")
    graph = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, timeout=180, cwd=tmp_path, check=False)
    assert graph.returncode == 0, graph.stderr
    exported = json.loads(graph.stdout)
    assert [(t["label"], t["category_id"]) for t in exported] == [(o["label"], o["category_id"]) for o in ours]
    for t, o in zip(exported, ours):
        assert t["score"] == pytest.approx(o["score"], abs=1e-4) and t["bbox"] == pytest.approx(o["bbox"], abs=0.02)


@pytest.mark.slow
def test_resume_and_predict_as_json_lines(cli, tmp_path):
    _, _, out, images = _tiny_run(cli, tmp_path)
    more = cli("train", "--resume", out, "--more-epochs", "1", "--json")
    assert more.returncode == 0, more.stderr
    assert one_json_line(more)["epochs"] == 2

    predicted = cli("predict", out, images, "--out", tmp_path / "boxes.jsonl", "--json")
    assert predicted.returncode == 2 and "1 of 9 input(s) could not be used" in predicted.stderr, predicted.stderr
    lines = [json.loads(line) for line in (tmp_path / "boxes.jsonl").read_text().splitlines()]
    assert len(lines) == 9
    errors = [line for line in lines if line.get("error")]
    assert len(errors) == 1 and "broken.jpg" in errors[0]["error"]
    assert all(len(b["box"]) == 4 for line in lines if not line.get("error") for b in line["prediction"]["boxes"])

"""image-classification through the real CLI and engine: train, eval, predict, bad input."""

from __future__ import annotations

import csv
import json
import re
import threading
from pathlib import Path

import pytest

from fixtures.images.imagedata import cells, scenes, shapes, truncated_jpeg
from helpers import one_json_line, stop_after_first_epoch
from trainlab_plugins.image import SAMPLE_DATA
from trainlab_resources import resource_path

SAMPLE = resource_path(SAMPLE_DATA)


def test_sample_data_ships_with_its_licence():
    files = list(SAMPLE.rglob("*.jpg"))
    assert len(files) == 900 and sum(f.stat().st_size for f in files) < 2_000_000
    assert "CC0" in (SAMPLE.parent / "README.md").read_text(encoding="utf-8")


@pytest.mark.long
def test_train_predict_eval_on_the_sample_through_the_cli(cli, tmp_path):
    out = tmp_path / "run"
    # One short epoch at 32 px: this tests the plumbing; bench/image_sample_accuracy.py the accuracy.
    result = cli("train", "image-classification", "--data", SAMPLE, "--epochs", "1", "--set", "image_size=32", "--out", out, "--json")
    assert result.returncode == 0, result.stderr
    data = one_json_line(result)
    assert data["status"] == "completed" and data["task"] == "image-classification" and data["epochs"] == 1
    assert set(data["metrics"]) >= {"accuracy", "macro_f1", "loss", "top5_accuracy"}
    assert data["samples_per_second"] > 0
    # the counts per class and split, on the console as the text task says them
    counts = "(circle {0}, cross {0}, ring {0}, square {0}, star {0}, triangle {0})"
    assert f"train: 720 images {counts.format(120)}" in result.stderr
    assert f"val: 180 images {counts.format(30)}" in result.stderr

    record = json.loads((out / "run.json").read_text())
    assert record["label_names"] == ["circle", "cross", "ring", "square", "star", "triangle"]
    assert record["data_summary"]["counts"]["val"] == {name: 30 for name in record["label_names"]}
    report = json.loads((out / "eval.json").read_text())
    assert report["samples"] == 180 and len(report["confusion_matrix"]) == 6
    for example in report["misclassified"]:
        assert Path(example["example"]).is_file() and example["example"].startswith(str(SAMPLE))
    model = out / "model"
    assert {"model.safetensors", "model.json", "model.pt2"} <= {p.name for p in model.iterdir()}
    meta = json.loads((model / "model.json").read_text())
    assert meta["preprocessing"]["image_size"] == 32 and meta["exports"]["torch_export"]["verified"]

    star, ring = SAMPLE / "star" / "star_0000.jpg", SAMPLE / "ring" / "ring_0001.jpg"
    table = tmp_path / "predictions.csv"
    pred = cli("predict", out, star, ring, SAMPLE / "triangle", "--top-k", "3", "--out", table, "--json")
    assert pred.returncode == 0, pred.stderr
    preds = one_json_line(pred)["predictions"]
    assert len(preds) == 152 and [p["input"] for p in preds[:2]] == [str(star), str(ring)]
    assert all(len(p["predictions"]) == 3 for p in preds)
    assert all(p["predictions"][0]["probability"] >= p["predictions"][1]["probability"] for p in preds)
    rows = list(csv.reader(table.open(encoding="utf-8")))
    assert rows[0][:3] == ["input", "label_1", "probability_1"] and rows[0][-1] == "error" and len(rows) == 153
    assert rows[3][0] == str(SAMPLE / "triangle" / "triangle_0000.jpg")

    # one unreadable file among good ones: it is named, the others are still predicted, exit 2
    broken = truncated_jpeg(tmp_path / "broken.jpg")
    pred = cli("predict", out, star, broken, ring, "--out", table, "--json")
    assert pred.returncode == 2, pred.stderr
    answer = one_json_line(pred)
    assert answer["errors"] == 1
    good, bad, also_good = answer["predictions"]
    assert good["input"] == str(star) and good["predictions"] and "error" not in good
    assert also_good["input"] == str(ring) and also_good["predictions"]
    assert bad["input"] == str(broken) and bad["predictions"] == [] and str(broken) in bad["error"]
    assert str(broken) in pred.stderr
    rows = list(csv.reader(table.open(encoding="utf-8")))
    assert [row[0] for row in rows[1:]] == [str(star), str(broken), str(ring)]
    assert rows[2][-1] == bad["error"] and rows[1][-1] == "" and rows[1][1]

    ev = cli("eval", out, "--json")
    assert ev.returncode == 0, ev.stderr
    assert one_json_line(ev)["accuracy"] == pytest.approx(data["metrics"]["accuracy"])  # same val split as training

    # other data: all of it, named as the folder it is
    other = shapes(tmp_path / "other-shapes", classes=2, per_class=3, size=32)
    ev = cli("eval", out, "--data", other, "--json")
    assert ev.returncode == 0, ev.stderr
    assert "other-shapes: 6 images (circle 3, " in ev.stderr and "val: " not in ev.stderr


def test_eval_on_other_data_uses_all_of_it(tmp_path):
    from trainlab import DataError
    from trainlab.engine.scripting import RunRequest, evaluate_run, run_training

    data = shapes(tmp_path / "d", classes=2, per_class=10, size=24)
    out = str(tmp_path / "run")
    result = run_training(RunRequest(task="image-classification", data=str(data), params={"epochs": "1", "image_size": "24"}, out=out))
    assert result.status == "completed", result.error
    assert evaluate_run(out)["samples"] == 4  # its own validation split
    other = shapes(tmp_path / "other", classes=2, per_class=7, size=24, seed=5)
    assert evaluate_run(out, str(other))["samples"] == 14  # all of other data
    unknown = shapes(tmp_path / "unknown", classes=3, per_class=2, size=24)
    with pytest.raises(DataError, match="not trained on: triangle"):
        evaluate_run(out, str(unknown))


@pytest.mark.parametrize(
    "args, reason",
    [
        (["--data", "{tmp}/missing"], "no such file or folder"),
        (["--data", "{one_class}"], "at least two classes"),
        (["--data", "{sample}", "--model", "resnet18"], "resnet18-f37072fd.pth"),
        (["--data", "{sample}", "--model", "vgg99"], "neither a preset"),
        (["--data", "{sample}", "--set", "weights={tmp}/none.safetensors"], "none.safetensors does not exist"),
    ],
)
def test_bad_input_is_exit_2_with_a_reason(cli, tmp_path, monkeypatch, args, reason):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    one_class = shapes(tmp_path / "one", classes=1, per_class=3, size=16)
    args = [a.format(tmp=tmp_path, one_class=one_class, sample=SAMPLE) for a in args]
    result = cli("train", "image-classification", *args, "--epochs", "1", "--json")
    assert result.returncode == 2, result.stderr
    assert reason in one_json_line(result)["error"]


def test_unreadable_files_during_training_are_skipped_and_listed(tmp_path):
    from trainlab.api.callbacks import Callback
    from trainlab.engine.scripting import RunRequest, run_training

    data = shapes(tmp_path / "d", classes=2, per_class=8, size=24)
    broken = data / "circle" / "zz_truncated.jpg"
    broken.write_bytes((data / "circle").joinpath(sorted(p.name for p in (data / "circle").iterdir())[0]).read_bytes())

    class CutShortAfterTheCheck(Callback):
        """The file was whole at the data check and is cut short before training reads it (a disk, a sync)."""

        def on_run_start(self, state):
            truncated_jpeg(broken)

    result = run_training(
        RunRequest(task="image-classification", data=str(data), params={"epochs": "1", "image_size": "24"}, out=str(tmp_path / "run")),
        callbacks=[CutShortAfterTheCheck()],
    )
    assert result.status == "completed", result.error
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["skipped_during_training"]["count"] == 1
    assert record["skipped_during_training"]["files"][0]["path"] == str(broken)


def test_training_from_a_thread_with_spawned_loader_workers(tmp_path):
    """What the window does: the engine in a non-main thread, workers started with spawn."""
    from trainlab.engine.scripting import RunRequest, run_training

    data = shapes(tmp_path / "d", classes=2, per_class=6, size=20)
    request = RunRequest(
        task="image-classification", data=str(data), out=str(tmp_path / "run"),
        params={"epochs": "1", "image_size": "20", "num_workers": "1", "batch_size": "4"},
    )  # fmt: skip
    results = []
    thread = threading.Thread(target=lambda: results.append(run_training(request, mp_context="spawn")))
    thread.start()
    thread.join(timeout=240)
    assert results and results[0].status == "completed", results and results[0].error
    assert results[0].steps == 3


def test_a_stopped_run_resumes_on_the_same_split(tmp_path):
    from trainlab.engine.scripting import RunRequest, run_training

    data = shapes(tmp_path / "d", classes=2, per_class=10, size=24)
    out = str(tmp_path / "run")
    params = {"epochs": "2", "image_size": "24", "freeze_backbone": "true"}
    first = run_training(RunRequest(task="image-classification", data=str(data), params=params, out=out), callbacks=[stop_after_first_epoch()])
    assert first.status == "cancelled" and first.epochs == 1
    before = json.loads((tmp_path / "run" / "run.json").read_text())["data_summary"]["counts"]
    resumed = run_training(RunRequest(resume=out))
    assert resumed.status == "completed", resumed.error
    assert resumed.epochs == 2
    report = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert report["samples"] == sum(before["val"].values()) == 4


def test_the_data_check_names_each_skipped_file_and_finds_a_truncated_image(cli, tmp_path):
    data = shapes(tmp_path / "d", classes=2, per_class=6, size=24)
    (data / "circle" / "garbage.jpg").write_bytes(b"not an image at all " * 20)
    truncated_jpeg(data / "circle" / "cut.jpg")  # its header reads: only its missing end gives it away
    result = cli("train", "image-classification", "--data", data, "--dry-run")
    assert result.returncode == 0, result.stderr
    warning = next(line for line in result.stderr.splitlines() if line.startswith("warning: skipped "))
    assert "1 truncated image" in warning and "1 not a readable image" in warning, warning
    assert "circle/cut.jpg (truncated image)" in warning and "circle/garbage.jpg (not a readable image)" in warning, warning
    counted = [int(n) for line in result.stderr.splitlines() if line.startswith(("train: ", "val: ")) for n in re.findall(r" (\d+)[,)]", line)]
    assert sum(counted) == 12, result.stderr  # the good images alone: neither bad file is counted


@pytest.mark.long
def test_every_image_task_names_the_network_it_trains(cli, tmp_path):
    regression = cli("train", "image-regression", "--data", cells(tmp_path / "cells", images=12), "--dry-run")
    assert regression.returncode == 0, regression.stderr
    assert "model: small-cnn with 4 stages of 2 convolutions (32-64-128-256 channels)" in regression.stderr.splitlines()
    multilabel = cli("train", "image-multilabel", "--data", scenes(tmp_path / "scenes", images=12), "--model", "resnet18", "--set", "pretrained=false", "--dry-run")
    assert multilabel.returncode == 0, multilabel.stderr
    assert "model: resnet18" in multilabel.stderr.splitlines()


def test_many_skipped_files_are_named_first_few_then_counted(tmp_path):
    from trainlab_plugins.image.base import skipped_warning
    from trainlab_plugins.image.folder import scan_class_folders

    many = shapes(tmp_path / "many", classes=2, per_class=2, size=16)
    for i in range(5):
        (many / "circle" / f"bad{i}.jpg").write_bytes(b"junk")
    warning = skipped_warning(scan_class_folders(many), str(many))
    assert warning.startswith("skipped 5 not a readable image: circle/bad") and warning.count("(not a readable image)") == 3
    assert warning.endswith(", and 2 more (listed in run.json)"), warning

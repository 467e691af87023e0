"""The image tasks' tables and new families through the real CLI: train, eval, predict, bad input."""

from __future__ import annotations

import csv
import json

import pytest

from fixtures.images.imagedata import cells, scenes, shapes_table, write_table
from helpers import one_json_line
from trainlab_plugins.image import MULTILABEL_SAMPLE_DATA, REGRESSION_SAMPLE_DATA
from trainlab_resources import resource_path

SMALL = ["--epochs", "1", "--set", "image_size=24", "--batch-size", "8"]


@pytest.mark.parametrize("sample, images", [(REGRESSION_SAMPLE_DATA, 300), (MULTILABEL_SAMPLE_DATA, 400)])
def test_the_table_samples_ship_with_their_licence(sample, images):
    table = resource_path(sample)
    rows = list(csv.DictReader(table.open(encoding="utf-8")))
    assert len(rows) == images and all((table.parent / row["image"]).is_file() for row in rows)
    assert sum(p.stat().st_size for p in table.parent.glob("*.jpg")) < 2_000_000
    assert "CC0" in (table.parent.parent / "README.md").read_text(encoding="utf-8")


def test_classification_trains_on_a_table_through_the_cli(cli, tmp_path):
    table = shapes_table(tmp_path / "t", classes=2, per_class=6, size=24)
    out = tmp_path / "run"
    result = cli("train", "image-classification", "--data", table, *SMALL, "--out", out, "--json")
    assert result.returncode == 0, result.stderr
    assert one_json_line(result)["status"] == "completed"
    record = json.loads((out / "run.json").read_text())
    assert record["data_summary"]["extra"]["splits_from"] == "val_fraction 0.2"
    missing = write_table(tmp_path / "bad.csv", ["image", "label"], [["nowhere.png", "a"]])
    bad = cli("train", "image-classification", "--data", missing, *SMALL, "--json")
    assert bad.returncode == 2 and "bad.csv line 2" in one_json_line(bad)["error"] and "does not exist" in one_json_line(bad)["error"]


@pytest.mark.long
def test_regression_train_predict_eval_through_the_cli(cli, tmp_path):
    data = cells(tmp_path / "c", images=30, size=24)
    out = tmp_path / "run"
    result = cli("train", "image-regression", "--data", data, *SMALL, "--out", out, "--json")
    assert result.returncode == 0, result.stderr
    trained = one_json_line(result)
    assert trained["status"] == "completed" and {"mae", "rmse", "r2"} <= set(trained["metrics"])
    images = sorted(str(p) for p in (tmp_path / "c").glob("*.jpg"))[:3]
    table = tmp_path / "values.csv"
    pred = cli("predict", out, *images, "--out", table, "--json")
    assert pred.returncode == 0, pred.stderr
    answers = one_json_line(pred)["predictions"]
    assert [a["input"] for a in answers] == images
    assert all(a["prediction"]["kind"] == "number" and isinstance(a["prediction"]["value"], float) for a in answers)
    rows = list(csv.DictReader(table.open(encoding="utf-8")))
    assert [float(r["value"]) for r in rows] == pytest.approx([a["prediction"]["value"] for a in answers])
    ev = cli("eval", out, "--json")
    assert ev.returncode == 0, ev.stderr
    assert one_json_line(ev)["metrics"]["r2"] == pytest.approx(trained["metrics"]["r2"], rel=1e-5)


@pytest.mark.long
def test_multilabel_train_predict_through_the_cli(cli, tmp_path):
    data = scenes(tmp_path / "s", images=30, size=24)
    out = tmp_path / "run"
    result = cli("train", "image-multilabel", "--data", data, *SMALL, "--set", "threshold=auto", "--out", out, "--json")
    assert result.returncode == 0, result.stderr
    assert {"micro_f1", "macro_f1"} <= set(one_json_line(result)["metrics"])
    image = str(sorted((tmp_path / "s").glob("*.jpg"))[0])
    pred = cli("predict", out, image, "--json")
    assert pred.returncode == 0, pred.stderr
    answer = one_json_line(pred)["predictions"][0]["prediction"]
    assert answer["kind"] == "label_set" and [s["label"] for s in answer["scores"]] == ["circle", "cross", "square", "triangle"]


@pytest.mark.parametrize(
    "task, header, rows, reason",
    [
        ("image-regression", ["image", "label"], [["{img}", "lots"]], "bad.csv line 2: label 'lots' is not a number"),
        ("image-regression", ["image", "label"], [["{img}", "nan"]], "is not a finite number"),
        ("image-regression", ["image", "label"], [["{img}", "1"]] * 2, "too few rows"),
        ("image-multilabel", ["image", "tags"], [["{img}", "a"]], "no column 'labels'"),
        ("image-multilabel", ["image", "labels"], [["{img}", ""]] * 3, "no row has a label"),
    ],
)
def test_bad_tables_are_exit_2_with_a_reason(cli, tmp_path, task, header, rows, reason):
    image = next((cells(tmp_path / "c", images=1, size=16)).parent.glob("*.jpg"))
    table = write_table(tmp_path / "bad.csv", header, [[c.format(img=image) for c in row] for row in rows])
    result = cli("train", task, "--data", table, *SMALL, "--json")
    assert result.returncode == 2, result.stderr
    assert reason in one_json_line(result)["error"]

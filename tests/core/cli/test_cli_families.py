"""The CLI on regression and multi-label runs: metrics as declared, predictions in their own form.

Classification's outputs are checked in test_cli.py (and stay as they were);
here a number is never shown as a label, each family gets its own CSV
columns and JSON, eval prints the family's own details, and the inputs are
checked before the model loads.
"""

from __future__ import annotations

import csv
import json
import re
import shutil

import pytest

from helpers import FIXTURE_PLUGINS, one_json_line, write_toy_multilabel_csv, write_toy_regression_csv


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A toy regression run and a toy multi-label run, trained once for this module."""
    import trainlab.pluginhost.host as host

    root = tmp_path_factory.mktemp("families-cli")
    reg_data = write_toy_regression_csv(root / "reg.csv")
    ml_data = write_toy_multilabel_csv(root / "ml.csv", rows=320)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRAINLAB_HOME", str(root / "home"))
        mp.syspath_prepend(str(FIXTURE_PLUGINS))
        mp.setattr(host, "_registry", None)
        from trainlab.engine.scripting import RunRequest, run_training

        reg = run_training(RunRequest(task="toy-regression", data=str(reg_data), params={"epochs": "12"}, out=str(root / "reg")))
        ml = run_training(RunRequest(task="toy-multilabel", data=str(ml_data), params={"epochs": "12"}, out=str(root / "ml")))
    assert reg.status == "completed" and ml.status == "completed", (reg.error, ml.error)
    return {"reg": root / "reg", "ml": root / "ml", "reg_data": reg_data, "ml_data": ml_data}


def test_training_a_regression_says_its_own_metrics_every_epoch_and_at_the_end(cli, tmp_path):
    data = write_toy_regression_csv(tmp_path / "reg.csv")
    result = cli("train", "toy-regression", "--data", data, "--epochs", "3", "--out", tmp_path / "run", "--json", extra_path=[FIXTURE_PLUGINS])
    assert result.returncode == 0, result.stderr
    answer = one_json_line(result)
    assert set(answer["metrics"]) == {"r2", "mae", "rmse", "loss"}  # the task's metrics and the loss, nothing of classification
    epochs = [line for line in result.stderr.splitlines() if re.match(r"epoch \d+: val loss", line)]
    assert len(epochs) == 3
    for line in epochs:
        assert re.search(r" r2 -?\d+\.\d{3}  mae \S+  rmse \S+", line), line
        assert "accuracy" not in line and "macro" not in line
    done = next(line for line in result.stdout.splitlines() + result.stderr.splitlines() if line.startswith("done:"))
    assert f"r2 {answer['metrics']['r2']:.3f}" in done and "accuracy" not in done


WITH_TEST_SPLIT = """
import trainlab
from trainlab import TaskSpec
from toy_families import ToyRegression


class WithTest(ToyRegression):
    def splits(self):
        return ["train", "val", "test"]

    def dataset(self, split):
        return self.data["val" if split == "test" else split]


@trainlab.hookimpl
def trainlab_api_version():
    return "2.0"


@trainlab.hookimpl
def trainlab_tasks():
    return [TaskSpec(id="reg-with-test", title="Regression with a test split", factory="with_test_plugin:WithTest",
                     family="regression", data_kind="file")]
"""


def test_the_done_line_gives_the_test_splits_score_too(cli, tmp_path):
    (tmp_path / "with_test_plugin.py").write_text(WITH_TEST_SPLIT)
    info = tmp_path / "with_test-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: with-test\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[trainlab.plugins]\nwith_test = with_test_plugin\n")
    data = write_toy_regression_csv(tmp_path / "reg.csv")
    result = cli("train", "reg-with-test", "--data", data, "--epochs", "2", "--json", extra_path=[tmp_path, FIXTURE_PLUGINS])
    assert result.returncode == 0, result.stderr
    metrics = one_json_line(result)["metrics"]
    assert set(metrics["test"]) == {"r2", "mae", "rmse", "loss"}
    done = next(line for line in result.stderr.splitlines() if line.startswith("done:"))
    val = f"r2 {metrics['r2']:.3f}, mae {metrics['mae']:.4g}, rmse {metrics['rmse']:.4g}"
    test = f"r2 {metrics['test']['r2']:.3f}, mae {metrics['test']['mae']:.4g}, rmse {metrics['test']['rmse']:.4g}"
    assert done.startswith(f"done: {val} (test: {test}); run folder "), done


def test_regression_predictions_are_numbers_in_json_and_csv(cli, runs, tmp_path):
    table = tmp_path / "pred.csv"
    result = cli("predict", runs["reg"], "0.1,0.2,0.3", "1,-1,0.5", "--out", table, "--json", extra_path=[FIXTURE_PLUGINS])
    assert result.returncode == 0, result.stderr
    answer = one_json_line(result)
    first, second = answer["predictions"]
    assert first["input"] == "0.1,0.2,0.3" and first["prediction"]["kind"] == "number"
    assert isinstance(first["prediction"]["value"], float) and "label" not in first["prediction"]
    assert "predictions" not in first  # a number is never a label with a probability
    rows = list(csv.reader(table.open(encoding="utf-8")))
    assert rows[0] == ["input", "value", "error"]
    assert float(rows[1][1]) == pytest.approx(first["prediction"]["value"]) and rows[2][0] == "1,-1,0.5"
    human = cli("predict", runs["reg"], "0.1,0.2,0.3", extra_path=[FIXTURE_PLUGINS])
    shown = human.stdout.strip().split("\t")
    assert shown[0] == "0.1,0.2,0.3" and float(shown[1]) == pytest.approx(first["prediction"]["value"], rel=1e-5)


def test_multilabel_predictions_are_a_set_with_a_score_per_label(cli, runs, tmp_path):
    table = tmp_path / "pred.csv"
    # "--": an input that starts with a minus is not an option
    result = cli("predict", runs["ml"], "--out", table, "--json", "--", "2,2,-2", "-2,-2,-2", extra_path=[FIXTURE_PLUGINS])
    assert result.returncode == 0, result.stderr
    both, none = one_json_line(result)["predictions"]
    assert both["prediction"]["kind"] == "label_set" and both["prediction"]["labels"] == ["a", "b"]
    assert none["prediction"]["labels"] == []  # a row may have no label
    assert {s["label"] for s in both["prediction"]["scores"]} == {"a", "b", "c"}
    rows = list(csv.reader(table.open(encoding="utf-8")))
    assert rows[0] == ["input", "labels", "score_a", "score_b", "score_c", "error"]
    assert rows[1][1] == "a;b" and rows[2][1] == "" and float(rows[1][2]) > 0.5 > float(rows[1][4])


@pytest.mark.long
def test_eval_prints_the_familys_metrics_and_details_and_names_its_data(cli, runs, tmp_path):
    own = cli("eval", runs["reg"], extra_path=[FIXTURE_PLUGINS])
    assert own.returncode == 0, own.stderr
    assert f"evaluated the val split of its own data ({runs['reg_data']}), 60 examples" in own.stdout
    assert re.search(r"^  r2 \d\.\d{3}  mae \S+  rmse \S+  loss \S+$", own.stdout, re.MULTILINE), own.stdout
    assert "60 worst examples listed in the report" in own.stdout and "true " in own.stdout
    assert "accuracy" not in own.stdout and "precision" not in own.stdout

    other = shutil.copy(runs["ml_data"], tmp_path / "other.csv")
    ml = cli("eval", runs["ml"], "--data", other, "--json", extra_path=[FIXTURE_PLUGINS])
    assert ml.returncode == 0, ml.stderr
    report = one_json_line(ml)
    assert report["whole_data"] is True and report["samples"] == 320
    assert f"evaluated all of {other}, 320 examples" in ml.stderr
    assert re.search(r"micro_f1 \d\.\d{3}  macro_f1 \d\.\d{3}", ml.stderr)
    per_label = [line for line in ml.stderr.splitlines() if re.match(r"  [abc] +precision", line)]
    assert len(per_label) == 3 and all("threshold 0.50" in line for line in per_label)


def test_runs_shows_the_best_metric_by_its_name_and_display(cli, tmp_path):
    data = write_toy_regression_csv(tmp_path / "reg.csv")
    assert cli("train", "toy-regression", "--data", data, "--epochs", "2", "--out", tmp_path / "run", extra_path=[FIXTURE_PLUGINS]).returncode == 0
    listing = one_json_line(cli("runs", "--json", extra_path=[FIXTURE_PLUGINS]))["runs"]
    row = listing[0]
    assert row["monitor"] == "r2" and row["best"] == f"r2 {row['best_metric']:.3f}"
    text = cli("runs", extra_path=[FIXTURE_PLUGINS]).stdout
    assert f"r2 {row['best_metric']:.3f}" in text
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["family"] == "regression" and [m["name"] for m in record["declared_metrics"]] == ["r2", "mae", "rmse"]
    assert record["best"]["metric"] == "r2" and set(record["metrics"]) == {"r2", "mae", "rmse", "loss"}


def test_tasks_lists_family_metrics_monitor_input_and_model_formats(cli):
    text = cli("tasks", "-v", extra_path=[FIXTURE_PLUGINS]).stdout
    assert "  family regression; metrics r2 (monitor), mae (lower is better), rmse (lower is better); input row;" in text
    assert "  family multilabel; metrics micro_f1 (monitor), macro_f1; input row;" in text
    tasks = {t["id"]: t for t in one_json_line(cli("tasks", "--json", extra_path=[FIXTURE_PLUGINS]))["tasks"]}
    assert tasks["toy-regression"]["family"] == "regression" and tasks["toy-regression"]["monitor"] == "r2"
    assert [m["name"] for m in tasks["toy-multilabel"]["metrics"]] == ["micro_f1", "macro_f1"]
    details = tasks["toy-regression"]["details"]  # the family's, declared: kinds and columns, no data
    assert [(d["name"], d["kind"]) for d in details] == [("worst_examples", "examples"), ("scatter", "series"), ("residual_histogram", "series")]
    assert "rows" in details[0] and not details[0]["rows"]
    image, text_task = tasks["image-classification"], tasks["text-classification"]
    assert image["input"]["kind"] == "image" and ".png" in image["input"]["suffixes"]
    assert image["model_formats"] == ["trainlab-image", "torchvision-checkpoint"]
    assert text_task["input"]["kind"] == "text" and text_task["model_formats"] == ["transformers"]
    monitor = next(p for p in tasks["toy-regression"]["parameters"] if p["name"] == "monitor")
    assert monitor["choices"] == ["r2", "mae", "rmse", "loss"] and monitor["default"] == "r2"


# -- inputs, checked before the model loads ------------------------------------------


def _fake_run(tmp_path, task):
    """A run folder whose model/ is empty: anything that loads it fails, so an
    error about an input proves it was found first."""
    run = tmp_path / "run"
    (run / "model").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"id": "x", "task": task, "status": "completed", "parameters": {}, "label_names": ["a", "b"]}))
    return run


def test_a_missing_image_is_reported_before_the_model_loads(cli, tmp_path):
    run = _fake_run(tmp_path, "image-classification")
    result = cli("predict", run, tmp_path / "nope.png", "--json")
    assert result.returncode == 2
    error = one_json_line(result)["error"]
    assert error.startswith(f"input {tmp_path / 'nope.png'}: no such file or folder") and "image-classification takes an image" in error


def test_the_engine_does_not_load_a_model_for_a_missing_input(tmp_path, monkeypatch):
    import trainlab.engine.context as context
    from trainlab import UsageError
    from trainlab.engine.predict import predict

    def loading(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(context, "trained_task", loading)
    with pytest.raises(UsageError, match="no such file or folder"):
        predict(_fake_run(tmp_path, "image-classification"), [str(tmp_path / "gone.jpg")])


def test_a_file_given_to_a_task_that_takes_rows_gets_a_warning_naming_it(cli, runs, tmp_path):
    picture = tmp_path / "cat.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n")
    result = cli("predict", runs["reg"], "0.1,0.2,0.3", picture, "--json", extra_path=[FIXTURE_PLUGINS])
    warning = f"input {picture} looks like a file, but task toy-regression takes comma-separated numbers"
    assert warning in result.stderr
    # the toy's predictor then fails on it: that is the plugin's error, not a silent label
    assert "could not convert string to float" in result.stderr


def test_predict_on_a_folder_that_does_not_exist_says_so(cli, tmp_path):
    result = cli("predict", tmp_path / "no" / "such", "1,2", "--json")
    assert result.returncode == 2 and one_json_line(result)["error"] == f"{tmp_path / 'no' / 'such'}: no such folder"
    result = cli("eval", tmp_path / "no" / "such", "--json")
    assert result.returncode == 2 and one_json_line(result)["error"] == f"{tmp_path / 'no' / 'such'}: no such folder"


def test_inputs_are_checked_against_the_tasks_declared_input(tmp_path):
    from trainlab import InputSpec, TaskSpec, UsageError
    from trainlab.engine.predict import check_inputs

    texts = TaskSpec(id="reviews", title="Reviews", factory="a:b", input=InputSpec("text", (".txt", ".csv"), "a review"))
    (tmp_path / "reviews.csv").write_text("text\nfine\n")
    (tmp_path / "scan.dcm").write_bytes(b"\0")
    assert check_inputs(texts, ["a good film", str(tmp_path / "reviews.csv"), "-", "no-suffix-word"]) == []
    warned = check_inputs(texts, ["holiday.jpg", str(tmp_path), str(tmp_path / "scan.dcm"), "x.dcm"], known_suffixes=[".dcm"])
    assert warned == [
        "input holiday.jpg looks like a file, but task reviews takes a review (and files .txt, .csv): it is predicted as the text 'holiday.jpg'",
        f"input {tmp_path} is a folder, but task reviews takes a review (and files .txt, .csv): it is predicted as the text {str(tmp_path)!r}",
        f"input {tmp_path / 'scan.dcm'} looks like a file, but task reviews takes a review (and files .txt, .csv): "
        f"it is predicted as the text {str(tmp_path / 'scan.dcm')!r}",
        "input x.dcm looks like a file, but task reviews takes a review (and files .txt, .csv): it is predicted as the text 'x.dcm'",
    ]
    images = TaskSpec(id="cells", title="Cells", factory="a:b", input=InputSpec("image", (".png",), "a cell photo"))
    assert check_inputs(images, [str(tmp_path), str(tmp_path / "reviews.csv")]) == [
        f"input {tmp_path / 'reviews.csv'}: task cells takes a cell photo (.png); .csv may not be readable"
    ]
    with pytest.raises(UsageError, match=r"input gone\.png: no such file or folder \(task cells takes a cell photo \(\.png\)\)"):
        check_inputs(images, ["gone.png"])

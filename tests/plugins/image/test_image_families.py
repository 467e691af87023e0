"""image-regression, image-multilabel and tables for image-classification, through the real engine.

Real torch on tiny generated images at a small image_size: these check what a
user gets (metrics, eval.json, the model folder and its fitted state, typed
predictions, exact resume), not how well the sample learns (the report's
measurement on the bundled samples does).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from fixtures.images.imagedata import cells, scenes, shapes, shapes_table
from helpers import stop_after_first_epoch
from trainlab import LabelSet, Number
from trainlab.api.callbacks import Callback
from trainlab.engine.scripting import RunRequest, evaluate_run, run_training

SMALL = {"image_size": "24", "batch_size": "8", "device": "cpu", "keep_checkpoints": "last+best"}


def train(task, data, out, callbacks=(), **params):
    request = RunRequest(task=task, data=str(data), params={**SMALL, **{k: str(v) for k, v in params.items()}}, out=str(out))
    return run_training(request, callbacks=list(callbacks))


def predictor_of(run_dir):
    from trainlab.engine.context import trained_task
    from trainlab.runfolder.index import RunDir

    rd = RunDir(run_dir)
    _, task, ctx = trained_task(rd, "cpu")
    return task, task.load_predictor(rd.model_dir, ctx.device)


def assert_resume_is_exact(task, data, tmp_path, **params):
    straight = train(task, data, tmp_path / "straight", epochs=2, final_weights="last", **params)
    first = train(task, data, tmp_path / "split", callbacks=[stop_after_first_epoch()], epochs=2, final_weights="last", **params)
    assert straight.status == "completed" and first.status == "cancelled" and first.epochs == 1
    resumed = run_training(RunRequest(resume=first.run_dir))
    assert resumed.status == "completed" and resumed.steps == straight.steps
    a = load_file(str(tmp_path / "straight" / "checkpoints" / "last.safetensors"))
    b = load_file(str(tmp_path / "split" / "checkpoints" / "last.safetensors"))
    weights = [k for k in a if k.startswith("model.")]
    assert weights and all(torch.equal(a[k], b[k]) for k in weights)
    return straight, resumed


# -- image-regression ----------------------------------------------------------------------


def test_a_regression_run_reports_and_predicts_in_the_targets_units(tmp_path):
    data = cells(tmp_path / "c", images=40, size=24)
    # fp32: evaluation computes in the run's precision, the predictor in fp32; in bf16 (auto on a
    # CPU with native bfloat16) the two agree to about 5e-4 relative, not to the 1e-3 absolute below
    outcome = train("image-regression", data, tmp_path / "run", epochs=2, precision="fp32")
    assert outcome.status == "completed", outcome.error
    assert set(outcome.metrics) == {"mae", "rmse", "r2", "loss"} and outcome.best["metric"] == "r2"
    report = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert report["family"] == "regression" and report["samples"] == 8
    assert all(example["example"].endswith(".jpg") for example in report["worst_examples"])

    model = tmp_path / "run" / "model"
    meta = json.loads((model / "model.json").read_text())
    state = json.loads((model / "task_state.json").read_text())
    assert meta["format"] == "trainlab-image-regressor" and meta["family"] == "regression" and meta["num_outputs"] == 1
    assert meta["output"]["target_mean"] == state["target_mean"] and meta["output"]["target_std"] == state["target_std"]
    assert 4 < state["target_mean"] < 10  # cells per image, the training split's mean
    assert meta["exports"]["torch_export"]["verified"]

    # the predictor answers Numbers in the target's units: what evaluation saw for the same images
    _, predict = predictor_of(tmp_path / "run")
    worst = report["worst_examples"]
    values = predict([w["example"] for w in worst], 1)
    assert all(isinstance(v, Number) for v in values)
    assert [v.value for v in values] == pytest.approx([w["predicted"] for w in worst], abs=1e-3)

    again = evaluate_run(str(tmp_path / "run"))
    assert again["metrics"]["r2"] == pytest.approx(outcome.metrics["r2"], rel=1e-5)


def test_the_regression_program_gives_the_targets_units_in_plain_torch(tmp_path):
    data = cells(tmp_path / "c", images=20, size=24)
    outcome = train("image-regression", data, tmp_path / "run", epochs=1)
    assert outcome.status == "completed", outcome.error
    from trainlab_plugins.image.decode import load_rgb
    from trainlab_plugins.image.predictor import normalise
    from trainlab_plugins.image.transforms import IMAGENET_MEAN, IMAGENET_STD, eval_transform

    files = sorted(str(p) for p in (tmp_path / "c").glob("*.jpg"))[:5]
    pixels = normalise(torch.stack([eval_transform(24)(load_rgb(f)) for f in files]), IMAGENET_MEAN, IMAGENET_STD)
    torch.save(pixels, tmp_path / "x.pt")
    script = (
        "import sys, torch\n"
        "program = torch.export.load(sys.argv[1]).module()\n"
        "torch.save(program(torch.load(sys.argv[2], weights_only=True)), sys.argv[3])\n"
        "assert 'trainlab' not in sys.modules\n"
    )
    model = tmp_path / "run" / "model"
    done = subprocess.run(
        [sys.executable, "-I", "-c", script, str(model / "model.pt2"), str(tmp_path / "x.pt"), str(tmp_path / "y.pt")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    values = torch.load(tmp_path / "y.pt", weights_only=True)
    _, predict = predictor_of(tmp_path / "run")
    assert values.shape == (5,) and values.tolist() == pytest.approx([p.value for p in predict(files, 1)], abs=1e-3)


def test_a_stopped_regression_run_resumes_to_the_same_weights(tmp_path, one_thread):
    assert_resume_is_exact("image-regression", cells(tmp_path / "c", images=24, size=24), tmp_path)


# -- image-multilabel ----------------------------------------------------------------------


def test_a_multilabel_run_with_auto_thresholds_records_them_with_the_model(tmp_path):
    data = scenes(tmp_path / "s", images=40, size=24)
    outcome = train("image-multilabel", data, tmp_path / "run", epochs=2, threshold="auto")
    assert outcome.status == "completed", outcome.error
    assert set(outcome.metrics) == {"micro_f1", "macro_f1", "loss"} and outcome.best["metric"] == "micro_f1"
    report = json.loads((tmp_path / "run" / "eval.json").read_text())
    names = ["circle", "cross", "square", "triangle"]
    assert report["family"] == "multilabel" and [row["label"] for row in report["per_label"]] == names
    model = tmp_path / "run" / "model"
    meta = json.loads((model / "model.json").read_text())
    state = json.loads((model / "task_state.json").read_text())
    assert meta["format"] == "trainlab-image-multilabel" and meta["label_names"] == names
    assert meta["output"]["thresholds"] == state["thresholds"] == report["thresholds"]
    assert meta["output"]["activation"] == "sigmoid" and all(0 < t < 1 for t in state["thresholds"])

    # LabelSet: every label's score, and exactly the labels at or above their threshold
    task, predict = predictor_of(tmp_path / "run")
    files = sorted(str(p) for p in (tmp_path / "s").glob("*.jpg"))[:6]
    sets = predict(files, 3)
    assert all(isinstance(s, LabelSet) for s in sets)
    thresholds = dict(zip(names, state["thresholds"]))
    for prediction in sets:
        assert [label for label, _ in prediction.scores] == names
        assert set(prediction.labels) == {label for label, p in prediction.scores if p >= thresholds[label]}
    assert task.decision_thresholds() == state["thresholds"]


def test_a_fixed_threshold_is_recorded_and_used(tmp_path):
    data = scenes(tmp_path / "s", images=24, size=24)
    outcome = train("image-multilabel", data, tmp_path / "run", epochs=1, threshold="0.3")
    assert outcome.status == "completed", outcome.error
    meta = json.loads((tmp_path / "run" / "model" / "model.json").read_text())
    assert meta["output"]["thresholds"] == [0.3] * 4 and meta["output"]["threshold_setting"] == "0.3"


def test_a_stopped_multilabel_run_resumes_to_the_same_weights(tmp_path, one_thread):
    assert_resume_is_exact("image-multilabel", scenes(tmp_path / "s", images=24, size=24), tmp_path)


# -- image-classification from a table, and across families ------------------------------


def test_classification_trains_on_a_table_and_evaluates_another(tmp_path):
    table = shapes_table(tmp_path / "t", classes=2, per_class=8, size=24)
    outcome = train("image-classification", table, tmp_path / "run", epochs=1)
    assert outcome.status == "completed", outcome.error
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["label_names"] == ["circle", "square"] and record["data_summary"]["counts"]["val"] == {"circle": 2, "square": 2}
    _, predict = predictor_of(tmp_path / "run")
    answer = predict([str(next((tmp_path / "t" / "img" / "circle").glob("*.jpg")))], 2)
    assert [label for label, _ in answer[0]] in (["circle", "square"], ["square", "circle"])
    other = shapes_table(tmp_path / "other", classes=2, per_class=3, size=24, seed=3)
    assert evaluate_run(str(tmp_path / "run"), str(other))["samples"] == 6  # all of other data


def test_a_model_folder_of_one_image_task_starts_another(tmp_path):
    folder = shapes(tmp_path / "d", classes=2, per_class=6, size=24)
    classifier = train("image-classification", folder, tmp_path / "cls", epochs=1)
    assert classifier.status == "completed", classifier.error
    logs = []

    class Logs(Callback):
        def on_event(self, event):
            logs.append(getattr(event, "message", ""))

    data = cells(tmp_path / "c", images=20, size=24)
    regression = train("image-regression", data, tmp_path / "reg", callbacks=[Logs()], epochs=1, model=str(tmp_path / "cls" / "model"))
    assert regression.status == "completed", regression.error
    assert any("classifier head fc newly initialised" in m for m in logs)
    start = load_file(str(tmp_path / "cls" / "model" / "model.safetensors"))
    reg_meta = json.loads((tmp_path / "reg" / "model" / "model.json").read_text())
    assert reg_meta["architecture"] == "small-cnn" and reg_meta["num_outputs"] == 1
    assert start["fc.weight"].shape[0] == 2

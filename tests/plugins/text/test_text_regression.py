"""text-regression with real torch and transformers on tiny-bert: data, export, engine, CLI, resume."""

import csv
import json

import pytest
import torch
from safetensors.torch import load_file

from helpers import ONE_THREAD, last_json_line, sample_head, stop_after_first_epoch
from trainlab import DataError, Number, RunContext, UsageError
from trainlab.engine.plan import plan_run
from trainlab.engine.scripting import RunRequest, evaluate_run, run_training
from trainlab.api.params import ENGINE_PARAMS, resolve
from trainlab_plugins.text import TEXT_REGRESSION
from trainlab_plugins.text.regression import TextRegressionTask
from trainlab_resources import resource_path
from trainlab.runfolder.index import RunDir

pytestmark = pytest.mark.usefixtures("one_thread")

SAMPLE = resource_path("samples", "text-regression")


def make_task(purpose="train", **overrides):
    params = resolve(TEXT_REGRESSION, ENGINE_PARAMS, {}, {"device": "cpu", **overrides})
    logs = []
    ctx = RunContext(device=torch.device("cpu"), precision="fp32", seed=0, run_dir=None, params=params, log=logs.append, purpose=purpose)
    return TextRegressionTask(TEXT_REGRESSION, params), ctx, logs


def test_the_defaults_tiny_bert_a_sample_and_a_text_input():
    params = resolve(TEXT_REGRESSION, ENGINE_PARAMS, {}, {})
    assert params["model"] == "tiny-bert" and params["monitor"] == "r2" and params["label_column"] == "label"
    assert TEXT_REGRESSION.family == "regression" and TEXT_REGRESSION.input.kind == "text"
    assert TEXT_REGRESSION.sample_path() == SAMPLE


def test_prepare_summarises_the_targets_and_fits_their_scaling():
    task, ctx, logs = make_task()
    summary = task.prepare(str(SAMPLE), ctx)
    assert summary.label_names == [] and summary.counts == {"train": {"rows": 600}, "val": {"rows": 160}, "test": {"rows": 160}}
    train = task.data.splits["train"].labels
    mean = sum(train) / len(train)
    assert task.target_mean == pytest.approx(mean)
    assert task.target_std == pytest.approx((sum((v - mean) ** 2 for v in train) / len(train)) ** 0.5)
    assert summary.extra["target"]["train"]["min"] == 1.0 and summary.extra["target"]["train"]["max"] == 5.0
    assert summary.warnings == [] and summary.skipped == {}
    assert any(line.startswith("train: 600 texts, target mean ") for line in logs)
    batch = task.collate([task.dataset("train")[i] for i in range(4)])
    assert batch["labels"].dtype == torch.float32 and batch["labels"].tolist() == pytest.approx(train[:4])


def test_a_constant_target_is_refused(tmp_path):
    (tmp_path / "flat.csv").write_text("text,label\n" + "".join(f"text {i},3\n" for i in range(10)), encoding="utf-8")
    task, ctx, _ = make_task()
    with pytest.raises(DataError, match=r"flat\.csv: every training target is 3; a regression needs targets that vary"):
        task.prepare(str(tmp_path / "flat.csv"), ctx)


def test_evaluating_keeps_the_trained_scaling(tmp_path):
    (tmp_path / "own.csv").write_text("text,label\n" + "".join(f"text {i},{100 + i}\n" for i in range(20)), encoding="utf-8")
    task, ctx, _ = make_task(purpose="evaluate")
    task.load_fitted_state({"target_mean": 3.0, "target_std": 0.5})
    task.prepare(str(tmp_path / "own.csv"), ctx, label_names=[])
    assert "train" in task.splits() and (task.target_mean, task.target_std) == (3.0, 0.5)


def test_the_exported_model_is_a_transformers_regressor_whose_output_converts_to_units(tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

    task, ctx, _ = make_task()
    task.prepare(str(SAMPLE), ctx)
    torch.manual_seed(0)
    model = task.build_model(ctx).eval()
    out_dir = tmp_path / "model"
    task.save_model(model, out_dir, ctx)
    loaded = AutoModelForSequenceClassification.from_pretrained(str(out_dir), local_files_only=True).eval()
    assert loaded.config.problem_type == "regression" and loaded.config.num_labels == 1
    info = json.loads((out_dir / "trainlab.json").read_text())
    scaling = info["target_scaling"]
    assert info["task"] == "text-regression" and scaling == {"mean": task.target_mean, "std": task.target_std}

    texts = ["The dumplings tasted outstanding. Highly recommended.", "服务员态度很差，再也不来了。"]
    tokenizer = AutoTokenizer.from_pretrained(str(out_dir), local_files_only=True)
    with torch.no_grad():
        logits = loaded(**tokenizer(texts, padding=True, return_tensors="pt")).logits[:, 0]
    by_hand = (logits * scaling["std"] + scaling["mean"]).tolist()  # as docs/tasks/text-regression.md says
    predictions = task.load_predictor(out_dir, "cpu")(texts, 1)
    assert all(isinstance(p, Number) for p in predictions)
    assert [p.value for p in predictions] == pytest.approx(by_hand, abs=1e-5)
    # a plain pipeline gives the standardised output itself (no sigmoid)
    scores = [r["score"] for r in pipeline("text-classification", model=str(out_dir))(texts)]
    assert scores == pytest.approx(logits.tolist(), abs=1e-5)


def test_a_run_reports_regression_metrics_and_predicts_what_it_evaluated(tmp_path):
    from trainlab.engine.context import trained_task

    data = sample_head(tmp_path, rows=64, sample="text-regression")
    # fp32: evaluation computes in the run's precision, the predictor in fp32 (in bf16 they agree to about 5e-4 relative)
    params = {"epochs": "2", "device": "cpu", "precision": "fp32"}
    outcome = run_training(RunRequest(task="text-regression", data=str(data), params=params, out=str(tmp_path / "run")))
    assert outcome.status == "completed", outcome.error
    assert set(outcome.metrics) == {"mae", "rmse", "r2", "loss"} and outcome.best["metric"] == "r2"
    run = tmp_path / "run"
    report = json.loads((run / "eval.json").read_text(encoding="utf-8"))
    assert report["family"] == "regression" and report["samples"] == 64 and "accuracy" not in report
    state = json.loads((run / "model" / "task_state.json").read_text())
    train = [float(line.rsplit(",", 1)[1]) for line in (data / "train.csv").read_text(encoding="utf-8").splitlines()[1:]]
    assert state["target_mean"] == pytest.approx(sum(train) / len(train))

    # evaluated again from the folder, the same figures
    again = evaluate_run(str(run), device="cpu")
    assert again["metrics"]["r2"] == pytest.approx(outcome.metrics["r2"], abs=1e-5)
    # the predictor gives, in the target's units, what the evaluation saw
    _, task, ctx = trained_task(RunDir(run), "cpu")
    worst = report["worst_examples"][:5]
    values = task.load_predictor(run / "model", ctx.device)([w["example"] for w in worst], 1)
    assert [v.value for v in values] == pytest.approx([w["predicted"] for w in worst], abs=1e-4)


def test_a_stopped_run_resumes_to_the_same_weights(tmp_path):
    data = sample_head(tmp_path, rows=32, sample="text-regression")
    params = {"epochs": "2", "batch_size": "8", "device": "cpu", "seed": "5"}
    straight = run_training(RunRequest(task="text-regression", data=str(data), params=params, out=str(tmp_path / "a")))
    assert straight.status == "completed"
    first = run_training(RunRequest(task="text-regression", data=str(data), params=params, out=str(tmp_path / "b")), callbacks=[stop_after_first_epoch()])
    assert first.status == "cancelled" and first.epochs == 1
    resumed = run_training(RunRequest(resume=str(tmp_path / "b")))
    assert resumed.status == "completed" and resumed.steps == straight.steps
    a = load_file(str(tmp_path / "a" / "checkpoints" / "last.safetensors"))
    b = load_file(str(tmp_path / "b" / "checkpoints" / "last.safetensors"))
    weights = [k for k in a if k.startswith("model.")]
    assert weights and all(torch.equal(a[k], b[k]) for k in weights)
    assert resumed.metrics["r2"] == straight.metrics["r2"]


@pytest.mark.long
def test_train_and_eval_from_the_command_line(cli, tmp_path):
    run = tmp_path / "run"
    proc = cli("train", "text-regression", "--data", sample_head(tmp_path, rows=64, sample="text-regression"), "--epochs", "1", "--out", run, "--json", env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    result = last_json_line(proc)
    assert result["status"] == "completed" and result["task"] == "text-regression"
    assert set(result["metrics"]) == {"mae", "rmse", "r2", "loss"}
    assert "r2 " in proc.stderr and "accuracy" not in proc.stderr

    new = tmp_path / "new.jsonl"
    new.write_text("".join(json.dumps({"text": t, "label": v}) + "\n" for t, v in [("超高性价比，强烈推荐。", 4.8), ("Never again.", 1.2), ("Nothing special.", 3.0)]), encoding="utf-8")
    proc = cli("eval", run, "--data", new, "--json", env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    evaluation = last_json_line(proc)
    assert evaluation["samples"] == 3 and set(evaluation["metrics"]) == {"mae", "rmse", "r2"}

    # predict: a number per text, in the target's units, as JSON and CSV
    out_csv = tmp_path / "predictions.csv"
    proc = cli("predict", run, "The noodles tasted outstanding.", "-", new, "--out", out_csv, "--json", input="服务员态度很差\n", env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    predictions = last_json_line(proc)["predictions"]
    assert [p["input"] for p in predictions] == ["The noodles tasted outstanding.", "服务员态度很差", "超高性价比，强烈推荐。", "Never again.", "Nothing special."]
    assert all(p["prediction"]["kind"] == "number" and 0 < p["prediction"]["value"] < 6 for p in predictions)
    with open(out_csv, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["input", "value", "error"]
    assert [float(row[1]) for row in rows[1:]] == pytest.approx([p["prediction"]["value"] for p in predictions])


def test_a_label_that_is_not_a_number_is_exit_2_naming_file_and_line(cli, tmp_path):
    data = tmp_path / "ratings.csv"
    data.write_text("text,label\ngreat,5\nawful,one star\nfine,3\n", encoding="utf-8")
    proc = cli("train", "text-regression", "--data", data, "--json")
    assert proc.returncode == 2
    assert "ratings.csv: line 3: label 'one star' is not a number" in last_json_line(proc)["error"]


def dropout_rates(model):
    return {m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)}


def test_a_pretrained_encoder_trains_without_dropout_unless_told(bert_folder):
    task, ctx, _ = make_task(model=str(bert_folder), max_length=32)
    task.prepare(str(SAMPLE), ctx)
    model = task.build_model(ctx)
    assert dropout_rates(model) == {0.0}
    assert model.config.hidden_dropout_prob == model.config.attention_probs_dropout_prob == model.config.classifier_dropout == 0.0
    for value, rates in (("model", {0.1}), ("0.25", {0.25})):
        task, ctx, _ = make_task(model=str(bert_folder), max_length=32, dropout=value)
        task.prepare(str(SAMPLE), ctx)
        assert dropout_rates(task.build_model(ctx)) == rates
    scratch, ctx, _ = make_task()  # tiny-bert from scratch keeps its dropout
    scratch.prepare(str(SAMPLE), ctx)
    assert dropout_rates(scratch.build_model(ctx)) == {0.1}
    bad, ctx, _ = make_task(model=str(bert_folder), max_length=32, dropout="1.5")
    with pytest.raises(UsageError, match=r"bad value for parameter dropout: '1\.5'; use auto, model or a rate"):
        bad.prepare(str(SAMPLE), ctx)


def test_a_run_made_before_dropout_resumes_with_the_models_own(tmp_path, bert_folder):
    data = sample_head(tmp_path, rows=32, sample="text-regression")
    params = {"model": str(bert_folder), "epochs": "2", "batch_size": "8", "device": "cpu", "max_length": "32", "min_steps": "0", "dropout": "model"}
    first = run_training(RunRequest(task="text-regression", data=str(data), params=params, out=str(tmp_path / "old")), callbacks=[stop_after_first_epoch()])
    assert first.status == "cancelled" and first.epochs == 1
    run_json = tmp_path / "old" / "run.json"
    record = json.loads(run_json.read_text(encoding="utf-8"))
    del record["parameters"]["dropout"]  # as a run made before the parameter existed
    run_json.write_text(json.dumps(record), encoding="utf-8")
    assert plan_run(RunRequest(resume=str(tmp_path / "old"))).params["dropout"] == "model"
    resumed = run_training(RunRequest(resume=str(tmp_path / "old")))
    assert resumed.status == "completed", resumed.error
    assert json.loads((tmp_path / "old" / "model" / "config.json").read_text(encoding="utf-8"))["hidden_dropout_prob"] == 0.1
    del params["dropout"]  # today's default: none on a pretrained model, and the exported config says so
    fresh = run_training(RunRequest(task="text-regression", data=str(data), params={**params, "epochs": "1"}, out=str(tmp_path / "new")))
    assert fresh.status == "completed", fresh.error
    config = json.loads((tmp_path / "new" / "model" / "config.json").read_text(encoding="utf-8"))
    assert json.loads((tmp_path / "new" / "run.json").read_text(encoding="utf-8"))["parameters"]["dropout"] == "auto"
    assert config["hidden_dropout_prob"] == config["attention_probs_dropout_prob"] == 0.0


def test_a_pretrained_encoder_defaults_to_one_rate_and_random_batches(bert_folder):
    params = resolve(TEXT_REGRESSION, ENGINE_PARAMS, {}, {"model": str(bert_folder)})
    assert (params["head_lr"], params["length_grouping"], params["dropout"], params["lr"], params["min_steps"]) == ("same", False, "auto", 5e-5, 500)
    task, ctx, _ = make_task(model=str(bert_folder), max_length=32)
    task.prepare(str(SAMPLE), ctx)
    assert task.head_learning_rate() is None and task.dropout_rate() == 0.0
    scratch = resolve(TEXT_REGRESSION, ENGINE_PARAMS, {}, {})  # tiny-bert keeps length-grouped batches
    assert (scratch["length_grouping"], scratch["min_steps"], scratch["epochs"]) == (True, 0, 8)

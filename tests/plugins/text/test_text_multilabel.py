"""text-multilabel with real torch and transformers on tiny-bert: data, thresholds, export, engine, CLI, resume."""

import csv
import json

import pytest
import torch
from safetensors.torch import load_file

from helpers import ONE_THREAD, last_json_line, sample_head, stop_after_first_epoch
from trainlab import DataError, LabelSet, RunContext, UsageError
from trainlab.engine.plan import plan_run
from trainlab.engine.scripting import RunRequest, evaluate_run, run_training
from trainlab.api.params import ENGINE_PARAMS, resolve
from trainlab_plugins.text import TEXT_MULTILABEL
from trainlab_plugins.text.multilabel import TextMultiLabelTask
from trainlab_resources import resource_path
from trainlab.runfolder.index import RunDir

pytestmark = pytest.mark.usefixtures("one_thread")

SAMPLE = resource_path("samples", "text-multilabel")
TOPICS = ["food", "sports", "technology", "weather"]


def make_task(**overrides):
    params = resolve(TEXT_MULTILABEL, ENGINE_PARAMS, {}, {"device": "cpu", **overrides})
    logs = []
    ctx = RunContext(device=torch.device("cpu"), precision="fp32", seed=0, run_dir=None, params=params, log=logs.append)
    return TextMultiLabelTask(TEXT_MULTILABEL, params), ctx, logs


def test_the_defaults_labels_column_threshold_and_a_text_input():
    params = resolve(TEXT_MULTILABEL, ENGINE_PARAMS, {}, {})
    assert params["label_column"] == "labels" and params["label_separator"] == ";"
    # thresholds tuned on validation, rare positives weighted: for tiny-bert and pretrained models alike
    assert params["threshold"] == "auto" and params["class_weighting"] is True
    assert params["min_steps"] == 0 and params["lr"] == 1e-3  # tiny-bert's preset: its own rate and epochs
    pretrained = resolve(TEXT_MULTILABEL, ENGINE_PARAMS, {}, {"model": "/models/some-encoder"})
    assert pretrained["lr"] == 5e-5 and pretrained["min_steps"] == 500 and pretrained["head_lr"] == "auto"
    assert params["monitor"] == "micro_f1" and params["model"] == "tiny-bert"
    assert TEXT_MULTILABEL.family == "multilabel" and TEXT_MULTILABEL.input.kind == "text"
    assert TEXT_MULTILABEL.sample_path() == SAMPLE


def test_prepare_counts_each_label_and_the_texts_without_one():
    task, ctx, logs = make_task()
    summary = task.prepare(str(SAMPLE), ctx)
    assert summary.label_names == TOPICS
    rows = task.data.splits["train"].labels
    assert summary.counts["train"] == {name: sum(name in row for row in rows) for name in TOPICS}
    assert summary.extra["rows"] == {"train": 600, "val": 160, "test": 160}
    assert summary.extra["without_label"]["train"] == sum(not row for row in rows) > 0
    assert summary.warnings == [] and summary.skipped == {}
    assert task.label_counts() == [summary.counts["train"][n] for n in TOPICS]
    assert any(line.startswith("train: 600 texts, ") and "without a label" in line for line in logs)
    # targets are multi-hot rows in label order
    batch = task.collate([task.dataset("train")[i] for i in range(3)])
    assert batch["labels"].dtype == torch.float32 and batch["labels"].shape == (3, 4)
    assert [[TOPICS[j] for j in range(4) if row[j]] for row in batch["labels"].tolist()] == [sorted(r) for r in rows[:3]]


def test_no_labels_at_all_and_a_bad_threshold_are_refused(tmp_path):
    (tmp_path / "none.csv").write_text("text,labels\n" + "".join(f"text {i},\n" for i in range(10)), encoding="utf-8")
    task, ctx, _ = make_task()
    with pytest.raises(DataError, match=r"none\.csv: no training text has a label \(column 'labels'"):
        task.prepare(str(tmp_path / "none.csv"), ctx)
    task, ctx, _ = make_task(threshold="high")
    with pytest.raises(UsageError, match=r"bad value for parameter threshold: 'high'; use auto or a number between 0 and 1"):
        task.prepare(str(SAMPLE), ctx)


def test_labels_joined_by_another_character_get_a_hint(tmp_path):
    rows = [f"text {i},\"a,b\"" if i % 2 else f"text {i},a" for i in range(20)]
    (tmp_path / "commas.csv").write_text("text,labels\n" + "\n".join(rows) + "\n", encoding="utf-8")
    task, ctx, _ = make_task()
    summary = task.prepare(str(tmp_path / "commas.csv"), ctx)
    assert any("label 'a,b' contains ','" in w and "--set label_separator=," in w for w in summary.warnings)


def test_the_exported_model_is_a_transformers_multilabel_classifier(tmp_path):
    from transformers import AutoModelForSequenceClassification, pipeline

    task, ctx, _ = make_task(threshold="0.4")
    task.prepare(str(SAMPLE), ctx)
    torch.manual_seed(0)
    model = task.build_model(ctx).eval()
    out_dir = tmp_path / "model"
    task.save_model(model, out_dir, ctx)
    loaded = AutoModelForSequenceClassification.from_pretrained(str(out_dir), local_files_only=True)
    assert loaded.config.problem_type == "multi_label_classification" and loaded.config.id2label == dict(enumerate(TOPICS))
    info = json.loads((out_dir / "trainlab.json").read_text())
    assert info["thresholds"] == dict.fromkeys(TOPICS, 0.4) and info["label_separator"] == ";"

    texts = ["Heavy rain postponed the football final.", "这款手机的处理器很快。"]
    predictions = task.load_predictor(out_dir, "cpu")(texts, 5)
    assert all(isinstance(p, LabelSet) for p in predictions)
    # a plain pipeline applies a sigmoid per label: the same scores
    for prediction, scores in zip(predictions, pipeline("text-classification", model=str(out_dir), top_k=None)(texts)):
        assert dict(prediction.scores) == pytest.approx({s["label"]: s["score"] for s in scores}, abs=1e-5)
        assert list(prediction.labels) == [label for label, p in prediction.scores if p >= 0.4]


def test_a_run_with_auto_thresholds_records_and_predicts_with_them(tmp_path):
    from trainlab.engine.context import trained_task

    outcome = run_training(
        RunRequest(task="text-multilabel", data=str(sample_head(tmp_path, rows=64, sample="text-multilabel")), params={"epochs": "2", "device": "cpu", "threshold": "auto"}, out=str(tmp_path / "run"))
    )
    assert outcome.status == "completed", outcome.error
    assert set(outcome.metrics) == {"micro_f1", "macro_f1", "loss"} and outcome.best["metric"] == "micro_f1"
    run = tmp_path / "run"
    report = json.loads((run / "eval.json").read_text(encoding="utf-8"))
    state = json.loads((run / "model" / "task_state.json").read_text())
    info = json.loads((run / "model" / "trainlab.json").read_text())
    assert report["family"] == "multilabel" and [row["label"] for row in report["per_label"]] == TOPICS
    assert len(state["thresholds"]) == 4 and report["thresholds"] == state["thresholds"] == list(info["thresholds"].values())

    again = evaluate_run(str(run), device="cpu")
    assert again["metrics"]["micro_f1"] == pytest.approx(report["metrics"]["micro_f1"]) and again["thresholds"] == state["thresholds"]
    _, task, ctx = trained_task(RunDir(run), "cpu")
    examples = (report["misclassified"] + report["correct_examples"])[:6]
    predictions = task.load_predictor(run / "model", ctx.device)([e["example"] for e in examples], 5)
    thresholds = dict(zip(TOPICS, state["thresholds"]))
    for example, prediction in zip(examples, predictions):
        assert sorted(prediction.labels) == sorted(example["predicted"])
        assert set(prediction.labels) == {label for label, p in prediction.scores if p >= thresholds[label]}


def test_a_stopped_run_resumes_to_the_same_weights(tmp_path):
    data = sample_head(tmp_path, rows=32, sample="text-multilabel")
    params = {"epochs": "2", "batch_size": "8", "device": "cpu", "seed": "5", "threshold": "auto"}
    straight = run_training(RunRequest(task="text-multilabel", data=str(data), params=params, out=str(tmp_path / "a")))
    assert straight.status == "completed"
    first = run_training(RunRequest(task="text-multilabel", data=str(data), params=params, out=str(tmp_path / "b")), callbacks=[stop_after_first_epoch()])
    assert first.status == "cancelled" and first.epochs == 1
    resumed = run_training(RunRequest(resume=str(tmp_path / "b")))
    assert resumed.status == "completed" and resumed.steps == straight.steps
    a = load_file(str(tmp_path / "a" / "checkpoints" / "last.safetensors"))
    b = load_file(str(tmp_path / "b" / "checkpoints" / "last.safetensors"))
    weights = [k for k in a if k.startswith("model.")]
    assert weights and all(torch.equal(a[k], b[k]) for k in weights)
    state_a = json.loads((tmp_path / "a" / "task_state.json").read_text())
    assert json.loads((tmp_path / "b" / "task_state.json").read_text()) == state_a


@pytest.mark.long
def test_train_and_eval_from_the_command_line(cli, tmp_path):
    run = tmp_path / "run"
    proc = cli("train", "text-multilabel", "--data", sample_head(tmp_path, rows=64, sample="text-multilabel"), "--epochs", "1", "--out", run, "--json", env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    result = last_json_line(proc)
    assert result["status"] == "completed" and set(result["metrics"]) == {"micro_f1", "macro_f1", "loss"}

    new = tmp_path / "new.jsonl"
    records = [{"text": "Heavy rain is expected tonight.", "labels": ["weather"]}, {"text": "会议改到周四下午举行。", "labels": []},
               {"text": "The striker scored. 下午有雷阵雨。", "labels": ["sports", "weather"]}]
    new.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    proc = cli("eval", run, "--data", new, "--json", env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    assert last_json_line(proc)["samples"] == 3

    # predict: the labels at or above the threshold (0.5) and every label's probability
    out_csv = tmp_path / "predictions.csv"
    proc = cli("predict", run, "Heavy rain postponed the football final.", new, "--out", out_csv, "--json", env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    predictions = last_json_line(proc)["predictions"]
    assert len(predictions) == 4
    for item in predictions:
        prediction = item["prediction"]
        assert prediction["kind"] == "label_set" and sorted(s["label"] for s in prediction["scores"]) == TOPICS
        assert set(prediction["labels"]) == {s["label"] for s in prediction["scores"] if s["probability"] >= 0.5}
    with open(out_csv, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["input", "labels", *(f"score_{name}" for name in TOPICS), "error"] and len(rows) == 5

    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text('{"text": "a poem", "labels": ["poetry"]}\n', encoding="utf-8")
    proc = cli("eval", run, "--data", unknown, "--json")
    assert proc.returncode == 2
    assert "unknown.jsonl: line 1: label 'poetry' does not occur in the trained model" in last_json_line(proc)["error"]


def test_a_pretrained_encoder_trains_its_new_head_at_head_lr(bert_folder):
    task, ctx, _ = make_task(model=str(bert_folder), max_length=32)
    task.prepare(str(SAMPLE), ctx)
    model = task.build_model(ctx)
    groups = task.parameter_groups(model, 0.01)
    head = [g for g in groups if "lr" in g]
    head_ids = {id(p) for g in head for p in g["params"]}
    assert head and all(g["lr"] == 1e-3 for g in head)
    assert head_ids == {id(p) for name, p in model.named_parameters() if name.startswith("classifier.")}
    assert sum(len(g["params"]) for g in groups) == sum(1 for p in model.parameters() if p.requires_grad)
    same, ctx, _ = make_task(model=str(bert_folder), max_length=32, head_lr="same")
    same.prepare(str(SAMPLE), ctx)
    assert all("lr" not in g for g in same.parameter_groups(model, 0.01))
    scratch, ctx, _ = make_task()  # tiny-bert from scratch: one rate for every weight
    scratch.prepare(str(SAMPLE), ctx)
    assert all("lr" not in g for g in scratch.parameter_groups(scratch.build_model(ctx), 0.01))


def test_a_run_made_before_head_lr_resumes_as_it_trained(tmp_path, bert_folder):
    """Its checkpoint holds one optimizer group per weight-decay class; head_lr=auto would add the head's."""
    data = sample_head(tmp_path, rows=32, sample="text-multilabel")
    params = {"model": str(bert_folder), "epochs": "2", "batch_size": "8", "device": "cpu", "max_length": "32", "head_lr": "same", "min_steps": "0"}
    first = run_training(RunRequest(task="text-multilabel", data=str(data), params=params, out=str(tmp_path / "old")), callbacks=[stop_after_first_epoch()])
    assert first.status == "cancelled" and first.epochs == 1
    run_json = tmp_path / "old" / "run.json"
    record = json.loads(run_json.read_text(encoding="utf-8"))
    del record["parameters"]["head_lr"], record["parameters"]["min_steps"]  # as a run made before either existed
    run_json.write_text(json.dumps(record), encoding="utf-8")
    plan = plan_run(RunRequest(resume=str(tmp_path / "old")))
    assert plan.params["head_lr"] == "same" and plan.params["min_steps"] == 0 and plan.epochs == 2
    resumed = run_training(RunRequest(resume=str(tmp_path / "old")))
    assert resumed.status == "completed", resumed.error  # its optimizer state restored
    assert resumed.epochs == 2 and resumed.steps == 2 * first.steps

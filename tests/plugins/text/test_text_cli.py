"""text-classification end to end: the real CLI in a subprocess, and the engine in-process."""

import csv
import json

import pytest
import torch
from safetensors.torch import load_file

from helpers import ONE_THREAD, TESTS, built_task, last_json_line, sample_head, stop_after_first_epoch
from trainlab.engine.scripting import RunRequest, run_training
from trainlab.runfolder.index import RunDir
from trainlab_resources import resource_path

SAMPLE = resource_path("samples", "text")
FIXTURES = TESTS / "fixtures" / "text"
LABELS = {"food", "sports", "technology", "weather"}


@pytest.mark.long
def test_train_predict_and_eval_from_the_command_line(cli, tmp_path):
    run = tmp_path / "run"
    proc = cli("train", "text-classification", "--data", SAMPLE, "--epochs", "1", "--out", run, "--json", env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    result = last_json_line(proc)
    assert result["status"] == "completed" and result["task"] == "text-classification"
    assert result["epochs"] == 1 and result["steps"] == 19  # 600 rows / batch 32
    assert {"accuracy", "macro_f1", "loss"} <= set(result["metrics"]) and result["samples_per_second"] > 0
    record = RunDir(run).read()
    assert record["parameters"]["model"] == "tiny-bert" and record["parameters"]["lr"] == pytest.approx(1e-3)
    assert record["data_summary"]["extra"]["tokens"]["train"]["examples"] == 600
    report = json.loads((run / "eval.json").read_text(encoding="utf-8"))
    assert report["samples"] == 160 and "test" in report
    sample_texts = set((SAMPLE / "val.csv").read_text(encoding="utf-8").split("\n"))
    for example in report["misclassified"][:3]:
        assert any(line.startswith(example["example"]) or example["example"] in line for line in sample_texts)
    assert (run / "model" / "model.safetensors").is_file() and (run / "model" / "tokenizer.json").is_file()

    # predict: strings, stdin and a file of texts, to a CSV
    out_csv = tmp_path / "predictions.csv"
    proc = cli(
        "predict", run, "A storm is coming tonight", "-", FIXTURES / "predict_texts.csv", "--top-k", "2", "--out", out_csv, "--json",
        input="上海队赢得了比赛\n\n", env=ONE_THREAD,
    )
    assert proc.returncode == 0, proc.stderr
    predictions = last_json_line(proc)["predictions"]
    assert [p["input"] for p in predictions] == [
        "A storm is coming tonight",
        "上海队赢得了比赛",
        "The striker scored in the last minute of the match.",
        "这款笔记本电脑的处理器速度很快。",
        "今晚有雷阵雨，出门记得带伞。",
    ]
    for item in predictions:
        assert len(item["predictions"]) == 2 and {p["label"] for p in item["predictions"]} <= LABELS
        assert item["predictions"][0]["probability"] >= item["predictions"][1]["probability"]
    with open(out_csv, encoding="utf-8") as handle:
        assert len(list(csv.reader(handle))) > 5

    # eval on new data: the whole file is evaluated, beside the run's own eval.json
    proc = cli("eval", run, "--data", FIXTURES / "eval_topics.jsonl", "--json", env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    evaluation = last_json_line(proc)
    assert evaluation["samples"] == 12 and evaluation["split"] == "val"
    # said as the data it is, not as the validation split it is read into
    assert "eval_topics.jsonl: 12 texts (" in proc.stderr and "evaluated all of " in proc.stderr
    assert "val: " not in proc.stderr and "val length" not in proc.stderr and "val on " not in proc.stderr
    assert json.loads((run / "eval.json").read_text(encoding="utf-8"))["samples"] == 160  # untouched
    # and on the run's own data: the same validation split as in training
    proc = cli("eval", run, "--json", env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    assert last_json_line(proc)["samples"] == 160
    assert "fine-tuning:" not in proc.stderr and "trainable" not in proc.stderr  # evaluating trains nothing
    # and its test split, as training reported it at the end
    proc = cli("eval", run, "--split", "test", "--json", env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    evaluation = last_json_line(proc)
    assert evaluation["split"] == "test" and evaluation["samples"] == 160 and "evaluated the test split of its own data" in proc.stderr
    assert evaluation["metrics"]["accuracy"] == pytest.approx(report["test"]["metrics"]["accuracy"])
    proc = cli("eval", run, "--split", "test", "--data", FIXTURES / "eval_topics.jsonl")
    assert proc.returncode == 2 and "--split test chooses a split of the run's own data" in proc.stderr


def test_bad_data_is_exit_2_naming_file_and_columns(cli, tmp_path):
    data = tmp_path / "reviews.csv"
    data.write_text("review,stars\ngreat,5\nawful,1\n", encoding="utf-8")
    proc = cli("train", "text-classification", "--data", data, "--json")
    assert proc.returncode == 2
    error = last_json_line(proc)["error"]
    assert "reviews.csv" in error and "'review'" in error and "text_column" in error


def test_a_model_that_is_not_here_is_exit_2_with_staging_steps(cli, tmp_path):
    proc = cli(
        "train", "text-classification", "--data", SAMPLE, "--model", "bert-base-chinese", "--json",
        env={"HF_HUB_CACHE": str(tmp_path / "no-cache")},
    )
    assert proc.returncode == 2
    error = last_json_line(proc)["error"]
    assert "not available offline" in error and "hf download bert-base-chinese" in error and "trainlab models import" in error


def test_import_a_model_folder_and_train_it_by_name(cli, tmp_path):
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from trainlab_plugins.text.models import tiny_bert_vocab_dir

    staged = tmp_path / "staged" / "mini-bert"
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_vocab_dir()))
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    BertForMaskedLM(config).save_pretrained(str(staged))
    tokenizer.save_pretrained(str(staged))

    proc = cli("models", "import", staged, "--json")
    assert proc.returncode == 0, proc.stderr
    assert last_json_line(proc)["imported"]["name"] == "mini-bert"
    listing = last_json_line(cli("models", "--json"))
    assert any(m["name"] == "mini-bert" and m["source"] == "store" for m in listing["available"])
    assert any(p["name"] == "tiny-bert" for p in listing["presets"])

    proc = cli(
        "train", "text-classification", "--data", sample_head(tmp_path), "--model", "mini-bert", "--epochs", "1",
        "--out", tmp_path / "run", "--json", env=ONE_THREAD,
    )
    assert proc.returncode == 0, proc.stderr
    record = RunDir(tmp_path / "run").read()
    assert record["parameters"]["lr"] == pytest.approx(2e-5)  # fine-tuning defaults, not the tiny-bert preset's
    saved = json.loads((tmp_path / "run" / "model" / "config.json").read_text())
    assert saved["hidden_size"] == 32 and set(saved["label2id"]) == LABELS


def test_a_stopped_run_resumes_to_the_same_weights(tmp_path, one_thread):
    data = sample_head(tmp_path, rows=32)
    params = {"epochs": "2", "batch_size": "8", "device": "cpu", "seed": "5"}
    straight = run_training(RunRequest(task="text-classification", data=str(data), params=params, out=str(tmp_path / "a")))
    assert straight.status == "completed"
    first = run_training(
        RunRequest(task="text-classification", data=str(data), params=params, out=str(tmp_path / "b")),
        callbacks=[stop_after_first_epoch()],
    )
    assert first.status == "cancelled" and first.epochs == 1
    resumed = run_training(RunRequest(resume=str(tmp_path / "b")))
    assert resumed.status == "completed" and resumed.steps == straight.steps
    a = load_file(str(tmp_path / "a" / "checkpoints" / "last.safetensors"))
    b = load_file(str(tmp_path / "b" / "checkpoints" / "last.safetensors"))
    weights = [k for k in a if k.startswith("model.")]
    assert weights and all(torch.equal(a[k], b[k]) for k in weights)



@pytest.mark.parametrize("purpose", ["train", "resume", "evaluate"])
def test_the_model_line_says_where_the_weights_come_from(purpose, tmp_path):
    import dataclasses

    task, ctx, _, logs = built_task({"epochs": "1", "batch_size": "8", "max_length": "32", "device": "cpu"}, sample_head(tmp_path, rows=16))
    ctx = dataclasses.replace(ctx, purpose=purpose, log=logs.append)
    logs.clear()
    task.prepare(str(tmp_path / "small"), ctx)
    task.build_model(ctx)
    model_line = next(line for line in logs if line.startswith("model: "))
    expected = {
        "train": "model: tiny-bert (built-in preset, trained from scratch)",
        "resume": "model: tiny-bert (built-in preset; weights from the run's checkpoint)",  # a resumed run is not from scratch
        "evaluate": "model: tiny-bert (built-in preset) with the run's trained weights",
    }[purpose]
    assert model_line == expected
    # evaluating builds the model only to load the run's weights into it: no "fine-tuning: every weight ... trainable"
    assert any(line.startswith("fine-tuning: ") for line in logs) == (purpose != "evaluate"), logs

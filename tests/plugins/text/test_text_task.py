"""The text-classification task with real torch and transformers on tiny models."""

import io
import json
import sys

import pytest
import torch

from trainlab import DataError, RunContext, UsageError
from trainlab.api.params import ENGINE_PARAMS, resolve
from trainlab_plugins.text import TEXT_CLASSIFICATION
from trainlab_plugins.text.task import TextClassificationTask
from trainlab_resources import resource_path

pytestmark = pytest.mark.usefixtures("one_thread")

SAMPLE = resource_path("samples", "text")


def make_task(**overrides):
    params = resolve(TEXT_CLASSIFICATION, ENGINE_PARAMS, {}, {"device": "cpu", **overrides})
    logs = []
    ctx = RunContext(device=torch.device("cpu"), precision="fp32", seed=0, run_dir=None, params=params, log=logs.append)
    return TextClassificationTask(TEXT_CLASSIFICATION, params), ctx, logs


def first_batch(task, split="train", size=8):
    order = task.batch_order(split, 1, size, 0)
    return task.collate([task.dataset(split)[i] for i in order[0]])


@pytest.fixture(scope="module")
def tiny_pretrained(tmp_path_factory):
    """A small 'pretrained' BERT folder (masked-LM head, no classifier), like a staged bert-base-chinese."""
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from trainlab_plugins.text.models import tiny_bert_vocab_dir

    folder = tmp_path_factory.mktemp("models") / "mini-bert"
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_vocab_dir()))
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def test_prepare_summarises_the_sample():
    task, ctx, _ = make_task()
    summary = task.prepare(str(SAMPLE), ctx)
    assert summary.label_names == ["food", "sports", "technology", "weather"]
    assert sum(summary.counts["train"].values()) == 600 and sum(summary.counts["val"].values()) == 160
    assert task.splits() == ["train", "val", "test"]
    tokens = summary.extra["tokens"]["train"]
    assert tokens["examples"] == 600 and tokens["truncated"] == 0 and 10 < tokens["mean"] < 60
    assert summary.skipped == {} and summary.warnings == []
    assert task.label_counts() == [summary.counts["train"][n] for n in summary.label_names]


def test_truncation_is_counted_and_warned(tmp_path):
    task, ctx, _ = make_task(max_length=12)
    summary = task.prepare(str(SAMPLE), ctx)
    stats = summary.extra["tokens"]["train"]
    assert stats["truncated"] > 300 and stats["max"] > 12
    assert max(task.dataset("train").lengths) == 12  # the ids themselves are cut
    assert any("truncated" in w and "max_length" in w for w in summary.warnings)


def test_imbalance_skips_and_overlap_are_reported(tmp_path):
    rows = ["text,label"] + [f"common text {i},big" for i in range(60)] + [f"rare text {i},small" for i in range(6)] + [",big", "no label,"]
    (tmp_path / "train.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "val.csv").write_text("text,label\ncommon text 1,big\nrare text 99,small\n", encoding="utf-8")
    task, ctx, _ = make_task()
    summary = task.prepare(str(tmp_path), ctx)
    assert summary.counts["train"] == {"big": 60, "small": 6}
    assert summary.skipped == {"empty text": 1, "no label": 1}
    assert any("imbalanced" in w and "class_weighting" in w for w in summary.warnings)
    assert any("1 val texts also appear in training" in w for w in summary.warnings)


def test_one_label_is_not_a_classification(tmp_path):
    (tmp_path / "one.csv").write_text("text,label\na,x\nb,x\nc,x\n", encoding="utf-8")
    task, ctx, _ = make_task()
    with pytest.raises(DataError, match="at least two labels"):
        task.prepare(str(tmp_path / "one.csv"), ctx)


def test_tiny_bert_learns_a_batch():
    task, ctx, _ = make_task()
    task.prepare(str(SAMPLE), ctx)
    torch.manual_seed(0)
    model = task.build_model(ctx)
    assert model.config.num_labels == 4 and model.config.id2label[1] == "sports"
    batch = task.to_device(first_batch(task, size=16), ctx)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    losses = []
    for _ in range(20):
        loss, n = task.train_step(model, batch, ctx)
        assert n == 16
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.5 * losses[0]
    model.eval()
    with torch.no_grad():
        out = task.eval_step(model, batch, ctx)
    assert out.logits.shape == (16, 4) and list(out.keys) == batch["keys"]
    described = task.describe_examples("train", out.keys[:2])
    assert described[0] == task.data.splits["train"].texts[out.keys[0]]


def test_save_model_loads_in_plain_transformers_and_pipeline(tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

    task, ctx, _ = make_task()
    task.prepare(str(SAMPLE), ctx)
    torch.manual_seed(0)
    model = task.build_model(ctx).eval()
    out_dir = tmp_path / "model"
    task.save_model(model, out_dir, ctx)
    assert (out_dir / "model.safetensors").is_file() and not (out_dir / "pytorch_model.bin").exists()
    assert json.loads((out_dir / "trainlab.json").read_text())["label_names"] == task.label_names

    loaded = AutoModelForSequenceClassification.from_pretrained(str(out_dir), local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(out_dir), local_files_only=True)
    assert loaded.config.label2id == {"food": 0, "sports": 1, "technology": 2, "weather": 3}
    texts = ["Heavy rain is expected in the north.", "上海队以3:0战胜对手", "这款 GPU 的性能很强"]
    enc = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        assert torch.allclose(loaded(**enc).logits, model(**enc).logits, atol=1e-5)

    classify = pipeline("text-classification", model=str(out_dir))
    results = classify(texts)
    assert [r["label"] for r in results] == [task.label_names[i] for i in model(**enc).logits.argmax(-1).tolist()]

    predictor = task.load_predictor(out_dir, "cpu")
    top = predictor(texts, 2)
    assert [row[0][0] for row in top] == [r["label"] for r in results]
    assert all(len(row) == 2 and row[0][1] >= row[1][1] for row in top)
    assert abs(top[0][0][1] - results[0]["score"]) < 1e-4


def test_saving_again_replaces_the_model_folder(tmp_path):
    task, ctx, _ = make_task()
    task.prepare(str(SAMPLE), ctx)
    model = task.build_model(ctx)
    out_dir = tmp_path / "model"
    task.save_model(model, out_dir, ctx)
    (out_dir / "stale.txt").write_text("old")
    task.save_model(model, out_dir, ctx)
    assert not (out_dir / "stale.txt").exists() and (out_dir / "config.json").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["model"]  # no temporary folders left behind


def test_a_local_pretrained_folder_gets_a_new_head(tiny_pretrained):
    task, ctx, logs = make_task(model=str(tiny_pretrained), max_length=64)
    task.prepare(str(SAMPLE), ctx)
    model = task.build_model(ctx)
    assert type(model).__name__ == "BertForSequenceClassification" and model.config.num_labels == 4
    assert any("new weights" in line and "classifier" in line for line in logs)
    loss, _ = task.train_step(model, first_batch(task), ctx)
    loss.backward()
    assert model.classifier.weight.grad is not None


def test_max_length_beyond_the_models_positions_is_a_usage_error(tiny_pretrained):
    task, ctx, _ = make_task(model=str(tiny_pretrained), max_length=128)
    with pytest.raises(UsageError, match=r"max_length 128 .* \(64 tokens\)"):
        task.prepare(str(SAMPLE), ctx)


def test_a_folder_without_a_model_says_what_is_missing(tmp_path):
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text('{"model_type": "bert"}')
    task, ctx, _ = make_task(model=str(tmp_path / "half"))
    with pytest.raises(UsageError) as err:
        task.prepare(str(SAMPLE), ctx)
    assert "tokenizer" in str(err.value) and "weights" in str(err.value) and "config.json" not in str(err.value).split("missing")[1]


def test_a_model_name_not_on_this_machine_explains_staging(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    task, ctx, _ = make_task(model="bert-base-chinese")
    with pytest.raises(UsageError) as err:
        task.prepare(str(SAMPLE), ctx)
    message = str(err.value)
    assert "'bert-base-chinese' is not available offline" in message
    assert "hf download bert-base-chinese --local-dir bert-base-chinese" in message
    assert "trainlab models import bert-base-chinese" in message


def test_text_pairs_carry_segment_ids(tmp_path):
    rows = ["question,answer,label"] + [f"is {i} even?,{'yes' if i % 2 == 0 else 'no'},{'ok' if i % 2 == 0 else 'bad'}" for i in range(20)]
    (tmp_path / "pairs.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    task, ctx, _ = make_task(text_column="question", text_pair_column="answer")
    task.prepare(str(tmp_path / "pairs.csv"), ctx)
    batch = first_batch(task)
    assert "token_type_ids" in batch and batch["token_type_ids"].max() == 1
    model = task.build_model(ctx)
    logits, targets = task.forward(model, batch)
    assert logits.shape == (len(targets), 2)
    assert " [SEP] " in task.describe_examples("train", [0])[0]


def test_expand_inputs_reads_strings_files_and_stdin(tmp_path, monkeypatch):
    task, _, _ = make_task()
    texts_csv = tmp_path / "texts.csv"
    texts_csv.write_text("text,label\n第一条,a\nsecond one,b\n", encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.StringIO("from stdin\n\n另一行\r\n"))
    items = task.expand_inputs(["just a sentence", str(texts_csv), "-"])
    assert items == ["just a sentence", "第一条", "second one", "from stdin", "另一行"]
    with pytest.raises(DataError, match=r"missing\.csv: no such file"):
        task.expand_inputs([str(tmp_path / "missing.csv")])
    with pytest.raises(UsageError):
        task.expand_inputs(["   "])


def test_a_head_for_other_labels_is_replaced(tmp_path):
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from trainlab_plugins.text.models import tiny_bert_vocab_dir

    folder = tmp_path / "three-way"
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_vocab_dir()))
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, num_labels=3)
    BertForSequenceClassification(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    task, ctx, logs = make_task(model=str(folder))
    task.prepare(str(SAMPLE), ctx)
    model = task.build_model(ctx)
    assert model.classifier.out_features == 4 and model.config.id2label[3] == "weather"
    assert any("new weights" in line and "classifier.weight" in line for line in logs)

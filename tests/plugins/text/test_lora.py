"""finetune=lora/head/qlora on tiny random models built from configs: what trains, what is saved, what loads.

A BERT and a Qwen2-style decoder of two layers, made here, stand in for a
staged bert-base-chinese and a Qwen2.5 folder (random weights; nothing is
downloaded).  The decoder's tokenizer has no pad token, as Qwen's and
Llama's have none.
"""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

from helpers import ONE_THREAD, built_task, lora_params, make_bert_folder, sample_head, stop_after_first_epoch
from trainlab.engine.scripting import RunRequest, evaluate_run, predict, run_training
from trainlab_resources import resource_path

pytestmark = pytest.mark.usefixtures("one_thread")


def test_lora_trains_only_the_adapters_and_the_head(bert_folder, tmp_path):
    task, ctx, model, logs = built_task(lora_params(bert_folder), sample_head(tmp_path, rows=40))
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    # the folder has a masked-LM head and no pooler: the pooler starts random, so it is saved with the head
    saved = (".classifier.modules_to_save.", ".pooler.dense.modules_to_save.")
    assert trainable and all("lora_" in name or any(s in name for s in saved) for name in trainable), sorted(trainable)
    assert any(".classifier.modules_to_save." in name for name in trainable), "the head is trained and saved"
    adapters = {name.split(".lora_")[0].rsplit(".", 1)[-1] for name in trainable if "lora_" in name}
    assert adapters == {"query", "key", "value"}
    count = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    assert count < 0.2 * total
    assert any(f"{count:,} of" in line for line in logs), logs


def test_a_lora_run_writes_a_merged_model_and_adapters_both_loadable_without_trainlab(bert_folder, tmp_path):
    run = tmp_path / "run"
    outcome = run_training(RunRequest(task="text-classification", data=str(sample_head(tmp_path, rows=40)), params=lora_params(bert_folder), out=str(run)))
    assert outcome.status == "completed", outcome.error
    record = json.loads((run / "run.json").read_text())
    assert record["data_summary"]["extra"]["finetune"]["mode"] == "lora"
    assert record["data_summary"]["extra"]["base_model"]["path"] == str(bert_folder.resolve())
    outputs = record["data_summary"]["extra"]["finetune"]["outputs"]
    assert outputs["merged_model"] is True and outputs["merged_model_bytes"] > 0

    from peft import PeftModel
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    merged = AutoModelForSequenceClassification.from_pretrained(str(run / "model")).eval()
    # plain PEFT: the base folder adapter_config.json names, with the run's config saved beside the adapters
    # (labels, pad token: the base folder's own config has neither)
    base_path = json.loads((run / "adapter" / "adapter_config.json").read_text())["base_model_name_or_path"]
    base = AutoModelForSequenceClassification.from_pretrained(base_path, config=AutoConfig.from_pretrained(str(run / "adapter")))
    adapted = PeftModel.from_pretrained(base, str(run / "adapter")).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(run / "model"))
    batch = tokenizer(["这个手机很好用", "terrible battery life"], padding=True, return_tensors="pt")
    with torch.no_grad():
        a, b = merged(**batch).logits, adapted(**batch).logits
    assert torch.allclose(a, b, atol=1e-5), (a, b)
    # the head came back trained, not random: the same as in the run's best checkpoint
    best = load_file(str(run / "checkpoints" / "best.safetensors"))
    head = [k for k in best if k.endswith("classifier.modules_to_save.default.weight")]
    assert head and torch.equal(best[head[0]], merged.classifier.weight)

    items = predict(str(run), ["这个手机很好用"])
    assert items[0].prediction is not None
    assert evaluate_run(str(run))["samples"] > 0


def test_lora_adapters_that_never_trained_fail_the_run(bert_folder, tmp_path):
    outcome = run_training(RunRequest(task="text-classification", data=str(sample_head(tmp_path, rows=40)), params=lora_params(bert_folder, lr="0"), out=str(tmp_path / "r")))
    assert outcome.status == "failed" and "lora_B" in outcome.error


def test_head_trains_only_the_classifier(bert_folder, tmp_path):
    _, _, model, _ = built_task(lora_params(bert_folder, finetune="head"), sample_head(tmp_path, rows=40))
    trainable = {name.split(".", 1)[0] for name, p in model.named_parameters() if p.requires_grad}
    assert trainable == {"classifier"}


def test_gradient_checkpointing_still_gives_the_adapters_gradients(bert_folder, tmp_path):
    task, ctx, model, logs = built_task(lora_params(bert_folder, gradient_checkpointing="on"), sample_head(tmp_path, rows=40))
    assert model.base_model.model.is_activation_checkpointing and "gradient checkpointing on" in logs[-1]
    order = task.batch_order("train", 1, 8, 0)
    batch = task.collate([task.dataset("train")[i] for i in order[0]])
    model.train()
    loss, _ = task.train_step(model, batch, ctx)
    loss.backward()
    grads = [p.grad for name, p in model.named_parameters() if "lora_B" in name]
    assert grads and all(g is not None and g.abs().sum() > 0 for g in grads)


def test_a_stopped_lora_run_resumes_to_the_same_adapters(bert_folder, tmp_path):
    data = sample_head(tmp_path, rows=40)
    params = lora_params(bert_folder, epochs="2")
    straight = run_training(RunRequest(task="text-classification", data=str(data), params=params, out=str(tmp_path / "a")))
    first = run_training(RunRequest(task="text-classification", data=str(data), params=params, out=str(tmp_path / "b")), callbacks=[stop_after_first_epoch()])
    assert straight.status == "completed" and first.status == "cancelled"
    resumed = run_training(RunRequest(resume=str(tmp_path / "b")))
    assert resumed.status == "completed" and resumed.steps == straight.steps
    a = load_file(str(tmp_path / "a" / "adapter" / "adapter_model.safetensors"))
    b = load_file(str(tmp_path / "b" / "adapter" / "adapter_model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    more = run_training(RunRequest(resume=str(tmp_path / "b"), more_epochs=1))
    assert more.status == "completed" and more.epochs == 3


@pytest.mark.long
def test_adapters_only_runs_predict_and_catch_a_changed_base_folder(cli, tmp_path):
    base = make_bert_folder(tmp_path / "base")
    run = tmp_path / "run"
    params = lora_params(base, merged_model="never")
    proc = cli("train", "text-classification", "--data", sample_head(tmp_path, rows=40), "--out", run, "--json",
               *[a for k, v in params.items() for a in ("--set", f"{k}={v}")], env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    assert "LoRA outputs: adapters only" in proc.stderr  # said before training starts
    assert not list((run / "model").glob("*.safetensors")) and (run / "adapter" / "adapter_model.safetensors").is_file()
    info = json.loads((run / "model" / "trainlab.json").read_text())
    assert info["adapters_only"] is True and info["base_model"] == str(base.resolve())
    proc = cli("predict", run, "这个手机很好用", "--json", env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    # the base folder now holds other weights: the adapters must not be applied to them
    shutil.rmtree(base)
    make_bert_folder(base, seed=1)
    proc = cli("predict", run, "这个手机很好用", "--json", env=ONE_THREAD)
    assert proc.returncode == 2 and str(base.resolve()) in proc.stderr and "changed" in proc.stderr


@pytest.mark.long
def test_unsupported_finetune_values_are_usage_errors(cli, tmp_path, bert_folder):
    images = resource_path("samples", "images") if resource_path("samples", "images").exists() else tmp_path
    proc = cli("train", "image-classification", "--data", images, "--set", "finetune=lora", "--json")
    assert proc.returncode == 2 and "finetune" in proc.stderr and "full, head" in proc.stderr
    data = sample_head(tmp_path, rows=40)
    proc = cli("train", "text-classification", "--data", data, "--set", "finetune=lora", "--json")
    assert proc.returncode == 2 and "tiny-bert is trained from scratch" in proc.stderr
    proc = cli("train", "text-classification", "--data", data, "--model", bert_folder, "--device", "cpu", "--set", "finetune=qlora", "--set", "max_length=32", "--json")
    assert proc.returncode == 2 and "finetune=qlora" in proc.stderr and "CUDA" in proc.stderr
    proc = cli("train", "text-classification", "--data", data, "--device", "cpu", "--set", "optimizer=adamw8bit", "--json")
    assert proc.returncode == 2 and "adamw8bit" in proc.stderr and "CUDA" in proc.stderr


# -- decoder LLMs as sequence classifiers -------------------------------------------
@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_a_decoder_scores_a_padded_batch_as_each_text_alone(arch, qwen_folder, llama_folder, tmp_path):
    from transformers import AutoTokenizer

    folder = qwen_folder if arch == "qwen2" else llama_folder
    assert (AutoTokenizer.from_pretrained(str(folder)).pad_token is None) == (arch == "llama")
    task, ctx, model, _ = built_task({"model": str(folder), "finetune": "full", "device": "cpu", "max_length": "32"}, sample_head(tmp_path, rows=40))
    tokenizer = task.tokenizer
    # pad == eos, whether the tokenizer came so (Qwen) or TrainLab chose it (Llama: none)
    assert tokenizer.pad_token == tokenizer.eos_token and model.config.pad_token_id == tokenizer.eos_token_id
    model.eval()
    texts = ["好", "这个手机的电池很耐用 great", "terrible, never again"]
    with torch.no_grad():
        alone = torch.cat([model(**tokenizer([t], return_tensors="pt")).logits for t in texts])
        for side in ("right", "left"):
            tokenizer.padding_side = side
            batched = model(**tokenizer(texts, padding=True, return_tensors="pt")).logits
            assert torch.allclose(batched, alone, atol=1e-5), (side, batched, alone)
    # and through the task's own batches (its collator pads), as training and evaluation see them
    order = task.batch_order("val", 0, 4, 0)[0]
    batch = task.collate([task.dataset("val")[i] for i in order])
    with torch.no_grad():
        padded, _ = task.forward(model, batch)
        for row, i in enumerate(order):
            single = task.collate([task.dataset("val")[i]])
            assert torch.allclose(task.forward(model, single)[0][0], padded[row], atol=1e-5)


def test_a_decoder_trains_with_lora_on_its_projections_and_score_head(qwen_folder, tmp_path):
    task, ctx, model, _ = built_task(lora_params(qwen_folder), sample_head(tmp_path, rows=40))
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert any(".score.modules_to_save." in n for n in trainable)
    adapted = {n.split(".lora_")[0].rsplit(".", 1)[-1] for n in trainable if "lora_" in n}
    assert adapted == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    run = tmp_path / "run"
    outcome = run_training(RunRequest(task="text-classification", data=str(sample_head(tmp_path, rows=40)), params=lora_params(qwen_folder), out=str(run)))
    assert outcome.status == "completed", outcome.error
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    merged = AutoModelForSequenceClassification.from_pretrained(str(run / "model"))
    tokenizer = AutoTokenizer.from_pretrained(str(run / "model"))
    assert tokenizer.pad_token is not None and merged.config.pad_token_id == tokenizer.pad_token_id
    assert predict(str(run), ["电池很耐用", "never again"])[1].prediction is not None


def test_size_classes_choose_the_fine_tune(qwen_folder, tmp_path):
    from trainlab import resolve_finetune, size_class

    assert resolve_finetune("auto", 110_000_000, cuda=True) == "full"
    assert resolve_finetune("auto", 1_500_000_000, cuda=True) == "lora"
    assert resolve_finetune("auto", 7_600_000_000, cuda=False) == "lora"  # no 4-bit on a CPU
    assert size_class(3_000_000_000).gradient_checkpointing
    task, _, _, _ = built_task({"model": str(qwen_folder), "device": "cpu"}, sample_head(tmp_path, rows=40))
    plan = task.finetune.to_json()
    assert plan["mode"] == "full" and plan["size_class"].startswith("small") and 0 < plan["parameters"] < 10_000_000

"""The memory estimate: exact static bytes, a probe that extrapolates, `train --dry-run`, micro_batch_size."""

from __future__ import annotations

import json

import pytest
import torch

from helpers import ONE_THREAD, built_task, lora_params, sample_head
from trainlab.engine.plan import RunRequest, plan_run
from trainlab.engine.memory import estimate_memory, fit_activations, meta_model, probe_batch, saved_activation_bytes, static_bytes

pytestmark = pytest.mark.usefixtures("one_thread")


def real_bytes(task, model, ctx):
    """Weights, gradients and AdamW states as the engine's optimizer holds them after one real step."""
    weights = {id(t): t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()]}
    optimizer = torch.optim.AdamW(task.parameter_groups(model, 0.01), lr=1e-3)
    model.train()
    loss, _ = task.train_step(model, probe_batch(task, 2), ctx)
    loss.backward()
    grads = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters() if p.grad is not None)
    optimizer.step()
    states = sum(v.numel() * v.element_size() for s in optimizer.state.values() for v in s.values() if torch.is_tensor(v))
    return sum(weights.values()), grads, states


@pytest.mark.parametrize("finetune", ["full", "lora", "head"])
def test_weight_gradient_and_optimizer_bytes_are_exact(finetune, bert_folder, tmp_path):
    task, ctx, model, _ = built_task(lora_params(bert_folder, finetune=finetune), sample_head(tmp_path, rows=40))
    estimate = static_bytes(meta_model(task, ctx))
    assert next(meta_model(task, ctx).parameters()).device.type == "meta"
    weights, grads, states = real_bytes(task, model, ctx)
    assert (estimate.weights, estimate.gradients, estimate.optimizer) == (weights, grads, states)
    if finetune != "full":
        assert estimate.gradients < 0.5 * estimate.weights


@pytest.mark.parametrize("arch", ["bert", "qwen2"])
def test_the_probe_predicts_the_activations_autograd_saves_at_a_third_batch_size(arch, bert_folder, qwen_folder, tmp_path):
    folder = bert_folder if arch == "bert" else qwen_folder
    task, ctx, model, _ = built_task(lora_params(folder, max_length="64"), sample_head(tmp_path, rows=40))
    fit = fit_activations(task, model, ctx, (1, 2))
    third = 6
    actual = saved_activation_bytes(task, model, ctx, probe_batch(task, third))
    assert actual > 0 and abs(fit.at(third) - actual) <= 0.2 * actual, (fit, actual)


def dry_run(cli, *args):
    proc = cli("train", "text-classification", *map(str, args), "--dry-run", "--json", env=ONE_THREAD)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc


@pytest.mark.long
def test_dry_run_prints_the_plan_and_estimate_and_trains_nothing(cli, bert_folder, tmp_path):
    data = sample_head(tmp_path, rows=40)
    run = tmp_path / "run"
    args = ["--data", data, "--model", bert_folder, "--device", "cpu", "--out", run, "--set", "max_length=32", "--set", "finetune=lora"]
    result, proc = dry_run(cli, *args)
    assert not run.exists()
    assert result["dry_run"] is True and result["finetune"]["mode"] == "lora" and result["effective_batch"] == 32
    memory = result["memory"]
    assert memory["kind"] == "ram" and memory["capacity"] > 0 and memory["micro_batch"] == 32
    assert memory["total"] == sum(memory[k] for k in ("weights", "gradients", "optimizer", "activations", "other"))
    assert 0 < memory["gradients"] < memory["weights"] and memory["activations"] > 0
    assert memory["probe"]["cached"] is False and "needs about" in proc.stderr
    again, _ = dry_run(cli, *args, "--epochs", "9")  # epochs shape nothing: the probe is reused
    assert again["memory"]["probe"]["cached"] is True and again["memory"]["activations"] == memory["activations"]


@pytest.mark.long
def test_micro_batch_size_splits_the_batch_and_keeps_the_effective_batch(cli, bert_folder, tmp_path):
    data = sample_head(tmp_path, rows=40)
    base = ["--data", data, "--model", bert_folder, "--device", "cpu", "--batch-size", "8", "--set", "max_length=32"]
    result, _ = dry_run(cli, *base, "--set", "micro_batch_size=3")
    assert result["micro_batch"] == 3 and result["effective_batch"] == 8 and result["memory"]["micro_batch"] == 3
    result, proc = dry_run(cli, *base, "--set", "micro_batch_size=auto")
    assert 1 <= result["micro_batch"] <= 8 and "memory estimate: needs about" in proc.stderr
    proc = cli("train", "text-classification", *map(str, base), "--set", "micro_batch_size=half", "--json")
    assert proc.returncode == 2 and "micro_batch_size" in proc.stderr


def test_a_run_in_micro_batches_trains_the_same_steps(bert_folder, tmp_path):
    from trainlab.engine.execute import execute

    data = sample_head(tmp_path, rows=40)
    params = lora_params(bert_folder, micro_batch_size="4")
    plan = plan_run(RunRequest(task="text-classification", data=str(data), params=params, out=str(tmp_path / "r")))
    assert plan.position.micro_splits == 2
    whole = plan_run(RunRequest(task="text-classification", data=str(data), params=lora_params(bert_folder), out=str(tmp_path / "w")))
    assert plan.total_steps == whole.total_steps
    assert execute(plan).status == "completed"


def test_the_estimate_of_a_plan_in_process(bert_folder, tmp_path):
    plan = plan_run(RunRequest(task="text-classification", data=str(sample_head(tmp_path, rows=40)), params=lora_params(bert_folder), out=str(tmp_path / "r")))
    estimate = estimate_memory(plan)
    assert estimate.fits and estimate.summary_line().startswith("needs about ") and "RAM" in estimate.summary_line()
    assert estimate.trainable < estimate.parameters

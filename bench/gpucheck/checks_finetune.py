"""Fine-tuning bigger models on CUDA: LoRA, QLoRA, 8-bit AdamW, and the memory estimate against the measured peak.

The models are built here from configs (random weights) and given to the
text task as pretrained folders.  bitsandbytes is not among the GPU
machine's packages: QLoRA and 8-bit AdamW then check that TrainLab refuses
them with exit-2 errors naming the package, and are reported skipped.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from gpucheck.common import CheckEnv, Outcome, Skipped, env_threads, free_cuda

ESTIMATE_WITHIN = 0.15  # the goal: the estimate within this share of the measured peak


def make_decoder_folder(folder: Path, hidden: int, layers: int, heads: int, kv_heads: int, intermediate: int, vocab: int = 0) -> Path:
    """A Qwen2 folder (random weights, bf16 on disk as Qwen ships) with the tiny-bert vocabulary as its tokenizer."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from trainlab_resources import resource_path

    tokenizer = AutoTokenizer.from_pretrained(str(resource_path("vocab", "tiny-bert")))
    config = Qwen2Config(
        vocab_size=max(vocab, len(tokenizer)), hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=1024, tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    del model
    free_cuda()
    return folder


def _texts(env: CheckEnv) -> Path:
    from gpucheck.data import make_texts

    return make_texts(env.work / "texts", train_rows=env.pick(256, 32), val_rows=32, min_words=env.pick(40, 4), max_words=env.pick(200, 16))


def _measured_run(env: CheckEnv, data: Path, params: dict[str, Any], out_dir: Path) -> tuple[Any, Any, int]:
    """(estimate, outcome, the allocator's peak during the run) for one run of the text task."""
    from trainlab.engine.execute import execute
    from trainlab.engine.plan import RunRequest, plan_run
    from trainlab.engine.memory import estimate_memory

    plan = plan_run(RunRequest(task="text-classification", data=str(data), params=params, out=str(out_dir)))
    estimate = estimate_memory(plan, use_cache=False)
    peak = 0
    if env.cuda:
        import torch

        free_cuda()
        torch.cuda.reset_peak_memory_stats()
    outcome = execute(plan)
    if env.cuda:
        import torch

        peak = int(torch.cuda.max_memory_allocated())
    return estimate, outcome, peak


def _compare(out: Outcome, name: str, estimate: Any, peak: int, cuda: bool) -> None:
    out.fact(f"{name}_estimate", estimate.to_json())
    if not cuda:
        return
    # the allocator's peak excludes the CUDA context: compare like with like
    estimated = estimate.total - estimate.other
    out.figure(f"{name}_estimated_gib", estimated / 2**30)
    out.figure(f"{name}_measured_peak_gib", peak / 2**30)
    out.goal(f"{name}_estimate_error", abs(estimated - peak) / max(peak, 1), at_most=ESTIMATE_WITHIN)


def check_lora(env: CheckEnv, out: Outcome) -> None:
    """A LoRA fine-tune of a BERT-base-sized model on CUDA: adapters and merged model saved and loadable; estimate vs peak."""
    from gpucheck.data import BERT_BASE, BERT_TINY, make_bert_folder

    env_threads()
    if importlib.util.find_spec("peft") is None:
        out.expect("peft is installed (bench/gpu_bundle.sh carries its wheel)", False)
        return
    model = make_bert_folder(env.work / "bert", env.pick(BERT_BASE, BERT_TINY), max_positions=512)
    data = _texts(env)
    base = {"model": str(model), "max_length": env.pick(256, 32), "batch_size": env.pick(32, 8), "epochs": 1, "lr": 1e-3,
            "device": env.device, "log_interval": 0.0}  # fmt: skip
    for mode in ("full", "lora"):
        estimate, outcome, peak = _measured_run(env, data, {**base, "finetune": mode}, env.work / f"run-{mode}")
        out.expect(f"{mode}: run completed", outcome.status == "completed", outcome.error)
        _compare(out, mode, estimate, peak, env.cuda)
        free_cuda()
    run = env.work / "run-lora"
    from transformers import AutoModelForSequenceClassification

    out.expect("adapter/ holds the PEFT adapters", (run / "adapter" / "adapter_model.safetensors").is_file())
    merged = AutoModelForSequenceClassification.from_pretrained(str(run / "model"))
    out.expect("model/ is the merged model, loadable by plain transformers", merged.num_labels >= 2)


def check_lora_decoder_fits_24gb(env: CheckEnv, out: Outcome) -> None:
    """A 1.5B Qwen2-shaped decoder with LoRA and checkpointing at sequence length 512: its estimate and its peak under 24 GB."""
    env_threads()
    if importlib.util.find_spec("peft") is None:
        out.expect("peft is installed (bench/gpu_bundle.sh carries its wheel)", False)
        return
    # Qwen2.5-1.5B's shape; the dry run a two-layer miniature
    shape = env.pick(dict(hidden=1536, layers=28, heads=12, kv_heads=2, intermediate=8960, vocab=151936),
                     dict(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128))  # fmt: skip
    model = make_decoder_folder(env.work / "qwen2-1.5b", **shape)
    data = _texts(env)
    params = {"model": str(model), "finetune": "lora", "gradient_checkpointing": "on", "max_length": env.pick(512, 32),
              "batch_size": env.pick(8, 4), "epochs": 1, "device": env.device, "precision": "auto"}  # fmt: skip
    estimate, outcome, peak = _measured_run(env, data, params, env.work / "run")
    out.expect("run completed", outcome.status == "completed", outcome.error)
    out.fact("parameters", estimate.parameters)
    _compare(out, "lora_1p5b", estimate, peak, env.cuda)
    if env.cuda:
        out.goal("lora_1p5b_peak_gib", peak / 2**30, at_most=24.0)
        out.goal("lora_1p5b_estimated_total_gib", estimate.total / 2**30, at_most=24.0)


def _refused_without_bitsandbytes(env: CheckEnv, out: Outcome, params: dict[str, Any], what: str) -> None:
    from trainlab.api.errors import UsageError
    from trainlab.engine.plan import RunRequest, plan_run

    try:
        plan_run(RunRequest(task="text-classification", data=str(_texts(env)), params=params, out=str(env.work / "refused")))
        out.expect(f"{what} refused without bitsandbytes/CUDA", False, "planned without complaint")
    except UsageError as exc:
        wanted = "bitsandbytes" if env.cuda else "CUDA"
        out.expect(f"{what} refused with exit 2 naming {wanted}", wanted in str(exc), str(exc))


def check_qlora(env: CheckEnv, out: Outcome) -> None:
    """A QLoRA fine-tune (4-bit base weights) of a small decoder on CUDA; adapters only in the run folder."""
    env_threads()
    model = make_decoder_folder(env.work / "qwen2", **env.pick(dict(hidden=896, layers=8, heads=14, kv_heads=2, intermediate=4864),
                                                           dict(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128)))  # fmt: skip
    params = {"model": str(model), "finetune": "qlora", "max_length": 64, "batch_size": 8, "epochs": 1, "device": env.device, "lr": 1e-3}
    if not env.cuda or importlib.util.find_spec("bitsandbytes") is None:
        _refused_without_bitsandbytes(env, out, params, "finetune=qlora")
        if env.cuda and not out.failed:
            raise Skipped("bitsandbytes is not installed here (pip install 'trainlab[qlora]'); TrainLab refused it with exit 2")
        return
    from trainlab.engine.scripting import RunRequest, run_training

    outcome = run_training(RunRequest(task="text-classification", data=str(_texts(env)), params=params, out=str(env.work / "run")))
    out.expect("run completed", outcome.status == "completed", outcome.error)
    run = env.work / "run"
    out.expect("adapters only: model/ names the base model", not list((run / "model").glob("*.safetensors")))
    out.expect("adapter/ saved", (run / "adapter" / "adapter_model.safetensors").is_file())


def check_adamw8bit(env: CheckEnv, out: Outcome) -> None:
    """optimizer=adamw8bit on a full fine-tune of a small BERT on CUDA."""
    from gpucheck.data import BERT_TINY, make_bert_folder

    env_threads()
    model = make_bert_folder(env.work / "bert", BERT_TINY, max_positions=128)
    params = {"model": str(model), "finetune": "full", "optimizer": "adamw8bit", "max_length": 64, "batch_size": 8, "epochs": 1,
              "device": env.device, "lr": 1e-3}  # fmt: skip
    if not env.cuda or importlib.util.find_spec("bitsandbytes") is None:
        _refused_without_bitsandbytes(env, out, params, "optimizer=adamw8bit")
        if env.cuda and not out.failed:
            raise Skipped("bitsandbytes is not installed here (pip install 'trainlab[qlora]'); TrainLab refused it with exit 2")
        return
    estimate, outcome, peak = _measured_run(env, _texts(env), params, env.work / "run")
    out.expect("run completed", outcome.status == "completed", outcome.error)
    _compare(out, "adamw8bit", estimate, peak, env.cuda)

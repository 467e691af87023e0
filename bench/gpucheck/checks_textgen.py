"""text-generation on CUDA: QLoRA on a 0.5B decoder against the memory model, the attention kernels, fused losses.

The decoders are built here from Qwen2 configs (random weights, the bundled
tiny-chat tokenizer and chat template: no token is added, so no embedding
trains in full) and given to the task as pretrained folders.  Expected
figures, from the analytic SFT memory model (``trainlab_plugins/textgen/memory.py``):
QLoRA on Qwen2.5-0.5B's shape, rank 8, batch 4 x 1024 tokens, checkpointing,
bf16: about 3.15 GiB (LoRA on the bf16 base, where bitsandbytes is missing:
about 3.18 GiB), two thirds of it the loss's logits-sized buffers (1024 x
151,936 x 14 bytes); the allocator's peak within 15 % of it.
FlashAttention-2, Liger and Cut Cross-Entropy are not among the GPU
machine's packages unless bench/gpu_bundle.sh carried them: their checks
then say so (skipped).
"""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path
from typing import Any

from gpucheck.common import (
    CheckEnv,
    Outcome,
    Skipped,
    env_threads,
    free_cuda,
    read_events,
    say,
)

ESTIMATE_WITHIN = 0.15  # the goal on a GPU: the memory model within this share of the allocator's peak
FUSED_WITHIN = 1e-5  # a fused loss against the chunked one, relative, in fp32
QWEN_0P5B = {
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "vocab_size": 151936,
}
SMALL = {
    "hidden_size": 512,
    "intermediate_size": 1408,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "vocab_size": 32000,
}
TINY = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 2048,
}


def make_chat_decoder(folder: Path, shape: dict[str, int], cuda: bool) -> Path:
    """A Qwen2 folder (random weights, bf16 on disk, tied embeddings as Qwen2.5-0.5B) with tiny-chat's tokenizer."""
    import torch
    from trainlab_resources import resource_path
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(str(resource_path("vocab", "tiny-chat")))
    config = Qwen2Config(**{**shape, "vocab_size": max(shape["vocab_size"], len(tokenizer))}, max_position_embeddings=4096,
                         tie_word_embeddings=True, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)  # fmt: skip
    torch.manual_seed(0)
    with torch.device("cuda" if cuda else "cpu"):
        model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    del model
    free_cuda()
    return folder


def _plain_texts(folder: Path, rows: int, words: int) -> Path:
    """Texts of ``words`` words from a 40-word vocabulary: cut into rows of max_length, every row full; a model learns them fast."""
    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(40)]
    folder.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", rows), ("val", 2)):
        lines = [
            json.dumps({"text": " ".join(rng.choice(vocabulary) for _ in range(words))})
            for _ in range(count)
        ]
        (folder / f"{split}.jsonl").write_text(
            "\n".join(lines) + "\n", encoding="utf-8"
        )
    return folder


def _losses(run_dir: Path) -> list[float]:
    return [
        float(e["loss"])
        for e in read_events(run_dir)
        if e.get("event") == "train" and "loss" in e
    ]


def check_textgen_qlora(env: CheckEnv, out: Outcome) -> None:
    """QLoRA on a 0.5B Qwen2-shaped decoder: the loss falls; the allocator's peak against the SFT memory model."""
    import torch
    from trainlab.engine.execute import execute
    from trainlab.engine.plan import RunRequest, plan_run

    env_threads()
    if importlib.util.find_spec("peft") is None:
        out.expect("peft is installed (bench/gpu_bundle.sh carries its wheel)", False)
        return
    qlora = env.cuda and importlib.util.find_spec("bitsandbytes") is not None
    model = make_chat_decoder(
        env.work / "qwen2-0.5b", env.pick(QWEN_0P5B, TINY), env.cuda
    )
    max_length, batch = env.pick(1024, 32), env.pick(4, 2)
    data = _plain_texts(
        env.work / "texts", rows=env.pick(16, 8), words=env.pick(3000, 100)
    )
    # the dry run trains every weight of its tiny decoder: LoRA on random weights learns too slowly to tell in a few steps
    finetune = "qlora" if qlora else "lora" if env.cuda else "full"
    params = {"model": str(model), "finetune": finetune, "gradient_checkpointing": "on", "max_length": max_length,
              "batch_size": batch, "micro_batch_size": 0, "epochs": 1, "lr": 2e-3, "schedule": "constant", "warmup_ratio": 0.0,
              "device": env.device, "precision": "auto" if env.cuda else "fp32", "eval_generations": 0, "log_interval": 0.0}  # fmt: skip
    plan = plan_run(
        RunRequest(
            task="text-generation",
            data=str(data),
            params=params,
            out=str(env.work / "run"),
        )
    )
    estimate = plan.task._memory_model(batch)
    out.fact("memory_model", estimate.to_json())
    out.fact("finetune", plan.summary.extra.get("finetune"))
    if env.cuda:
        free_cuda()
        torch.cuda.reset_peak_memory_stats()
    outcome = execute(plan)
    out.expect("run completed", outcome.status == "completed", outcome.error)
    losses = _losses(Path(outcome.run_dir))
    out.fact("train_losses", [round(x, 3) for x in losses])
    third = max(1, len(losses) // 3)
    first, last = sum(losses[:third]) / third, sum(losses[-third:]) / third
    out.expect(
        "the loss falls (the last third of the steps below the first)",
        len(losses) >= 3 and last < first,
        (round(first, 3), round(last, 3)),
    )
    if not env.cuda:
        return
    if not qlora:
        out.fact(
            "note",
            "bitsandbytes is not installed: LoRA on a bf16 base instead of QLoRA",
        )
    peak = int(torch.cuda.max_memory_allocated())
    out.figure("estimated_gib", estimate.total / 2**30)
    out.figure("measured_peak_gib", peak / 2**30)
    out.goal(
        "estimate_error",
        abs(estimate.total - peak) / max(peak, 1),
        at_most=ESTIMATE_WITHIN,
    )
    if not qlora:
        raise Skipped(
            "bitsandbytes is not installed here (pip install 'trainlab[qlora]'): LoRA on the bf16 base ran and was measured instead"
        )


def _packed_batch(vocab: int, device: Any, rows: int = 4, length: int = 256):
    """Rows of several examples each (position ids restarting at 0), every token trained."""
    import torch

    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (rows, length), generator=gen)
    positions = torch.cat(
        [torch.arange(length // 4).repeat(4).unsqueeze(0) for _ in range(rows)]
    )
    return ids.to(device), ids.clone().to(device), positions.to(device)


def _attention_ops(model: Any, batch: dict[str, Any], cuda: bool) -> list[str]:
    """The attention operators one forward and backward of ``model`` on ``batch`` ran."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        with torch.autocast(
            "cuda" if cuda else "cpu", dtype=torch.bfloat16, enabled=cuda
        ):
            loss_sum, tokens, _ = model(**batch)
        (loss_sum / tokens).backward()
    if cuda:
        torch.cuda.synchronize()
    return sorted(
        {
            e.key
            for e in prof.key_averages()
            if "attention" in e.key.lower() or "flash" in e.key.lower()
        }
    )


def check_textgen_sdpa(env: CheckEnv, out: Outcome) -> None:
    """The decoder text-generation trains attends through SDPA, and on CUDA a fused kernel runs, padded and packed."""
    import torch
    from trainlab_plugins.textgen.model import SFTModel
    from transformers import AutoConfig, AutoModelForCausalLM

    env_threads()
    folder = make_chat_decoder(env.work / "decoder", env.pick(SMALL, TINY), env.cuda)
    lm = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(str(folder))).to(
        env.device
    )
    out.expect(
        "transformers picked sdpa attention",
        lm.config._attn_implementation == "sdpa",
        lm.config._attn_implementation,
    )
    model = SFTModel(lm).train()
    ids, labels, positions = _packed_batch(
        lm.config.vocab_size, env.device, length=env.pick(256, 32)
    )
    mask = torch.ones_like(ids)
    mask[1:, ids.shape[1] // 2 :] = 0  # padding in three of the rows
    for name, batch in (("padded", {"input_ids": ids, "labels": labels, "attention_mask": mask}),
                        ("packed", {"input_ids": ids, "labels": labels, "position_ids": positions})):  # fmt: skip
        ops = _attention_ops(model, batch, env.cuda)
        model.zero_grad(set_to_none=True)
        out.fact(f"{name}_attention_ops", ops)
        out.expect(
            f"{name}: scaled_dot_product_attention was called",
            any("scaled_dot_product" in op for op in ops),
            ops,
        )
        if env.cuda:
            fused = [
                op
                for op in ops
                if any(
                    k in op for k in ("flash", "efficient_attention", "cudnn_attention")
                )
            ]
            out.expect(
                f"{name}: a fused CUDA SDPA kernel ran (flash, memory-efficient or cuDNN)",
                fused,
                ops,
            )
            out.expect(
                f"{name}: not the math fallback",
                not any("attention_math" in op for op in ops),
                ops,
            )


def check_textgen_flash_attn(env: CheckEnv, out: Outcome) -> None:
    """FlashAttention-2 where flash-attn is installed: packed rows give the SDPA path's loss, through flash's kernels."""
    import torch
    from trainlab_plugins.textgen.model import SFTModel
    from transformers import AutoConfig, AutoModelForCausalLM

    env_threads()
    installed = importlib.util.find_spec("flash_attn") is not None
    out.fact("flash_attn_installed", installed)
    if env.cuda and not installed:
        raise Skipped(
            "flash-attn is not installed here (pip install flash-attn); the SDPA path is textgen_sdpa's"
        )
    folder = make_chat_decoder(env.work / "decoder", env.pick(SMALL, TINY), env.cuda)
    config = AutoConfig.from_pretrained(str(folder))
    ids, labels, positions = _packed_batch(
        config.vocab_size, env.device, length=env.pick(256, 32)
    )
    batch = {"input_ids": ids, "labels": labels, "position_ids": positions}
    losses = {}
    for implementation in ("sdpa", "flash_attention_2" if env.cuda else "eager"):
        torch.manual_seed(0)
        lm = AutoModelForCausalLM.from_config(
            config,
            attn_implementation=implementation,
            dtype=torch.bfloat16 if env.cuda else torch.float32,
        )
        model = SFTModel(lm.to(env.device)).train()
        ops = _attention_ops(model, batch, env.cuda)
        out.fact(f"{implementation}_ops", ops)
        with torch.no_grad():
            loss_sum, tokens, _ = model(**batch)
        losses[implementation] = float(loss_sum / tokens)
        if implementation == "flash_attention_2":
            out.expect(
                "flash-attn's kernels ran",
                any("flash" in op.lower() for op in ops),
                ops,
            )
        del model, lm
        free_cuda()
    out.fact("losses", losses)
    first, second = losses.values()
    out.expect(
        "packed rows: the same loss through either attention (bf16 rounding)",
        abs(first - second) <= 2e-2 * abs(first),
        losses,
    )


def _fused_losses(hidden: Any, weight: Any, targets: Any) -> dict[str, Any]:
    """The summed cross-entropy of ``hidden @ weight.T`` by each installed fused kernel."""
    losses = {}
    if importlib.util.find_spec("liger_kernel") is not None:
        from liger_kernel.transformers.fused_linear_cross_entropy import (
            LigerFusedLinearCrossEntropyLoss,
        )

        losses["liger"] = LigerFusedLinearCrossEntropyLoss(reduction="sum")(
            weight, hidden, targets
        )
    if importlib.util.find_spec("cut_cross_entropy") is not None:
        from cut_cross_entropy import linear_cross_entropy

        losses["cut_cross_entropy"] = linear_cross_entropy(
            hidden, weight, targets, reduction="sum"
        )
    return losses


def check_textgen_fused_loss(env: CheckEnv, out: Outcome) -> None:
    """Liger's or Cut Cross-Entropy's fused linear cross-entropy, where installed, equals TrainLab's chunked loss (fp32, 1e-5)."""
    import torch
    from trainlab_plugins.textgen.model import _chunk_loss

    env_threads()
    tokens, hidden_size, vocab, chunk = env.pick(
        (4096, 896, 151936, 1024), (64, 16, 300, 16)
    )
    gen = torch.Generator().manual_seed(0)
    hidden = (
        (torch.randn(tokens, hidden_size, generator=gen) / hidden_size**0.5)
        .to(env.device)
        .requires_grad_()
    )
    weight = (
        torch.randn(vocab, hidden_size, generator=gen).to(env.device).requires_grad_()
    )
    targets = torch.randint(0, vocab, (tokens,), generator=gen).to(env.device)
    chunked = sum(
        _chunk_loss(hidden[i : i + chunk], targets[i : i + chunk], weight, None, 0.0)[0]
        for i in range(0, tokens, chunk)
    )
    plain = torch.nn.functional.cross_entropy(
        hidden @ weight.T, targets, reduction="sum"
    )
    out.expect(
        "the chunked loss is the plain one (fp32)",
        abs(float(chunked) - float(plain)) <= FUSED_WITHIN * abs(float(plain)),
        (float(chunked), float(plain)),
    )
    if not env.cuda:
        return
    (grad_chunked,) = torch.autograd.grad(chunked, hidden)
    fused = _fused_losses(hidden, weight, targets)
    out.fact("installed", sorted(fused))
    if not fused:
        raise Skipped(
            "neither liger-kernel nor cut-cross-entropy is installed here; TrainLab's chunked loss ran and equals the plain one"
        )
    for name, loss in fused.items():
        error = abs(float(loss) - float(chunked)) / abs(float(chunked))
        out.figure(f"{name}_relative_error", error)
        out.expect(
            f"{name}: the fused loss equals the chunked one within {FUSED_WITHIN:g}",
            error <= FUSED_WITHIN,
            error,
        )
        (grad,) = torch.autograd.grad(loss, hidden)
        grad_error = float((grad - grad_chunked).abs().max() / grad_chunked.abs().max())
        out.figure(f"{name}_gradient_relative_error", grad_error)
        say(f"  {name}: loss error {error:.2e}, gradient error {grad_error:.2e}")

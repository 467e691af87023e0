"""Text fine-tuning throughput: a BERT-base-sized model through the text task, bf16 against fp32.

The model folder is built here from a ``BertConfig`` (12 layers, hidden 768,
random weights, the tiny-bert vocabulary) and given to the task as a
pretrained model, the way a user's downloaded BERT is.  fp32 is the
engine's fp32 (TF32 on, as every CUDA run gets it).  Both variants time the
same optimizer steps of the same seed, so the same batches (lengths vary:
batches are grouped by length).
"""

from __future__ import annotations

from gpucheck.common import CheckEnv, Outcome, alternate, env_threads, ratios, say, spread
from gpucheck.figures_image import WINDOW_SECONDS, EngineVariant


def check_text_bf16_vs_fp32(env: CheckEnv, out: Outcome) -> None:
    """Samples/s of a BERT-base fine-tune in bf16 and in fp32, side by side."""
    import time

    from gpucheck.data import BERT_BASE, BERT_TINY, make_bert_folder, make_texts

    env_threads()
    started = time.monotonic()
    size = env.pick(BERT_BASE, BERT_TINY)
    model = make_bert_folder(env.work / "bert-base-sized", size, max_positions=512)
    batch, rows = env.pick(32, 8), env.pick(3072, 64)
    data = make_texts(env.work / "texts", train_rows=rows, val_rows=32, min_words=env.pick(10, 4), max_words=env.pick(110, 16))
    out.fact("setup", {"model": {k: v for k, v in size.items() if k != "vocab_size"}, "batch": batch, "max_length": 128,
                       "train_rows": rows, "seconds_to_make": round(time.monotonic() - started, 1)})  # fmt: skip
    warm = env.pick(5, 1)
    max_steps = rows // batch - warm - 1  # inside the first epoch
    base = {"model": str(model), "max_length": 128, "batch_size": batch, "epochs": 1, "lr": 2e-5, "schedule": "constant",
            "warmup_ratio": 0.0, "device": env.device, "seed": 0}  # fmt: skip
    bf16 = EngineVariant(env, "text-classification", data, {**base, "precision": "bf16"}, warm)
    fp32 = EngineVariant(env, "text-classification", data, {**base, "precision": "fp32"}, warm)
    variants = {"engine_bf16": bf16, "engine_fp32": fp32}
    try:
        # Warm-up round; then one step count for both, so both time the same batches.
        first = min(env.pick(8, 1), max_steps)
        rates = {}
        for name, variant in variants.items():
            variant.steps = first
            rates[name] = variant()
            say(f"  warm-up {name}: {rates[name]:,.1f} samples/s")
        steps = 2 if env.dry_run or not env.cuda else max(10, min(max_steps, round(WINDOW_SECONDS * rates["engine_bf16"] / batch)))
        bf16.steps = fp32.steps = steps
        out.fact("steps_per_measurement", steps)
        measured, rounds = alternate(env, variants, env.pick(3, 2))
    finally:
        bf16.close()
        fp32.close()
    for name, values in measured.items():
        out.figure(f"{name}_samples_per_s", spread(values)["median"])
    out.fact("rates", {k: [round(v, 1) for v in vals] for k, vals in measured.items()})
    out.fact("rounds", rounds)
    out.figure("bf16_over_fp32", spread(ratios(measured, "engine_bf16", "engine_fp32")))
    out.fact("data_summary", {k: bf16.summary.get(k) for k in ("tokens", "max_length", "length_grouping") if k in bf16.summary})
    out.expect("every variant measured in every round", all(len(v) == rounds for v in measured.values()), {k: len(v) for k, v in measured.items()})

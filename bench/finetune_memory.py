"""Peak memory and speed of a full fine-tune against LoRA, and LoRA with gradient checkpointing, on the CPU.

One BERT-base-shaped classifier (12 layers, hidden 768, vocabulary 30,522:
110M parameters, random weights, built from a config) trains the same
batches each way: batch 8, sequence length 64, fp32, AdamW, one torch
thread; 2 warm-up steps, then ``--steps`` timed ones.  LoRA is TrainLab's
own (``trainlab_plugins.text.finetune.apply_finetune``: rank 8 on query,
key and value, the head and the new pooler in ``modules_to_save``).

Each way runs in its own process, so that its peak resident memory
(``ru_maxrss``) is its own; the figure is that peak above the process's
baseline, taken after importing torch, transformers and peft and before the
model is built, with glibc's mmap threshold fixed (see ``CHILD_ENV``).
Speed is samples per CPU second of the process (on two
shared cores wall-clock rates swing with other jobs; wall-clock rates are
printed too).  The ways alternate over ``--rounds`` rounds; medians.

    .venv/bin/python bench/finetune_memory.py [--steps 4] [--rounds 1] [--quick] [--json]

Last line: one JSON object with each way's figures and
``lora_peak_ratio`` (LoRA peak / full peak; goal <= 0.5) and
``lora_speed_ratio`` (LoRA samples/s / full samples/s; goal >= 0.9).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from pairs import bench_parser, emit, run_pairs, speaker

BATCH, SEQ_LEN, CLASSES, WARM = 8, 64, 4, 2
CONFIG = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072}
# --quick: the same shape of model, two small layers
QUICK_CONFIG = {**CONFIG, "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512}
WAYS = ("full", "lora", "lora_checkpointing")
# glibc's mmap threshold grows as big blocks are freed, and freed blocks
# under it stay in the heap: the peak RSS then measures the allocator's
# history (a LoRA forward pass grew RSS by about twice what it saved for
# backward). Fixed at 64 KiB, blocks above it are returned when freed and
# RSS follows live memory; every way gets the same setting.
CHILD_ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": "65536"}


def child(way: str, steps: int, config: dict) -> dict:
    import resource

    import psutil
    import torch
    import transformers  # noqa: F401 - part of the baseline, as in a run
    import peft  # noqa: F401

    from trainlab_plugins.text.finetune import FinetunePlan, apply_finetune

    torch.set_num_threads(1)
    torch.manual_seed(0)
    baseline = psutil.Process().memory_info().rss
    from transformers import BertConfig, BertForSequenceClassification

    model = BertForSequenceClassification(BertConfig(num_labels=CLASSES, **config))
    model.trainlab_new_modules = ["bert.pooler.dense"]  # as a BERT folder without a pooler loads
    plan = FinetunePlan(
        mode="full" if way == "full" else "lora", gradient_checkpointing=way == "lora_checkpointing", lora_rank=8, lora_alpha=16,
        lora_dropout=0.05, target_modules=("query", "key", "value"), head=("classifier",), n_params=0, size_class="",
    )
    model = apply_finetune(model, plan, lambda line: None)
    params = sum(p.numel() for p in model.parameters())
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-4)
    gen = torch.Generator().manual_seed(1)
    batches = [
        (torch.randint(1000, config["vocab_size"], (BATCH, SEQ_LEN), generator=gen), torch.randint(0, CLASSES, (BATCH,), generator=gen))
        for _ in range(WARM + steps)
    ]
    model.train()
    for i, (ids, labels) in enumerate(batches):
        if i == WARM:
            wall, cpu = time.perf_counter(), time.process_time()
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return {
        "way": way,
        "parameters": params,
        "trainable": sum(p.numel() for p in trainable),
        "baseline_rss_mb": round(baseline / 1e6, 1),
        "peak_above_baseline_mb": round((peak - baseline) / 1e6, 1),
        "samples_per_cpu_s": round(BATCH * steps / cpu, 3),
        "samples_per_s": round(BATCH * steps / wall, 3),
    }


def main() -> int:
    parser = bench_parser(__doc__, "a two-layer model of width 128, 2 steps")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1, help="rounds of the three ways, alternating")
    parser.add_argument("--child", choices=WAYS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.steps = 2
    config = QUICK_CONFIG if args.quick else CONFIG
    if args.child:
        print(json.dumps(child(args.child, args.steps, config)))
        return 0
    say = speaker(args)

    def way_run(way: str):
        def run() -> dict:
            command = [sys.executable, __file__, "--child", way, "--steps", str(args.steps), *(["--quick"] if args.quick else [])]
            proc = subprocess.run(command, capture_output=True, text=True, env=CHILD_ENV)
            if proc.returncode != 0:
                raise SystemExit(f"finetune_memory: the {way} child failed:\n{proc.stderr[-3000:]}")
            return json.loads(proc.stdout.strip().splitlines()[-1])
        return run

    def said(_pair: int, way: str, result: dict) -> None:
        say(f"{way:20s} peak +{result['peak_above_baseline_mb']:8.1f} MB  {result['samples_per_cpu_s']:6.2f} samples/CPU-s  "
            f"{result['samples_per_s']:6.2f} samples/s  trainable {result['trainable']:,} of {result['parameters']:,}")  # fmt: skip

    runs = run_pairs({way: way_run(way) for way in WAYS}, args.rounds, after=said)
    figures = {
        way: {
            "peak_above_baseline_mb": statistics.median(r["peak_above_baseline_mb"] for r in rs),
            "samples_per_cpu_s": statistics.median(r["samples_per_cpu_s"] for r in rs),
            "samples_per_s": statistics.median(r["samples_per_s"] for r in rs),
            "trainable": rs[0]["trainable"],
            "parameters": rs[0]["parameters"],
        }
        for way, rs in runs.items()
    }
    full, lora, ckpt = (figures[w] for w in WAYS)
    summary = {
        "setup": {"model": config, "batch": BATCH, "seq_len": SEQ_LEN, "precision": "fp32", "threads": 1, "steps": args.steps, "rounds": args.rounds},
        "ways": figures,
        "lora_peak_ratio": round(lora["peak_above_baseline_mb"] / full["peak_above_baseline_mb"], 3),
        "lora_speed_ratio": round(lora["samples_per_cpu_s"] / full["samples_per_cpu_s"], 3),
        "lora_checkpointing_peak_ratio": round(ckpt["peak_above_baseline_mb"] / full["peak_above_baseline_mb"], 3),
        "lora_checkpointing_speed_ratio": round(ckpt["samples_per_cpu_s"] / full["samples_per_cpu_s"], 3),
        "goals": {"lora_peak_ratio": "<= 0.5", "lora_speed_ratio": ">= 0.9"},
    }
    say(f"lora_peak_ratio {summary['lora_peak_ratio']} (goal <= 0.5), lora_speed_ratio {summary['lora_speed_ratio']} (goal >= 0.9)")
    return emit("finetune_memory", args, summary)


if __name__ == "__main__":
    sys.exit(main())

"""sharding=fsdp on two GPUs: a real transformer (Qwen2-shaped decoder) fully fine-tuned in bf16, against DDP.

Runs only where two or more GPUs are visible (a one-GPU machine reports it
skipped, saying so); the CPU dry run does the same at tiny scale over two
gloo ranks in fp32.  Two launched runs of the same request (the text task on
the decoder, ``finetune=full``), ``--set sharding=none`` (DDP) and
``--set sharding=fsdp``.

Expected on two GPUs (what the check asserts):

* both runs complete; the FSDP run's validation loss is within 5 % of DDP's
  (bf16: FSDP computes with bf16 copies of every weight, layer norms
  included, where DDP's autocast keeps fp32 for those, so the two differ by
  more than rounding; the CPU dry run in fp32 is held to 1e-3);
* its checkpoints are the engine's safetensors files alone, and ``model/``
  holds the same tensor names as DDP's export (the whole model, no shards);
* the largest torch memory a rank held, from the runs' telemetry, is lower
  under FSDP than under DDP (each rank keeps half the weights, gradients
  and AdamW states; activations are the same).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from gpucheck.common import CheckEnv, Outcome, Skipped, env_threads

LOSS_WITHIN_BF16 = 0.05
LOSS_WITHIN_FP32 = 1e-3


def _launched(env: CheckEnv, model: Path, data: Path, run_dir: Path, sharding: str) -> subprocess.CompletedProcess:
    launch = ["--gpus", "2", "--precision", "bf16"] if env.cuda else ["--nproc-per-node", "2", "--device", "cpu", "--precision", "fp32"]
    params = {"model": str(model), "finetune": "full", "max_length": env.pick(64, 16), "telemetry_every": 0.5, "sharding": sharding}
    sets = [arg for key, value in params.items() for arg in ("--set", f"{key}={value}")]
    run_env = dict(os.environ)
    if not env.cuda:
        run_env["OMP_NUM_THREADS"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "trainlab", "train", "text-classification", "--data", str(data), "--epochs", "1", "--batch-size", "8",
         *launch, *sets, "--out", str(run_dir), "--json"],
        capture_output=True, text=True, env=run_env, timeout=max(10.0, env.left() / 2 - 5),
    )  # fmt: skip


def _val_loss(run_dir: Path) -> float | None:
    path = run_dir / "eval.json"
    return float(json.loads(path.read_text())["loss"]) if path.is_file() else None


def _largest_rank_memory(run_dir: Path) -> int:
    """The most torch memory any rank held in the run's system samples (0 when none were written)."""
    largest = 0
    path = run_dir / "metrics.jsonl"
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "system":
            for rank in event.get("ranks", []):
                largest = max(largest, int(rank.get("torch_allocated_bytes") or 0))
    return largest


def _tensor_names(path: Path) -> set[str]:
    from safetensors import safe_open

    if not path.is_file():
        return set()
    with safe_open(str(path), framework="pt") as handle:
        return set(handle.keys())


def check_fsdp_two_gpus(env: CheckEnv, out: Outcome) -> None:
    """A full bf16 fine-tune of a decoder over two GPUs with sharding=fsdp, against sharding=none (DDP)."""
    import torch

    from gpucheck.checks_finetune import make_decoder_folder
    from gpucheck.data import make_texts

    gpus = torch.cuda.device_count() if env.cuda else 0
    if env.cuda and gpus < 2:
        raise Skipped(f"sharding=fsdp needs two GPUs and this machine has {gpus}; the CPU dry run and the tests cover two gloo ranks")
    env_threads()
    model = make_decoder_folder(env.work / "qwen2", **env.pick(dict(hidden=896, layers=8, heads=14, kv_heads=2, intermediate=4864),
                                                           dict(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128)))  # fmt: skip
    data = make_texts(env.work / "texts", train_rows=env.pick(256, 32), val_rows=32, min_words=env.pick(40, 4), max_words=env.pick(120, 12))
    runs: dict[str, Any] = {}
    for sharding in ("none", "fsdp"):
        run_dir = env.work / f"run-{sharding}"
        proc = _launched(env, model, data, run_dir, sharding)
        out.expect(f"sharding={sharding}: the run completed", proc.returncode == 0, proc.stderr[-1200:] if proc.returncode else "")
        runs[sharding] = {"dir": run_dir, "loss": _val_loss(run_dir), "memory": _largest_rank_memory(run_dir)}
    ddp, fsdp = runs["none"], runs["fsdp"]
    out.fact("val_loss", {"ddp": ddp["loss"], "fsdp": fsdp["loss"]})
    within = LOSS_WITHIN_BF16 if env.cuda else LOSS_WITHIN_FP32
    close = ddp["loss"] is not None and fsdp["loss"] is not None and abs(fsdp["loss"] - ddp["loss"]) <= within * abs(ddp["loss"])
    out.expect(f"FSDP's validation loss within {within:g} of DDP's", close, (ddp["loss"], fsdp["loss"]))
    checkpoints = sorted(p.name for p in (fsdp["dir"] / "checkpoints").iterdir()) if (fsdp["dir"] / "checkpoints").is_dir() else []
    out.expect("FSDP's checkpoints are safetensors files alone", bool(checkpoints) and all(n.endswith(".safetensors") for n in checkpoints), checkpoints)
    names = _tensor_names(fsdp["dir"] / "model" / "model.safetensors")
    out.expect("model/ holds the whole model, named as DDP's export", bool(names) and names == _tensor_names(ddp["dir"] / "model" / "model.safetensors"),
               len(names))  # fmt: skip
    out.fact("largest_rank_torch_memory_bytes", {"ddp": ddp["memory"], "fsdp": fsdp["memory"]})
    if env.cuda:
        out.expect("FSDP holds less memory on a rank than DDP", 0 < fsdp["memory"] < ddp["memory"], (fsdp["memory"], ddp["memory"]))

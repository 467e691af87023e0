"""TrainLab's text-generation task against TRL's ``SFTTrainer``, side by side, packing on and off.

Both sides fine-tune the same model folder on the same chats with the same
recipe, each run in its own process (so that its peak memory is its own),
the processes alternating in ABBA pairs (``bench/pairs.py``):

* the model: a Qwen2 decoder built here from a config with seeded random
  weights (width 256, 4 layers, 3.4M parameters) over TrainLab's shipped
  tiny-chat tokenizer (1,095 tokens, ChatML), saved as a model folder
  both sides load.  Its chat template renders ChatML and
  wraps each answer and its ``<|im_end|>`` in ``{% generation %}``
  markers: TRL's ``assistant_only_loss`` reads those, TrainLab's masking
  finds the same spans without them (the markers render as nothing);
* the data: generated chats (``--train``, ``--val``), each asking to repeat,
  reverse or sort a list of 3-40 words from the bundled sample's
  vocabulary, some with a system prompt, a quarter with a second exchange;
  every chat fits ``max_length`` (256), so neither side truncates;
* the masking: the loss on the assistant's answers and their end-of-turn
  token only (TrainLab's default; TRL's ``assistant_only_loss=True``).
  The trained-token counts of both sides are compared: a mismatch stops
  the bench;
* the recipe: batch 8, 2 epochs, AdamW at lr 1e-3 (random weights), cosine
  with 5 % warmup, no weight decay, clipping at 1.0, fp32 on the CPU, no
  gradient checkpointing (TrainLab's ``auto`` for a model this small; TRL
  defaults to it on, which would trade its speed for memory), one torch
  thread.  TRL keeps its defaults otherwise: ``packing_strategy="bfd"``
  with padding-free batches when packing, its loss (``fused_lm_head``: no
  full logits), entropy and token-accuracy metrics, logging every 10 steps,
  its optimizer; ``report_to="none"`` and no saving.  Neither side uses
  kernels from outside torch (Liger, hub kernels).

Trained tokens: the non-pad tokens of the training passes (prompt and
answer; packing changes how they are batched, not how many) per wall second
and per CPU second of the passes (epoch start to epoch end; TrainLab's
evaluation and checkpoints, TRL's logging outside them are not counted).
Eval loss: the mean cross-entropy per answer token of the held-out chats,
computed by the bench itself on each side's final model (the same code,
unpacked, token-weighted).  Both sides of a pair shuffle with one seed
and each pair with its own (1234, 1235, ...): how much the order of the
chats alone moves the loss shows in the spread over pairs.  Peak memory: the side process's peak resident
set (``ru_maxrss``), and above its baseline after the imports.

    .venv/bin/python bench/sft_vs_trl.py [--pairs 4] [--train 480] [--val 64] [--packing both] [--quick] [--json]
    .venv/bin/python bench/sft_vs_trl.py --profile torch --packing off   # a profile of each side on stderr

Last line: one JSON object; per packing setting, ``ratio`` (TrainLab / TRL
tokens per wall second, per pair) and ``cpu_ratio`` (per CPU second), the
eval losses and their relative difference, the peaks.  Goal: ratio >= 1.2
at an eval loss within 1 % of TRL's, peak memory no higher, packing on
and off.  Needs the ``bench`` extra (``pip install -e '.[bench]'``: TRL).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SEED = 1234
MAX_LENGTH = 256
SHAPE = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 768}
QUICK_SHAPE = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 128}
RECIPE = {"epochs": 2, "batch_size": 8, "lr": 1e-3, "schedule": "cosine", "warmup_ratio": 0.05, "weight_decay": 0.0, "clip_grad_norm": 1.0}
# ChatML as tiny-chat's own template renders it, each answer and its end-of-turn token marked for TRL
TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}<|im_start|>assistant\n"
    "{% generation %}{{ message['content'] }}<|im_end|>{% endgeneration %}\n"
    "{% else %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SYSTEM = "You are a helpful assistant. Answer with the words only."
TRL_MISSING = "bench/sft_vs_trl.py needs TRL: pip install -e '.[bench]' (the bench extra)"


# -- the workspace: data and a model folder ---------------------------------------
def sample_words() -> list[str]:
    import re

    from trainlab import resource_path

    words: set[str] = set()
    for split in ("train", "val"):
        for line in (resource_path("samples", "text-generation") / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
            for message in json.loads(line)["messages"]:
                words.update(re.findall(r"[A-Za-z]{3,}", message["content"]))
    return sorted(words)


def make_chats(n: int, rng: Any, words: list[str], tokenizer: Any) -> list[dict[str, Any]]:
    """``n`` chats asking to repeat, reverse or sort a list of words, each within ``MAX_LENGTH`` tokens."""
    chats: list[dict[str, Any]] = []
    while len(chats) < n:
        messages: list[dict[str, str]] = [{"role": "system", "content": SYSTEM}] if rng.random() < 0.3 else []
        for _ in range(2 if rng.random() < 0.25 else 1):
            count = int(min(40, max(3, round(rng.lognormal(2.4, 0.6)))))
            items = [str(w) for w in rng.choice(words, count)]
            verb, answer = [("Repeat", items), ("Reverse", items[::-1]), ("Sort", sorted(items))][int(rng.integers(3))]
            messages += [{"role": "user", "content": f"{verb} these words: {' '.join(items)}"}, {"role": "assistant", "content": " ".join(answer) + "."}]
        text = tokenizer.apply_chat_template(messages, tokenize=False)
        if len(tokenizer(text, add_special_tokens=False)["input_ids"]) <= MAX_LENGTH:
            chats.append({"messages": messages})
    return chats


def make_workspace(root: Path, n_train: int, n_val: int, shape: dict[str, int]) -> dict[str, Any]:
    import numpy as np
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from trainlab import resource_path

    model_dir = root / "model"
    tokenizer = AutoTokenizer.from_pretrained(str(resource_path("vocab", "tiny-chat")), local_files_only=True)
    tokenizer.chat_template = TEMPLATE
    tokenizer.model_max_length = MAX_LENGTH * 2  # as the model's positions (tiny-chat's tokenizer says 256)
    tokenizer.save_pretrained(str(model_dir))
    config = Qwen2Config(
        vocab_size=len(tokenizer), max_position_embeddings=MAX_LENGTH * 2, tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, **shape,
    )  # fmt: skip
    torch.manual_seed(SEED)
    model = Qwen2ForCausalLM(config)
    model.save_pretrained(str(model_dir))
    rng = np.random.default_rng(SEED)
    words = sample_words()
    data = root / "data"
    data.mkdir()
    for split, n in (("train", n_train), ("val", n_val)):
        chats = make_chats(n, rng, words, tokenizer)
        (data / f"{split}.jsonl").write_text("".join(json.dumps(c) + "\n" for c in chats), encoding="utf-8")
    return {"model": str(model_dir), "data": str(data), "parameters": sum(p.numel() for p in model.parameters()), "shape": shape}


def encoded_split(workspace: dict[str, Any], split: str) -> list[tuple[list[int], list[bool]]]:
    """(ids, trained) of each chat of ``split`` as TrainLab's masking encodes it."""
    from transformers import AutoTokenizer

    from trainlab_plugins.textgen import templates

    tokenizer = AutoTokenizer.from_pretrained(workspace["model"], local_files_only=True)
    fmt = templates.setup_tokenizer(tokenizer, "auto", workspace["model"])
    out = []
    for line in Path(workspace["data"], f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
        enc = templates.encode_chat(tokenizer, json.loads(line)["messages"], fmt, MAX_LENGTH)
        assert enc is not None and not enc.dropped_turns
        out.append((enc.ids, enc.trained))
    return out


def eval_loss(lm: Any, examples: list[tuple[list[int], list[bool]]], batch: int = 16) -> float:
    """Mean cross-entropy per trained token, unpacked, the same code for both sides' final models."""
    import torch
    import torch.nn.functional as F

    lm.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(examples), batch):
            chunk = examples[start : start + batch]
            width = max(len(ids) for ids, _ in chunk)
            ids = torch.zeros((len(chunk), width), dtype=torch.long)
            mask = torch.zeros_like(ids)
            labels = torch.full_like(ids, -100)
            for b, (seq, trained) in enumerate(chunk):
                seq_t = torch.tensor(seq)
                ids[b, : len(seq)] = seq_t
                mask[b, : len(seq)] = 1
                labels[b, : len(seq)] = torch.where(torch.tensor(trained), seq_t, torch.full_like(seq_t, -100))
            logits = lm(input_ids=ids, attention_mask=mask, use_cache=False).logits.float()
            targets = labels[:, 1:]
            total += float(F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100, reduction="sum"))
            count += int((targets != -100).sum())
    return total / count


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# -- one side, in its own process ---------------------------------------------------
def side_trainlab(workspace: dict[str, Any], packing: bool, seed: int, out: Path) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM

    from trainlab.api.callbacks import Callback
    from trainlab.engine.scripting import RunRequest, run_training

    class PassClock(Callback):
        """The training passes only: each epoch's start to its end (evaluation follows the end)."""

        def __init__(self) -> None:
            self.wall = self.cpu = 0.0
            self.steps = 0

        def on_epoch_start(self, state):
            self._start = (time.perf_counter(), time.process_time())

        def on_epoch_end(self, state):
            self.wall += time.perf_counter() - self._start[0]
            self.cpu += time.process_time() - self._start[1]
            self.steps = state.step

    baseline = rss_mb()
    clock = PassClock()
    r = RECIPE
    params = {
        "model": workspace["model"], "device": "cpu", "precision": "fp32", "seed": str(seed), "max_length": str(MAX_LENGTH),
        "packing": str(packing).lower(), "epochs": str(r["epochs"]), "batch_size": str(r["batch_size"]), "lr": str(r["lr"]),
        "schedule": r["schedule"], "warmup_ratio": str(r["warmup_ratio"]), "weight_decay": str(r["weight_decay"]),
        "clip_grad_norm": str(r["clip_grad_norm"]), "finetune": "full", "gradient_checkpointing": "off",
        "eval_generations": "0", "final_weights": "last", "keep_checkpoints": "last",
    }  # fmt: skip
    result = run_training(RunRequest(task="text-generation", data=workspace["data"], params=params, out=str(out / "run")), callbacks=[clock])
    if result.status != "completed":
        raise SystemExit(f"TrainLab run {result.status}: {result.error}")
    peak = peak_mb()
    lm = AutoModelForCausalLM.from_pretrained(str(out / "run" / "model"), local_files_only=True)
    train = encoded_split(workspace, "train")
    return {
        "wall": clock.wall, "cpu": clock.cpu, "steps": clock.steps,
        "tokens": r["epochs"] * sum(len(ids) for ids, _ in train),
        "trained_tokens": r["epochs"] * sum(sum(t) for _, t in train),
        "eval_loss": eval_loss(lm, encoded_split(workspace, "val")),
        "peak_rss_mb": peak, "baseline_rss_mb": baseline, "threads": torch.get_num_threads(),
    }  # fmt: skip


def side_trl(workspace: dict[str, Any], packing: bool, seed: int, out: Path) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from transformers.utils import logging as hf_logging
    from trl import SFTConfig, SFTTrainer

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    baseline = rss_mb()

    def rows(split: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in Path(workspace["data"], f"{split}.jsonl").read_text(encoding="utf-8").splitlines()]

    class PassClock(TrainerCallback):
        def __init__(self) -> None:
            self.wall = self.cpu = 0.0

        def on_epoch_begin(self, args, state, control, **kwargs):
            self._start = (time.perf_counter(), time.process_time())

        def on_epoch_end(self, args, state, control, **kwargs):
            self.wall += time.perf_counter() - self._start[0]
            self.cpu += time.process_time() - self._start[1]

    tokenizer = AutoTokenizer.from_pretrained(workspace["model"], local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(workspace["model"], local_files_only=True, dtype=torch.float32)
    r = RECIPE
    config = SFTConfig(
        output_dir=str(out / "trl"),
        max_length=MAX_LENGTH,
        packing=packing,
        assistant_only_loss=True,
        per_device_train_batch_size=r["batch_size"],
        num_train_epochs=r["epochs"],
        learning_rate=r["lr"],
        lr_scheduler_type=r["schedule"],
        warmup_steps=r["warmup_ratio"],  # below 1: a share of the steps
        weight_decay=r["weight_decay"],
        max_grad_norm=r["clip_grad_norm"],
        seed=seed,
        bf16=False,  # the same precision: fp32
        gradient_checkpointing=False,  # as TrainLab resolves it for this model
        use_cpu=True,
        dataloader_num_workers=0,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
    )  # fmt: skip
    clock = PassClock()
    trainer = SFTTrainer(model=model, args=config, train_dataset=Dataset.from_list(rows("train")), processing_class=tokenizer, callbacks=[clock])
    dataset = trainer.train_dataset
    tokens = sum(len(ids) for ids in dataset["input_ids"])
    trained = sum(sum(m) for m in dataset["assistant_masks"]) if "assistant_masks" in dataset.column_names else None
    trainer.train()
    peak = peak_mb()
    optimizer = trainer.optimizer.optimizer if hasattr(trainer.optimizer, "optimizer") else trainer.optimizer
    return {
        "wall": clock.wall, "cpu": clock.cpu, "steps": trainer.state.global_step,
        "tokens": r["epochs"] * tokens, "trained_tokens": r["epochs"] * trained if trained is not None else None,
        "eval_loss": eval_loss(trainer.model, encoded_split(workspace, "val")),
        "peak_rss_mb": peak, "baseline_rss_mb": baseline, "threads": torch.get_num_threads(),
        "optimizer": f"{type(optimizer).__name__}{' fused' if optimizer.defaults.get('fused') else ''}",
    }  # fmt: skip


SIDES = {"trainlab": side_trainlab, "trl": side_trl}


def run_side(args: argparse.Namespace) -> int:
    import torch

    torch.set_num_threads(args.threads)
    workspace = json.loads(Path(args.workspace, "workspace.json").read_text(encoding="utf-8"))
    packing = args.packing == "on"
    out = Path(tempfile.mkdtemp(prefix=f"{args.side}-", dir=args.workspace))
    side = SIDES[args.side]
    if args.profile == "cprofile":
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        figures = profiler.runcall(side, workspace, packing, args.seed, out)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(30)
    elif args.profile == "torch":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            figures = side(workspace, packing, args.seed, out)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30), file=sys.stderr)
    else:
        figures = side(workspace, packing, args.seed, out)
    shutil.rmtree(out, ignore_errors=True)
    print(json.dumps(figures))
    return 0


# -- the pairs ------------------------------------------------------------------------
def side_process(name: str, root: Path, packing: str, seed: int, threads: int, profile: str | None) -> dict[str, Any]:
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": str(threads), "HF_DATASETS_OFFLINE": "1"}
    env["TRAINLAB_HOME"] = str(root / "home")  # bench runs stay out of the user's history
    env["HF_DATASETS_CACHE"] = str(root / "datasets-cache")
    command = [sys.executable, str(Path(__file__).resolve()), "--side", name, "--workspace", str(root), "--packing", packing, "--seed", str(seed), "--threads", str(threads)]
    if profile:
        command += ["--profile", profile]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if profile:
        sys.stderr.write(f"--- profile of {name}, packing {packing} ---\n{done.stderr}\n")
    if done.returncode != 0:
        raise SystemExit(f"{name} side (packing {packing}) failed (exit {done.returncode}): {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    from pairs import bench_parser, speaker

    parser = bench_parser(__doc__, "a width-64 decoder on 48 chats, one pair, packing on and off (the smoke test)")
    parser.add_argument("--pairs", type=int, default=4, help="runs of each side per packing setting, alternating ABBA")
    parser.add_argument("--train", type=int, default=480, help="training chats")
    parser.add_argument("--val", type=int, default=64, help="held-out chats")
    parser.add_argument("--packing", choices=("both", "on", "off"), default="both")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads in each side")
    parser.add_argument("--keep", action="store_true", help="keep the workspace (data, model) in the temporary folder")
    parser.add_argument("--profile", choices=("cprofile", "torch"), help="profile each side once (stderr) instead of pairs")
    parser.add_argument("--side", choices=tuple(SIDES), help=argparse.SUPPRESS)
    parser.add_argument("--workspace", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=SEED, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        return run_side(args)
    try:
        import trl  # noqa: F401
    except ImportError:
        print(TRL_MISSING, file=sys.stderr)
        return 2
    say = speaker(args)
    shape, n_train, n_val = (QUICK_SHAPE, 48, 16) if args.quick else (SHAPE, args.train, args.val)
    pairs = 1 if args.quick else args.pairs
    root = Path(tempfile.mkdtemp(prefix="trainlab-sft-vs-trl-"))
    os.environ["TRAINLAB_HOME"] = str(root / "home")
    try:
        workspace = make_workspace(root, n_train, n_val, shape)
        Path(root, "workspace.json").write_text(json.dumps(workspace), encoding="utf-8")
        say(f"workspace {root}; {workspace['parameters']:,} parameters; recipe {RECIPE}")
        return measure(args, root, workspace, n_train, n_val, pairs, say)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def measure(args: argparse.Namespace, root: Path, workspace: dict[str, Any], n_train: int, n_val: int, pairs: int, say) -> int:
    from pairs import emit, load_average, ratio_summary, run_pairs, spread

    load_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    settings = ("off", "on") if args.packing == "both" else (args.packing,)
    if args.profile:
        for packing in settings:
            for name in SIDES:
                say(f"{name}, packing {packing}: {side_process(name, root, packing, SEED, args.threads, args.profile)}")
        return 0
    results: dict[str, Any] = {}
    for packing in settings:

        def said(pair: int, name: str, f: dict[str, Any], packing: str = packing) -> None:
            say(f"packing {packing}, pair {pair + 1} {name}: {f['tokens'] / f['wall']:.0f} tokens/s, {f['tokens'] / f['cpu']:.0f} per CPU s, "
                f"eval loss {f['eval_loss']:.4f}, peak {f['peak_rss_mb']:.0f} MB, {f['steps']} steps")  # fmt: skip

        seed = [SEED]

        def same_seed(pair: int) -> None:
            seed[0] = SEED + pair  # both sides of a pair shuffle with one seed; the pairs differ, so the losses' spread shows the order's part

        runs = run_pairs(
            {name: (lambda name=name: side_process(name, root, packing, seed[0], args.threads, None)) for name in SIDES}, pairs, after=said, before=same_seed
        )
        tl, trl_runs = runs["trainlab"][0], runs["trl"][0]
        if tl["tokens"] != trl_runs["tokens"] or (trl_runs["trained_tokens"] is not None and tl["trained_tokens"] != trl_runs["trained_tokens"]):
            raise SystemExit(
                f"packing {packing}: the sides train different tokens (TrainLab {tl['tokens']} tokens, {tl['trained_tokens']} trained; "
                f"TRL {trl_runs['tokens']}, {trl_runs['trained_tokens']}): the comparison would not be like for like"
            )

        def rates(name: str, clock: str) -> list[float]:
            return [r["tokens"] / r[clock] for r in runs[name]]

        loss = {name: spread([r["eval_loss"] for r in runs[name]]) for name in SIDES}
        peak = {name: spread([r["peak_rss_mb"] for r in runs[name]]) for name in SIDES}
        above = {name: spread([r["peak_rss_mb"] - r["baseline_rss_mb"] for r in runs[name]]) for name in SIDES}
        ratio = ratio_summary(rates("trainlab", "wall"), rates("trl", "wall"))
        loss_diff = (loss["trainlab"]["median"] - loss["trl"]["median"]) / loss["trl"]["median"]
        results[packing] = {
            "tokens_per_second": {name: spread(rates(name, "wall")) for name in SIDES},
            "tokens_per_cpu_second": {name: spread(rates(name, "cpu")) for name in SIDES},
            "ratio": ratio,
            "cpu_ratio": ratio_summary(rates("trainlab", "cpu"), rates("trl", "cpu")),
            "eval_loss": loss,
            "eval_loss_diff_pct": round(100 * loss_diff, 3),
            "peak_rss_mb": peak,
            "peak_above_baseline_mb": above,
            "tokens": tl["tokens"],
            "trained_tokens": tl["trained_tokens"],
            "steps": {name: runs[name][0]["steps"] for name in SIDES},
            "trl_optimizer": trl_runs.get("optimizer"),
            "goal_met": ratio["median"] >= 1.2 and abs(loss_diff) <= 0.01 and peak["trainlab"]["median"] <= peak["trl"]["median"],
        }
    figures = {
        "model": {"parameters": workspace["parameters"], **workspace["shape"], "vocab_size": 1095},
        "train": n_train,
        "val": n_val,
        "max_length": MAX_LENGTH,
        "recipe": RECIPE,
        "pairs": pairs,
        "threads": args.threads,
        "packing": results,
        "load_average_start": [round(v, 2) for v in load_start] if load_start else None,
        "load_average_end": load_average(),
    }
    figures["goal_met"] = all(r["goal_met"] for r in results.values())
    table(results, say)
    return emit("sft_vs_trl", args, figures)


def table(results: dict[str, Any], say) -> None:
    say("packing | TrainLab tok/s | TRL tok/s | ratio (spread) | CPU ratio | eval loss TrainLab / TRL (diff) | peak MB TrainLab / TRL")
    for packing, r in results.items():
        tps = r["tokens_per_second"]
        say(f"{packing:7} | {tps['trainlab']['median']:14.0f} | {tps['trl']['median']:9.0f} | {r['ratio']['median']:.2f} ({r['ratio']['spread_pct']} %) | "
            f"{r['cpu_ratio']['median']:.2f} | {r['eval_loss']['trainlab']['median']:.4f} / {r['eval_loss']['trl']['median']:.4f} ({r['eval_loss_diff_pct']:+.2f} %) | "
            f"{r['peak_rss_mb']['trainlab']['median']:.0f} / {r['peak_rss_mb']['trl']['median']:.0f}")  # fmt: skip


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())

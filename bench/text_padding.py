"""Padding and batching: what length-grouped batches buy, and what the engine costs.

The same small BERT (4 layers, hidden 256, 4 heads, a vocabulary of 8,000)
trains on 1,024 synthetic texts whose token lengths are lognormal (mean of
the log 3.0, sigma 0.7) clipped to [4, 256], with ``max_length`` 128 and
batches of 32, one epoch each way, the ways alternating in every round:

  (a) every text padded to ``max_length`` (random batches);
  (b) the seed's way: random batches padded to their longest text;
  (c) the plugin's default: length-grouped batches (``batch_order``) padded
      to their longest text (``collate``).

(a), (b) and (c) share one hand-written training step (forward, cross
entropy, backward, clipping, AdamW, schedule) and the plugin's tokenised
data, so only batching and padding differ.  Then, also alternating:

  (d) the plugin through the engine (``run_training``, one epoch, default
      callbacks), timed from the epoch's start to its evaluation;
  (e) a hand-written transformers loop over the same batches as (d).

    .venv/bin/python bench/text_padding.py [--rounds 3] [--json]

Last line: a JSON object with samples/s of each way and ``vs_max_length`` =
(c)/(a), ``vs_seed`` = (c)/(b), ``vs_raw_loop`` = (d)/(e), medians of the
per-round ratios.  Goals on the CPU here: vs_max_length >= 4, vs_seed >= 2.5,
vs_raw_loop >= 0.97.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N_TEXTS, VOCAB, MAX_LENGTH, BATCH, CLASSES, SEED = 1024, 8000, 128, 32, 4, 1234
MODEL = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024}
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def make_workspace(root: Path) -> tuple[Path, Path]:
    """A data folder (train.csv, val.csv) and a model folder the plugin loads."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    rng = np.random.default_rng(SEED)
    words = [f"w{i}" for i in range(VOCAB - len(SPECIALS))]
    data = root / "data"
    data.mkdir()
    for split, n in (("train", N_TEXTS), ("val", 64)):
        lengths = np.clip(np.rint(rng.lognormal(3.0, 0.7, n)), 4, 256).astype(int)
        with open(data / f"{split}.csv", "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "label"])
            for length in lengths:
                # every word is one token; [CLS] and [SEP] make up the length
                text = " ".join(rng.choice(words, size=length - 2))
                writer.writerow([text, f"c{rng.integers(CLASSES)}"])
    model_dir = root / "bert-4x256"
    tokenizer = BertTokenizer(vocab={tok: i for i, tok in enumerate(SPECIALS + words)})
    torch.manual_seed(SEED)
    config = BertConfig(vocab_size=VOCAB, max_position_embeddings=512, num_labels=CLASSES, **MODEL)
    BertForSequenceClassification(config).save_pretrained(str(model_dir))
    tokenizer.save_pretrained(str(model_dir))
    return data, model_dir


def make_task(data: Path, model_dir: Path):
    import torch

    from trainlab import RunContext
    from trainlab.params import ENGINE_PARAMS, resolve
    from trainlab.plugins.text import TEXT_CLASSIFICATION
    from trainlab.plugins.text.task import TextClassificationTask

    params = resolve(TEXT_CLASSIFICATION, ENGINE_PARAMS, {}, {"model": str(model_dir), "batch_size": BATCH, "seed": SEED, "max_length": MAX_LENGTH})
    task = TextClassificationTask(TEXT_CLASSIFICATION, params)
    ctx = RunContext(device=torch.device("cpu"), precision="fp32", seed=SEED, run_dir=None, params=params, log=lambda m: None)
    task.prepare(str(data), ctx)
    return task, ctx


def hand_loop(model_dir: Path, items, batches: list[list[int]], collate, lr: float = 2e-5) -> float:
    """One epoch of a plain transformers training loop; returns samples/s."""
    import torch
    from transformers import AutoModelForSequenceClassification

    torch.manual_seed(SEED)
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir), local_files_only=True)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.ndim > 1 and not n.endswith(".bias")]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim > 1 and not n.endswith(".bias"))]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=lr)
    total = len(batches)
    warmup = max(1, int(0.1 * total))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: (s + 1) / warmup if s < warmup else max(0.0, (total - s) / max(1, total - warmup))
    )
    start = time.perf_counter()
    loss_sum = torch.zeros(())
    seen = 0
    for indices in batches:
        batch = collate([items[i] for i in indices])
        logits = model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
        ).logits
        loss = torch.nn.functional.cross_entropy(logits, batch["labels"])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        loss_sum += loss.detach() * len(indices)
        seen += len(indices)
    float(loss_sum)  # one read-back, as the engine does
    return seen / (time.perf_counter() - start)


def engine_epoch(data: Path, model_dir: Path, out: Path) -> float:
    """One epoch through ``run_training``; samples/s from epoch start to its evaluation."""
    from trainlab.engine.callbacks import Callback
    from trainlab.engine.runner import RunRequest, run_training

    class EpochClock(Callback):
        def on_epoch_start(self, state):
            self.start = time.perf_counter()

        def on_eval_start(self, state):
            self.seconds = time.perf_counter() - self.start
            self.samples = state.samples_seen

    clock = EpochClock()
    params = {"model": str(model_dir), "epochs": "1", "batch_size": str(BATCH), "seed": str(SEED), "device": "cpu", "max_length": str(MAX_LENGTH)}
    result = run_training(RunRequest(task="text-classification", data=str(data), params=params, out=str(out)), callbacks=[clock])
    if result.status != "completed":
        raise SystemExit(f"engine run {result.status}: {result.error}")
    return clock.samples / clock.seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print only the JSON line")
    args = parser.parse_args()
    say = (lambda *a: None) if args.json else (lambda *a: print(*a, file=sys.stderr, flush=True))

    root = Path(tempfile.mkdtemp(prefix="trainlab-bench-"))
    os.environ["TRAINLAB_HOME"] = str(root / "home")  # bench runs stay out of the user's history
    import torch

    from trainlab.plugins.text.batching import PadCollator, random_batches

    data, model_dir = make_workspace(root)
    task, ctx = make_task(data, model_dir)
    items = task.dataset("train")
    lengths = items.lengths
    pad_id = task.tokenizer.pad_token_id
    ways = {
        "max_length": (random_batches(len(items), BATCH, SEED, 1), PadCollator(pad_id, max_length=MAX_LENGTH)),
        "seed": (random_batches(len(items), BATCH, SEED, 1), task.collate),
        "grouped": (task.batch_order("train", 1, BATCH, SEED), task.collate),
    }
    for name, (batches, collate) in ways.items():
        tokens = sum(collate([items[i] for i in b])["input_ids"].numel() for b in batches)
        say(f"{name:>10}: {len(batches)} batches, {tokens} token slots ({lengths.sum() / tokens:.0%} real tokens)")
    say(f"torch {torch.__version__}, {torch.get_num_threads()} threads; text lengths: mean {lengths.mean():.1f}, max {lengths.max()}")

    hand_loop(model_dir, items, ways["grouped"][0][:4], task.collate)  # warm-up
    rates: dict[str, list[float]] = {k: [] for k in ("max_length", "seed", "grouped", "engine", "raw_loop")}
    for round_no in range(args.rounds):
        order = list(ways) if round_no % 2 == 0 else list(reversed(ways))
        for name in order:
            batches, collate = ways[name]
            rates[name].append(hand_loop(model_dir, items, batches, collate))
        pair = ("engine", "raw_loop") if round_no % 2 == 0 else ("raw_loop", "engine")
        for name in pair:
            if name == "engine":
                rates[name].append(engine_epoch(data, model_dir, root / f"run-{round_no}"))
            else:
                rates[name].append(hand_loop(model_dir, items, ways["grouped"][0], task.collate))
        say(f"round {round_no + 1}: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in rates.items()) + " samples/s")

    def ratio(a: str, b: str) -> float:
        return round(statistics.median(x / y for x, y in zip(rates[a], rates[b])), 3)

    figures = {
        "bench": "text_padding",
        "texts": N_TEXTS,
        "batch_size": BATCH,
        "max_length": MAX_LENGTH,
        "rounds": args.rounds,
        "threads": torch.get_num_threads(),
        "samples_per_second": {k: round(statistics.median(v), 1) for k, v in rates.items()},
        "vs_max_length": ratio("grouped", "max_length"),
        "vs_seed": ratio("grouped", "seed"),
        "vs_raw_loop": ratio("engine", "raw_loop"),
    }
    figures["goals_met"] = figures["vs_max_length"] >= 4 and figures["vs_seed"] >= 2.5 and figures["vs_raw_loop"] >= 0.97
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())

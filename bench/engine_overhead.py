"""Engine overhead: the engine against a hand-written PyTorch loop.

The same small CNN, the same in-memory data, the same seed, the same batch
order, optimizer (AdamW with no decay on biases/norms), warmup-linear
schedule and gradient clipping, through

  (a) a hand-written loop: train, evaluate each epoch, save the final weights
      as safetensors;
  (b) ``trainlab.engine.scripting.run_training`` with its default callbacks
      (metrics.jsonl, run.json and index, last/best checkpoints, eval.json,
      the exported model).

in alternating pairs (ABBA: which goes first alternates too).  ``ratio`` is
the median over pairs of training samples/s of the engine over the raw loop
(time spent in the training passes: data, forward, backward, optimizer, and
for the engine its callbacks and loss read-backs); ``ratio_end_to_end`` times
whole runs, evaluation, checkpoints, run records and model export included.
Each comes twice: from wall time, and from CPU time (``ratio_cpu``: the
training thread's CPU seconds in the training passes, ``thread_time``;
``ratio_end_to_end_cpu``: the process's), which a neighbour's load moves far
less; every ratio reports its spread over the pairs (``*_spread``: median,
min, max, ``spread_pct`` = half the range over the median).
``max_abs_loss_diff`` compares the per-epoch validation losses and
``max_abs_weight_diff`` the final weights.

    python bench/engine_overhead.py [--pairs 5] [--quick] [--json]
    python bench/engine_overhead.py --instructions [--instruction-pairs 2] [--samples 1024] [--epochs 1] [--json]

``--instructions`` counts, instead of timing, the instructions each side
executes in its training passes, under valgrind's callgrind with counting
switched on only there (``pairs.count_region``): what the load of a shared
machine cannot move. ``instruction_ratio`` is the raw loop's count over the
engine's (above 1: the engine does the same work in fewer instructions). It
runs each side in its own process, some 50x slower than native in the counted
part, so on a smaller workload (1 epoch of 256 samples, 4 steps, by default).

Goal on the CPU of the development machine: ratio >= 0.98, loss diff <= 1e-5;
on a loaded machine read ``ratio_cpu``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

import trainlab
from pairs import (
    Clock,
    bench_parser,
    callgrind_region_instructions,
    count_region,
    emit,
    instruction_counter,
    load_average,
    ratio_summary,
    run_pairs,
    speaker,
)
from trainlab import ClassificationTask, DataSummary, TaskSpec

# ``trainlab.api.callbacks.Callback`` rather than the public
# ``trainlab.Callback``: the older name also exists in trees from before the
# one-package layout, which bench/before_after.py runs this script against.
from trainlab.api.callbacks import Callback

N_TRAIN, N_VAL, SIZE, CLASSES = 4096, 1024, 32, 10
EPOCHS, BATCH, LR, SEED = 3, 64, 2e-3, 1234


def make_data():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(N_TRAIN + N_VAL, 3, SIZE, SIZE, generator=gen)
    proj = torch.randn(3 * SIZE * SIZE, CLASSES, generator=gen)
    y = (x.flatten(1) @ proj).argmax(1)
    return (x[:N_TRAIN], y[:N_TRAIN]), (x[N_TRAIN:], y[N_TRAIN:])


DATA = make_data()


def make_model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Dropout(0.1), torch.nn.Linear(32, CLASSES),
    )


class InMemory(torch.utils.data.Dataset):
    """Batched fetching (``__getitems__``): the DataLoader indexes once per batch."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __getitems__(self, indices):
        idx = torch.as_tensor(indices)
        return self.x[idx], self.y[idx]


def identity(batch):
    return batch


class BenchTask(ClassificationTask):
    def prepare(self, data_path, ctx, label_names=None):
        self.label_names = [str(i) for i in range(CLASSES)]
        (xt, yt), (xv, yv) = DATA
        self.data = {"train": InMemory(xt, yt), "val": InMemory(xv, yv)}
        return DataSummary(label_names=self.label_names, counts={})

    def dataset(self, split):
        return self.data[split]

    def collate(self, items):
        return items

    def build_model(self, ctx):
        return make_model()

    def forward(self, model, batch):
        x, y = batch
        return model(x), y

    def save_model(self, model, out_dir, ctx):
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out_dir / "model.safetensors"))


class TrainingCpu(Callback):
    """The training thread's CPU seconds in the training passes (epoch start to evaluation start)."""

    seconds = 0.0

    def on_epoch_start(self, state):
        count_region(True)
        self._start = time.thread_time()

    def on_eval_start(self, state):
        TrainingCpu.seconds += time.thread_time() - self._start
        count_region(False)


class BenchPlugin:
    @trainlab.hookimpl
    def trainlab_api_version(self):
        return "1.0"

    @trainlab.hookimpl
    def trainlab_run_callbacks(self, task_id, params):
        return [TrainingCpu()] if task_id == "bench-classification" else []

    @trainlab.hookimpl
    def trainlab_tasks(self):
        return [TaskSpec(id="bench-classification", title="Bench", factory="__main__:BenchTask")]


def raw_loop(out_dir: Path):
    """What a careful person writes by hand: same maths as the engine."""
    import random

    import numpy as np
    from safetensors.torch import save_file

    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    (xt, yt), (xv, yv) = DATA
    model = make_model()
    decay = [p for n, p in model.named_parameters() if p.ndim > 1 and not n.endswith(".bias")]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim > 1 and not n.endswith(".bias"))]
    # fused, as the engine's (core/trainlab/engine/loop.py: one kernel over every tensor, on the CPU too)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=LR, fused=True)
    steps_per_epoch = math.ceil(N_TRAIN / BATCH)
    total = steps_per_epoch * EPOCHS
    warmup = int(round(total * 0.06))

    def factor(step):
        if warmup and step < warmup:
            return (step + 1) / (warmup + 1)
        return max(0.0, 1.0 - min(1.0, (step - warmup) / max(1, total - warmup)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    val_losses = []
    start, cpu_start = time.perf_counter(), time.process_time()
    train_seconds = train_cpu = 0.0
    for epoch in range(1, EPOCHS + 1):
        count_region(True)
        epoch_start, epoch_cpu = time.perf_counter(), time.thread_time()
        model.train()
        gen = torch.Generator().manual_seed(SEED * 1_000_003 + epoch)
        order = torch.randperm(N_TRAIN, generator=gen)
        for i in range(0, N_TRAIN, BATCH):
            idx = order[i : i + BATCH]
            loss = torch.nn.functional.cross_entropy(model(xt[idx]), yt[idx])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            sched.step()
        train_seconds += time.perf_counter() - epoch_start
        train_cpu += time.thread_time() - epoch_cpu
        count_region(False)
        model.eval()
        with torch.inference_mode():
            total_loss = 0.0
            for i in range(0, N_VAL, BATCH):
                total_loss += torch.nn.functional.cross_entropy(model(xv[i : i + BATCH]).float(), yv[i : i + BATCH], reduction="sum").item()
        val_losses.append(total_loss / N_VAL)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out_dir / "raw.safetensors"))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    samples = N_TRAIN * EPOCHS
    rates = (samples / train_seconds, samples / seconds, samples / train_cpu, samples / cpu)
    return rates, val_losses, {k: v.clone() for k, v in model.state_dict().items()}


def engine_run(out_dir: Path):
    from safetensors.torch import load_file

    from trainlab.engine.scripting import RunRequest, run_training
    from trainlab.api.events import EvalResult
    from trainlab.runfolder.tail import read_events
    from trainlab.runfolder.index import RunDir

    params = {"epochs": EPOCHS, "batch_size": BATCH, "lr": LR, "seed": SEED, "device": "cpu", "precision": "fp32", "final_weights": "last"}  # fp32 as the raw loop
    data = out_dir / "in-memory.txt"  # the task keeps its data in memory; this only names it
    data.write_text("in-memory benchmark data\n")
    request = RunRequest(task="bench-classification", data=str(data), params=params, out=str(out_dir / f"run-{time.time_ns()}"))
    TrainingCpu.seconds = 0.0
    with Clock() as clock:
        result = run_training(request)
    assert result.status == "completed", result.error
    rd = RunDir(result.run_dir)
    val_losses = [e.loss for e in read_events(rd.metrics_jsonl) if isinstance(e, EvalResult)]
    weights = load_file(str(rd.model_dir / "model.safetensors"))
    samples = N_TRAIN * EPOCHS
    rates = (result.samples_per_second, samples / clock.wall, samples / TrainingCpu.seconds, samples / clock.cpu)
    return rates, val_losses, weights


def set_workload(samples: int, epochs: int) -> None:
    global N_TRAIN, EPOCHS, DATA
    N_TRAIN, EPOCHS = samples, epochs
    DATA = make_data()


def child(side: str) -> int:
    """One side's run, under callgrind (``--instructions``): counting is on in the training passes only."""
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TRAINLAB_HOME"] = str(Path(tmp) / "home")
        if side == "engine":
            from trainlab.pluginhost.host import registry

            assert registry().add_plugin(BenchPlugin(), "bench").status == "ok"
            engine_run(Path(tmp))
        else:
            raw_loop(Path(tmp))
    return 0


def count_instructions(args, say) -> int:
    """``--instructions``: each side in its own process under callgrind, twice, ABBA."""
    script = str(Path(__file__).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        runs = iter(range(10**9))

        def counted(side: str):
            def run() -> int:
                command = [sys.executable, script, "--child", side, "--samples", str(args.samples), "--epochs", str(args.epochs)]
                found = callgrind_region_instructions(command, str(Path(tmp) / f"callgrind.{side}.{next(runs)}"))
                if found is None:
                    raise SystemExit("--instructions needs valgrind (callgrind) and callgrind_control")
                return found
            return run

        counts = run_pairs({"raw": counted("raw"), "engine": counted("engine")}, args.instruction_pairs,
                           after=lambda pair, side, found: say(f"pair {pair + 1} {side:6}: {found:,} instructions in the training passes"))
    ratios = [raw / engine for raw, engine in zip(counts["raw"], counts["engine"])]
    per_side = {side: {"median": statistics.median(v), "spread_pct": round(100 * (max(v) - min(v)) / 2 / statistics.median(v), 3)}
                for side, v in counts.items()}
    summary = {
        "instruction_ratio": round(statistics.median(ratios), 4),
        "instruction_ratios": [round(r, 4) for r in ratios],
        "instructions": counts,
        "instructions_spread": per_side,
        "samples_per_epoch": args.samples,
        "epochs": args.epochs,
        "meaning": "raw loop's instructions over the engine's in the training passes (same work: above 1, the engine runs fewer)",
        "goal": {"instruction_ratio": ">= 0.98"},
    }
    say(f"engine/raw by instructions: {summary['instruction_ratio']:.4f} "
        f"(pairs {summary['instruction_ratios']}; run-to-run spread raw {per_side['raw']['spread_pct']}%, "
        f"engine {per_side['engine']['spread_pct']}%)")
    return emit("engine_overhead", args, summary)


def main() -> int:
    parser = bench_parser(__doc__, "one pair, one epoch of 512 samples")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1: steadiest on shared 2-core machines)")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under callgrind instead of timing (slow: a small workload, one process per side)")
    parser.add_argument("--instruction-pairs", type=int, default=2, help="with --instructions: runs of each side")
    parser.add_argument("--samples", type=int, default=None, help="training examples per epoch (default 4096; 256 with --instructions)")
    parser.add_argument("--epochs", type=int, default=None, help="epochs (default 3; 1 with --instructions)")
    parser.add_argument("--child", choices=("raw", "engine"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.pairs, args.instruction_pairs = 1, 1
        args.samples, args.epochs = args.samples or 512, args.epochs or 1
    say = speaker(args)
    torch.set_num_threads(max(1, args.threads))
    counting = bool(args.instructions or args.child)
    args.samples = args.samples or (256 if counting else N_TRAIN)
    args.epochs = args.epochs or (1 if counting else EPOCHS)
    if (args.samples, args.epochs) != (N_TRAIN, EPOCHS):
        set_workload(args.samples, args.epochs)
    if args.child:
        return child(args.child)
    if args.instructions:
        return count_instructions(args, say)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("TRAINLAB_HOME", str(Path(tmp) / "home"))
        from trainlab.pluginhost.host import registry

        record = registry().add_plugin(BenchPlugin(), "bench")
        assert record.status == "ok", record.message
        out = Path(tmp)
        engine_run(out)  # warm-up: imports, allocator, thread pools
        raw_loop(out)
        loss_diffs, weight_diffs, raws, engines = [], [], [], []
        results = run_pairs({"raw": lambda: raw_loop(out), "engine": lambda: engine_run(out)}, args.pairs)
        for pair, ((raw_rate, raw_losses, raw_w), (eng_rate, eng_losses, eng_w)) in enumerate(zip(results["raw"], results["engine"])):
            raws.append(raw_rate)
            engines.append(eng_rate)
            loss_diffs.append(max(abs(a - b) for a, b in zip(raw_losses, eng_losses)))
            weight_diffs.append(max((raw_w[k].float() - eng_w[k].float()).abs().max().item() for k in raw_w))
            say(
                f"pair {pair + 1}: training samples/s raw {raw_rate[0]:8.1f}  engine {eng_rate[0]:8.1f}  "
                f"ratio wall {eng_rate[0] / raw_rate[0]:.3f} cpu {eng_rate[2] / raw_rate[2]:.3f}  "
                f"(end to end wall {eng_rate[1] / raw_rate[1]:.3f} cpu {eng_rate[3] / raw_rate[3]:.3f})  val-loss diff {loss_diffs[-1]:.2e}"
            )
    column = {name: i for i, name in enumerate(["wall", "end_to_end", "cpu", "end_to_end_cpu"])}
    spreads = {name: ratio_summary([e[i] for e in engines], [r[i] for r in raws]) for name, i in column.items()}
    summary = {
        "ratio": spreads["wall"]["median"],
        "ratios": spreads["wall"]["ratios"],
        "ratio_spread": spreads["wall"],
        "ratio_cpu": spreads["cpu"]["median"],
        "ratio_cpu_spread": spreads["cpu"],
        "ratio_end_to_end": spreads["end_to_end"]["median"],
        "ratio_end_to_end_spread": spreads["end_to_end"],
        "ratio_end_to_end_cpu": spreads["end_to_end_cpu"]["median"],
        "ratio_end_to_end_cpu_spread": spreads["end_to_end_cpu"],
        "load_average": load_average(),
        "instruction_counters": instruction_counter(),
        "raw_samples_per_second": statistics.median(r[0] for r in raws),
        "engine_samples_per_second": statistics.median(e[0] for e in engines),
        "max_abs_loss_diff": max(loss_diffs),
        "max_abs_weight_diff": max(weight_diffs),
        "pairs": args.pairs,
        "threads": torch.get_num_threads(),
        "work": f"{EPOCHS} epochs x {N_TRAIN} samples of 3x{SIZE}x{SIZE}, batch {BATCH}, eval each epoch, final save",
        "goal": {"ratio": ">= 0.98", "max_abs_loss_diff": "<= 1e-5"},
    }
    say(f"engine/raw samples/s: wall {summary['ratio']:.3f} (+-{spreads['wall']['spread_pct']}%), "
        f"CPU {summary['ratio_cpu']:.3f} (+-{spreads['cpu']['spread_pct']}%), median of {args.pairs} pairs; "
        f"max val-loss diff {summary['max_abs_loss_diff']:.2e}; load average {summary['load_average']}")
    return emit("engine_overhead", args, summary)


if __name__ == "__main__":
    sys.exit(main())

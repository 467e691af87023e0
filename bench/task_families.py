"""Task families: TrainLab against a plain PyTorch script, per family, side by side.

Six entries, each the same model, data, seed, batch order, optimizer (AdamW,
no decay on biases and norms), warmup-linear schedule and gradient clipping
run through

  (a) a plain PyTorch script written in the bench: train, evaluate each
      epoch, save the final weights;
  (b) ``trainlab.engine.scripting.run_training`` on a task of that family: its
      evaluation through the family's accumulator (torchmetrics), run.json
      and the index, the checkpoints, eval.json, the fitted state and the
      exported model.

``regression`` and ``multilabel``: an MLP on in-memory generated features,
through bench-only tasks (``RegressionTask``, ``MultiLabelTask``).
``image-regression``, ``image-multilabel``, ``text-regression``,
``text-multilabel``: the built-in tasks on data the bench writes in their
documented formats (PNG tables, CSV texts), against the scripts of
``bench/builtin_families.py`` (small-cnn at 16 px; a BERT from a tiny config
saved as a model folder), with the recipe the task resolves by default
(its preset's learning rate and batch size; the tiny-bert preset's recipe
for the texts) and fewer epochs.

The runs go in alternating pairs (which goes first alternates too), after a
warm-up run of each.  Per entry: the median and spread (min, max) over pairs
of the training samples/s of both and of their ratio (wall time in the
training passes: data, forward, backward, optimizer, and for TrainLab its
callbacks and loss read-backs; both timed from an epoch's start to its
evaluation), the CPU-time ratio of the same passes (process CPU time, all
threads: steadier than wall time on a loaded machine), both ratios end to end
(whole runs: data, evaluation, checkpoints, export), the quality figure of
both on the validation split after the last epoch (regression: R^2 in the
target's units; multi-label: micro-F1 at threshold 0.5), computed by the
script itself for (a) and by TrainLab's accumulator for (b), and the largest
difference between the final weights (0: the two sides trained alike, bit for
bit).  Every ratio is TrainLab's figure over the script's: above 1, TrainLab
is faster or uses less CPU.

    python bench/task_families.py [--pairs 5] [--families image-regression,text-multilabel] [--quick] [--warmup 1]
                                  [--set KEY=VALUE ...] [--json]

``--quick``: a fifth of the work (the test's configuration; the figures are
then dominated by start-up).  ``--set`` passes an engine parameter to the
TrainLab side (``telemetry_every=0`` to see what the telemetry sampler
costs); the summary records them.

Goal: ratio >= 0.98 at equal or better quality (``quality_diff`` >= -1e-4).
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

import trainlab
from trainlab import DataSummary, MultiLabelTask, Param, RegressionTask, TaskSpec

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench's helpers, however this file is run
import builtin_families as builtin  # noqa: E402
from builtin_families import SideFigures  # noqa: E402
from pairs import bench_parser, callgrind_region_instructions, count_region, emit, run_pairs, speaker  # noqa: E402

N_TRAIN, N_VAL, FEATURES, HIDDEN, LABELS = 8192, 2048, 64, 768, 8
EPOCHS, BATCH, LR, SEED = 3, 128, 1e-3, 1234
SIZES = builtin.Sizes()  # the built-in entries' work
EXTRA_PARAMS: dict[str, str] = {}  # --set


def make_data(family: str):
    """Features and targets: a smooth non-linear function of the features (regression,
    in the hundreds), or labels each switched on by a different projection (multi-label)."""
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(N_TRAIN + N_VAL, FEATURES, generator=gen)
    proj = torch.randn(FEATURES, LABELS, generator=gen) / math.sqrt(FEATURES)
    hidden = torch.tanh(x @ proj)
    if family == "regression":
        y = 500 + 120 * hidden.sum(1) + 40 * hidden[:, 0] * hidden[:, 1] + 5 * torch.randn(len(x), generator=gen)
    else:
        y = (hidden + 0.1 * torch.randn(hidden.shape, generator=gen) > 0.35).float()
    return (x[:N_TRAIN], y[:N_TRAIN]), (x[N_TRAIN:], y[N_TRAIN:])


def make_model(outputs: int):
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.LayerNorm(HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, outputs),
    )  # fmt: skip


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


DATA: dict[str, Any] = {}


class _InMemoryTask:
    family = ""
    outputs = 1

    def prepare(self, data_path, ctx, label_names=None):
        (xt, yt), (xv, yv) = DATA[self.family]
        self.data = {"train": InMemory(xt, yt), "val": InMemory(xv, yv)}
        return self._summary(yt)

    def dataset(self, split):
        return self.data[split]

    def collate(self, items):
        return items

    def build_model(self, ctx):
        return make_model(self.outputs)

    def save_model(self, model, out_dir, ctx):
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out_dir / "model.safetensors"))


class BenchRegression(_InMemoryTask, RegressionTask):
    family, outputs = "regression", 1

    def _summary(self, targets):
        self.fit_target_scaling(targets.tolist())
        return DataSummary(label_names=[], counts={})

    def forward(self, model, batch):
        x, y = batch
        return model(x).squeeze(-1), y


class BenchMultiLabel(_InMemoryTask, MultiLabelTask):
    family, outputs = "multilabel", LABELS

    def _summary(self, targets):
        self.label_names = [f"l{j}" for j in range(LABELS)]
        return DataSummary(label_names=self.label_names, counts={})

    def forward(self, model, batch):
        x, y = batch
        return model(x), y


class BenchPlugin:
    @trainlab.hookimpl
    def trainlab_api_version(self):
        return "2.0"

    @trainlab.hookimpl
    def trainlab_tasks(self):
        return [
            TaskSpec(id="bench-regression", title="Bench regression", factory="__main__:BenchRegression", family="regression"),
            TaskSpec(
                id="bench-multilabel", title="Bench multi-label", factory="__main__:BenchMultiLabel", family="multilabel",
                params=(Param("threshold", "str", "0.5", "Decision threshold."),),
            ),
        ]  # fmt: skip


# -- the plain PyTorch script of the generated-feature entries ------------------------


def bench_params() -> dict[str, Any]:
    """What the generated-feature entries set; the rest is the engine's defaults."""
    return {"epochs": EPOCHS, "batch_size": BATCH, "lr": LR, "seed": SEED}


def plain_script(family: str, out_dir: Path) -> SideFigures:
    """What a careful person writes by hand for this family: same maths as the engine."""
    import random

    import numpy as np
    from safetensors.torch import save_file

    start, cpu_start = time.perf_counter(), time.process_time()
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    (xt, yt), (xv, yv) = DATA[family]
    regression = family == "regression"
    mean, std = builtin.target_scaling(family, yt)  # standardised targets, as RegressionTask does; figures in the target's units
    model = make_model(1 if regression else LABELS)
    values = builtin.recipe(f"bench-{family}", bench_params())  # the engine's defaults for the rest, as the run resolves them
    n_train, n_val = len(yt), len(yv)

    def batches_of(epoch: int) -> list:
        order = torch.randperm(n_train, generator=torch.Generator().manual_seed(SEED * 1_000_003 + epoch))
        return [order[i : i + BATCH] for i in range(0, n_train, BATCH)]

    def batch_at(split: str, idx):
        return (xt[idx], yt[idx]) if split == "train" else (xv[idx], yv[idx])

    val_batches = [torch.arange(i, min(i + BATCH, n_val)) for i in range(0, n_val, BATCH)]
    train_s, train_cpu, samples, quality = builtin.train_and_evaluate(
        family, model, values, batches_of, batch_at, val_batches, yv, mean, std, n_train
    )
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out_dir / "plain.safetensors"))
    return SideFigures(
        train_s, train_cpu, samples, time.perf_counter() - start, time.process_time() - cpu_start, quality,
        {k: v.detach().clone() for k, v in model.state_dict().items()},
    )  # fmt: skip


class PassTimer(trainlab.Callback):
    """Wall and process CPU time from each epoch's start to its evaluation: the training passes."""

    def __init__(self) -> None:
        self.seconds = self.cpu = 0.0
        self.samples = 0
        self._started: tuple[float, float] | None = None

    def on_epoch_start(self, state) -> None:
        count_region(True)  # under callgrind (--instructions): the training passes only
        self._started = (time.perf_counter(), time.process_time())

    def on_eval_start(self, state) -> None:
        if self._started is not None:
            self.seconds += time.perf_counter() - self._started[0]
            self.cpu += time.process_time() - self._started[1]
            self.samples = int(state.samples_seen)
            self._started = None
            count_region(False)


def trainlab_run(task_id: str, quality_metric: str, out_dir: Path, data: Path | None = None, params: dict | None = None) -> SideFigures:
    from safetensors.torch import load_file

    from trainlab.engine.scripting import RunRequest, run_training
    from trainlab.runfolder.index import RunDir

    if data is None:  # the bench-only tasks keep their data in memory; this only names it
        data = out_dir / "in-memory.txt"
        data.write_text("in-memory benchmark data\n")
    if params is None:
        params = bench_params()
    # fp32 like the scripts: auto would train in bf16 on a CPU with native bfloat16
    params = {**params, "device": "cpu", "precision": "fp32", "final_weights": "last", **EXTRA_PARAMS}
    request = RunRequest(task=task_id, data=str(data), params=params, out=str(out_dir / f"run-{time.time_ns()}"))
    timer = PassTimer()
    start, cpu_start = time.perf_counter(), time.process_time()
    result = run_training(request, callbacks=[timer])
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    assert result.status == "completed", result.error
    weights = load_file(str(RunDir(result.run_dir).model_dir / "model.safetensors"))
    return SideFigures(timer.seconds, timer.cpu, timer.samples, seconds, cpu, float(result.metrics[quality_metric]), weights)


# -- the family entries -------------------------------------------------------------


@dataclass(frozen=True)
class FamilyEntry:
    """One family measured: how to run each side, and what quality means for it."""

    name: str
    family: str
    quality: str  # the metric both sides report
    plain: Callable[[Path], SideFigures]
    trainlab: Callable[[Path], SideFigures]
    available: Callable[[], str]  # "" when it can run here, else why not
    setup: Callable[[Path], None] = lambda out: None  # writes the entry's data once, before its runs
    recipe: Callable[[], dict] = lambda: {}
    batch_order: str = "identical: torch.randperm seeded as Task.batch_order seeds it"


def _always() -> str:
    return ""


def _installed(task_id: str) -> Callable[[], str]:
    def check() -> str:
        from trainlab.pluginhost.host import registry

        return "" if task_id in registry().tasks else f"task {task_id} is not in this TrainLab"

    return check


class BuiltInEntry:
    """A built-in task and its plain script: the data and (texts) the model folder, written once."""

    def __init__(self, task_id: str, family: str, modality: str):
        self.task_id, self.family, self.modality = task_id, family, modality
        self.data: Path | None = None
        self.overrides: dict[str, Any] = {}

    def setup(self, out: Path) -> None:
        if self.data is not None:
            return
        root = out / self.task_id
        common = {"epochs": SIZES.epochs, "seed": SEED}
        if self.modality == "image":
            self.data = builtin.write_image_data(root / "data", self.family, SIZES)
            # small-cnn's preset (lr, batch size) at a small image size; one loader process on both sides
            self.overrides = {**common, "model": "small-cnn", "image_size": builtin.IMAGE_SIDE, "num_workers": "0"}
        else:
            from trainlab.api.params import ENGINE_PARAMS, resolve
            from trainlab.pluginhost.host import registry

            self.data = builtin.write_text_data(root / "data", self.family, SIZES)
            labels = builtin.label_names_of(self.data / "train.csv")
            folder = builtin.write_text_model(root / "tiny-bert-model", self.family, labels)
            # the tiny-bert preset's recipe for a model trained from scratch, on the bench's tinier BERT
            preset = resolve(registry().task(self.task_id).spec, ENGINE_PARAMS, {}, {"model": "tiny-bert"})
            self.overrides = {**common, "model": str(folder), **{k: preset[k] for k in ("lr", "warmup_ratio", "batch_size")}}

    def recipe(self) -> dict[str, Any]:
        return builtin.recipe(self.task_id, self.overrides)

    def plain(self, out: Path) -> SideFigures:
        script = builtin.plain_image_script if self.modality == "image" else builtin.plain_text_script
        return script(self.family, self.data, self.recipe(), out)

    def trainlab(self, out: Path, metric: str) -> SideFigures:
        return trainlab_run(self.task_id, metric, out, data=self.data, params=dict(self.overrides))

    def entry(self) -> FamilyEntry:
        metric = "r2" if self.family == "regression" else "micro_f1"
        order = (
            "identical: torch.randperm seeded as Task.batch_order seeds it; validation in file order"
            if self.modality == "image"
            else "identical: the task's length-grouped batches (trainlab_plugins.text.batching); validation sorted by length"
        )
        return FamilyEntry(
            self.task_id, self.family, metric, self.plain, lambda out: self.trainlab(out, metric), _installed(self.task_id),
            setup=self.setup, recipe=self.recipe, batch_order=order,
        )  # fmt: skip


ENTRIES = [
    FamilyEntry(
        "regression", "regression", "r2",
        lambda out: plain_script("regression", out), lambda out: trainlab_run("bench-regression", "r2", out), _always,
        recipe=lambda: builtin.recipe("bench-regression", bench_params()),
    ),
    FamilyEntry(
        "multilabel", "multilabel", "micro_f1",
        lambda out: plain_script("multilabel", out), lambda out: trainlab_run("bench-multilabel", "micro_f1", out), _always,
        recipe=lambda: builtin.recipe("bench-multilabel", bench_params()),
    ),
    *(
        BuiltInEntry(task_id, family, modality).entry()
        for task_id, family, modality in (
            ("image-regression", "regression", "image"),
            ("image-multilabel", "multilabel", "image"),
            ("text-regression", "regression", "text"),
            ("text-multilabel", "multilabel", "text"),
        )
    ),
]  # fmt: skip

RECIPE_KEYS = ("model", "epochs", "batch_size", "lr", "weight_decay", "warmup_ratio", "schedule", "clip_grad_norm", "seed", "image_size")


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def weight_diff(plain: dict[str, torch.Tensor], engine: dict[str, torch.Tensor]) -> float | None:
    common = [k for k in plain if k in engine and plain[k].shape == engine[k].shape]
    if not common:
        return None
    return max((plain[k].double() - engine[k].double()).abs().max().item() for k in common)


def say(*parts: Any) -> None:  # replaced by main: silent with --json
    print(*parts, file=sys.stderr, flush=True)


def measure(entry: FamilyEntry, pairs: int, warmup: int, out: Path) -> dict[str, Any]:
    entry.setup(out)
    for _ in range(warmup):  # imports, allocator, thread pools, the page cache of the images
        entry.trainlab(out)
        entry.plain(out)
    rows: dict[str, list[float]] = {key: [] for key in ("plain", "trainlab", "ratio", "cpu", "e2e", "e2e_cpu", "q_plain", "q_engine")}
    weight_diffs: list[float] = []
    results = run_pairs({"plain": lambda: entry.plain(out), "trainlab": lambda: entry.trainlab(out)}, pairs)
    for pair, (p, t) in enumerate(zip(results["plain"], results["trainlab"])):
        p_rate, t_rate = p.samples / p.train_seconds, t.samples / t.train_seconds
        rows["plain"].append(p_rate)
        rows["trainlab"].append(t_rate)
        rows["ratio"].append(t_rate / p_rate)
        rows["cpu"].append(p.train_cpu / t.train_cpu)
        rows["e2e"].append(p.seconds / t.seconds)
        rows["e2e_cpu"].append(p.cpu / t.cpu)
        rows["q_plain"].append(p.quality)
        rows["q_engine"].append(t.quality)
        diff = weight_diff(p.weights, t.weights)
        if diff is not None:
            weight_diffs.append(diff)
        say(
            f"{entry.name} pair {pair + 1}: training samples/s plain {p_rate:8.1f}  trainlab {t_rate:8.1f}  "
            f"ratio {rows['ratio'][-1]:.3f} (CPU {rows['cpu'][-1]:.3f}; end to end {rows['e2e'][-1]:.3f}, CPU {rows['e2e_cpu'][-1]:.3f})  "
            f"{entry.quality} plain {p.quality:.4f} trainlab {t.quality:.4f}  load {os.getloadavg()[0]:.1f}"
        )
    quality_diff = statistics.median(rows["q_engine"]) - statistics.median(rows["q_plain"])
    recipe = entry.recipe()
    return {
        "family": entry.family,
        "quality_metric": entry.quality,
        "quality_plain": spread(rows["q_plain"]),
        "quality_trainlab": spread(rows["q_engine"]),
        "quality_diff": quality_diff,
        "samples_per_second_plain": spread(rows["plain"]),
        "samples_per_second_trainlab": spread(rows["trainlab"]),
        "ratio": spread(rows["ratio"]),
        "ratios": rows["ratio"],
        "cpu_ratio": spread(rows["cpu"]),
        "ratio_end_to_end": spread(rows["e2e"]),
        "cpu_ratio_end_to_end": spread(rows["e2e_cpu"]),
        "max_abs_weight_diff": max(weight_diffs) if weight_diffs else None,
        "recipe": {k: recipe[k] for k in RECIPE_KEYS if k in recipe},
        "batch_order": entry.batch_order,
        "goal_met": statistics.median(rows["ratio"]) >= 0.98 and quality_diff >= -1e-4,
    }


def configure(quick: bool, rows: int = 0, epochs: int = 0) -> None:
    """``--quick``: a fifth of the work, for the test; ``rows``, ``epochs``: the
    generated-feature entries' training rows and epochs (0: as configured)."""
    global N_TRAIN, N_VAL, HIDDEN, EPOCHS, SIZES
    if quick:
        N_TRAIN, N_VAL, HIDDEN, EPOCHS = 1024, 256, 128, 2
        SIZES = builtin.Sizes(images_train=96, images_val=32, texts_train=192, texts_val=64, epochs=2)
    N_TRAIN, EPOCHS = rows or N_TRAIN, epochs or EPOCHS


def child(entry: FamilyEntry, side: str) -> int:
    """One side of one entry, once (``--instructions`` runs this under callgrind)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        entry.setup(out)
        (entry.plain if side == "plain" else entry.trainlab)(out)
    return 0


# Under callgrind the training passes run several hundred to a thousand times
# slower than natively (measured here: the full-size regression entry, whose
# passes take about 1.7 s natively, ran 44 minutes under callgrind, start-up
# included), so TrainLab's intervals counted in seconds
# would fire far more often per step than they do for a user: a loss read-back
# at every step instead of every ~28, a telemetry sample every few steps, and
# the 10-minute checkpoint three times inside the passes (its SHA-256 alone was
# 4.8 % of the count).  The child runs get them scaled by this factor, so that
# they fire at the same steps as natively.
CALLGRIND_SLOWDOWN = 1000
INSTRUCTIONS_TIMEOUT = 4 * 3600  # seconds per side under callgrind
TIMED_PARAMS = {"log_interval": 0.25, "telemetry_every": 5.0, "checkpoint_every_minutes": 10.0}  # the engine's defaults


def callgrind_params() -> dict[str, str]:
    """The engine's timed intervals (--set values, else the defaults) scaled by
    CALLGRIND_SLOWDOWN, within each parameter's maximum (telemetry_every: 3600 s)."""
    from trainlab.api.params import ENGINE_PARAMS

    declared = {p.name: p for p in ENGINE_PARAMS if p.name in TIMED_PARAMS}
    defaults = {name: p.default for name, p in declared.items()}
    assert defaults == TIMED_PARAMS, f"the engine's timed defaults changed: {defaults}"  # keep this table true
    return {
        name: str(min(float(EXTRA_PARAMS.get(name, default)) * CALLGRIND_SLOWDOWN, declared[name].maximum))
        for name, default in TIMED_PARAMS.items()
    }


def count_instructions(entries: list[FamilyEntry], args) -> dict[str, Any]:
    """``--instructions``: per entry, each side in its own process under callgrind, ABBA."""
    script = str(Path(__file__).resolve())
    timed = callgrind_params()
    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for entry in entries:
            runs = iter(range(10**9))

            def counted(side: str, entry: FamilyEntry = entry):
                def run() -> int:
                    command = [sys.executable, script, "--child", side, "--families", entry.name,
                               "--threads", str(args.threads), *(["--quick"] if args.quick else []),
                               f"--rows={args.rows}", f"--epochs={args.epochs}",
                               *(f"--set={k}={v}" for k, v in {**EXTRA_PARAMS, **timed}.items())]  # fmt: skip
                    # The full size runs for most of an hour a side under callgrind: past pairs' default timeout.
                    got = callgrind_region_instructions(command, str(Path(tmp) / f"callgrind.{entry.name}.{side}.{next(runs)}"),
                                                        timeout=INSTRUCTIONS_TIMEOUT)
                    if got is None:
                        raise SystemExit("--instructions needs valgrind (callgrind) and callgrind_control")
                    return got
                return run

            counts = run_pairs({"plain": counted("plain"), "trainlab": counted("trainlab")}, args.instruction_pairs,
                               after=lambda pair, side, got, name=entry.name: say(
                                   f"{name} pair {pair + 1} {side:8}: {got:,} instructions in the training passes"))
            ratios = [p / t for p, t in zip(counts["plain"], counts["trainlab"])]
            found[entry.name] = {
                "instruction_ratio": round(statistics.median(ratios), 4),
                "instruction_ratios": [round(r, 4) for r in ratios],
                "instructions": counts,
                "spread_pct": {side: round(100 * (max(v) - min(v)) / 2 / statistics.median(v), 3) for side, v in counts.items()},
                "goal_met": statistics.median(ratios) >= 0.98,
            }
    return found


def main() -> int:
    global say
    parser = bench_parser(__doc__, "a fifth of the work (the test's configuration; with --families one entry)")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--families", default="", help="comma-separated entry names (default: every available one)")
    parser.add_argument("--rows", type=int, default=0, help="the generated-feature entries' training rows (default 8192; --quick 1024)")
    parser.add_argument("--epochs", type=int, default=0, help="the generated-feature entries' epochs (default 3; --quick 2)")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up runs of each side before the pairs")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1: steadiest on shared 2-core machines)")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="an engine parameter for the TrainLab side")
    parser.add_argument("--instructions", action="store_true",
                        help="count the instructions of the training passes under callgrind instead of timing them (slow)")
    parser.add_argument("--instruction-pairs", type=int, default=1, help="with --instructions: runs of each side per entry")
    parser.add_argument("--child", choices=("plain", "trainlab"), help=argparse.SUPPRESS)  # one side, once (under callgrind)
    args = parser.parse_args()
    say = speaker(args)
    for item in args.sets:
        key, _, value = item.partition("=")
        EXTRA_PARAMS[key.strip()] = value
    configure(args.quick, args.rows, args.epochs)
    torch.set_num_threads(max(1, args.threads))
    wanted = {name for name in args.families.split(",") if name}
    unknown = wanted - {entry.name for entry in ENTRIES}
    if unknown:
        parser.error(f"--families: unknown {', '.join(sorted(unknown))} (known: {', '.join(e.name for e in ENTRIES)})")
    summary: dict[str, Any] = {"families": {}, "skipped": {}, "load_average_start": list(os.getloadavg())}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("TRAINLAB_HOME", str(Path(tmp) / "home"))
        from trainlab.pluginhost.host import registry

        record = registry().add_plugin(BenchPlugin(), "bench")
        assert record.status == "ok", record.message
        DATA.update({family: make_data(family) for family in ("regression", "multilabel")})
        if args.child:
            (entry,) = [e for e in ENTRIES if e.name in wanted]
            return child(entry, args.child)
        if args.instructions:
            chosen = [e for e in ENTRIES if (not wanted or e.name in wanted) and not e.available()]
            summary["instructions"] = count_instructions(chosen, args)
            summary.update(quick=args.quick, rows=N_TRAIN, epochs=EPOCHS, trainlab_params=dict(EXTRA_PARAMS),
                           timed_params_under_callgrind=callgrind_params(), callgrind_slowdown=CALLGRIND_SLOWDOWN,
                           threads=torch.get_num_threads(),
                           meaning="the script's instructions over TrainLab's in the training passes (above 1: TrainLab runs fewer)",
                           goal={"instruction_ratio": ">= 0.98"})  # fmt: skip
            for name, figures in summary["instructions"].items():
                say(f"{name}: script/trainlab instructions {figures['instruction_ratio']:.4f} "
                    f"(pairs {figures['instruction_ratios']}; spread {figures['spread_pct']})")
            return emit("task_families", args, summary)
        for entry in ENTRIES:
            if wanted and entry.name not in wanted:
                continue
            reason = entry.available()
            if reason:
                summary["skipped"][entry.name] = reason
                continue
            summary["families"][entry.name] = measure(entry, args.pairs, args.warmup, Path(tmp))
    summary.update(
        pairs=args.pairs,
        quick=args.quick,
        trainlab_params=dict(EXTRA_PARAMS),
        threads=torch.get_num_threads(),
        cpus=os.cpu_count(),
        load_average_end=list(os.getloadavg()),
        work={
            "regression, multilabel": f"{EPOCHS} epochs x {N_TRAIN} rows of {FEATURES} features, MLP {HIDDEN} hidden, batch {BATCH}",
            "image-*": f"{SIZES.epochs} epochs x {SIZES.images_train} PNGs ({builtin.IMAGE_SIDE + 4} px, trained at {builtin.IMAGE_SIDE}), "
            f"{SIZES.images_val} validation, small-cnn",
            "text-*": f"{SIZES.epochs} epochs x {SIZES.texts_train} texts, {SIZES.texts_val} validation, BERT {builtin.TINY_TEXT_BERT}",
            "each run": "evaluation each epoch, final save",
        },
        goal={"ratio": ">= 0.98", "quality_diff": ">= -1e-4 (equal or better)"},
    )
    for name, figures in summary["families"].items():
        say(
            f"{name}: trainlab/plain samples/s {figures['ratio']['median']:.3f} (min {figures['ratio']['min']:.3f}, "
            f"max {figures['ratio']['max']:.3f}), CPU {figures['cpu_ratio']['median']:.3f}; "
            f"end to end {figures['ratio_end_to_end']['median']:.3f}, CPU {figures['cpu_ratio_end_to_end']['median']:.3f}; "
            f"{figures['quality_metric']} plain {figures['quality_plain']['median']:.4f} "
            f"trainlab {figures['quality_trainlab']['median']:.4f}; weights differ by {figures['max_abs_weight_diff']}; "
            f"goal {'met' if figures['goal_met'] else 'NOT met'}"
        )
    for name, reason in summary["skipped"].items():
        say(f"{name}: skipped ({reason})")
    say(f"load average {summary['load_average_start']} -> {summary['load_average_end']} on {summary['cpus']} CPUs")
    return emit("task_families", args, summary)


if __name__ == "__main__":
    sys.exit(main())

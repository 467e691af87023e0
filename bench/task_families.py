"""Task families: TrainLab against a plain PyTorch script, per family, side by side.

For each family entry (regression and multi-label on generated data, and
the built-in tasks of those families when this TrainLab has them) the same
model, data, seed, batch order, optimizer (AdamW, no decay on biases and
norms), warmup-linear schedule and gradient clipping run through

  (a) a plain PyTorch script written here: train, evaluate each epoch, save
      the final weights as safetensors;
  (b) ``trainlab.engine.runner.run_training`` on a task of that family
      (``RegressionTask``, ``MultiLabelTask``): its evaluation through the
      family's accumulator (torchmetrics), run.json and the index, the
      checkpoints, eval.json, the fitted state and the exported model.

in alternating pairs (which goes first alternates too).  For each family it
reports the median and the spread (min, max) over pairs of the training
samples/s of both and of their ratio (time in the training passes: data,
forward, backward, optimizer, and for TrainLab its callbacks and loss
read-backs), the end-to-end ratio (whole runs), and the quality figure of
both on the validation split after the last epoch (regression: R^2 in the
target's units; multi-label: micro-F1 at threshold 0.5), computed by the
script itself for (a) and by TrainLab's accumulator for (b), plus the
largest difference between the final weights.

    python bench/task_families.py [--pairs 5] [--families regression,multilabel] [--set KEY=VALUE ...] [--json]

``--set`` passes an engine parameter to the TrainLab side (``telemetry_every=0``
to see what the telemetry sampler costs); the summary records them.

Goal: ratio >= 0.98 at equal or better quality (``quality_diff`` >= -1e-4).
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
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

N_TRAIN, N_VAL, FEATURES, HIDDEN, LABELS = 8192, 2048, 64, 768, 8
EPOCHS, BATCH, LR, SEED = 3, 128, 1e-3, 1234
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


# -- the plain PyTorch script -------------------------------------------------------


def r2_score(pred: torch.Tensor, target: torch.Tensor) -> float:
    pred, target = pred.double(), target.double()
    return float(1 - ((target - pred) ** 2).sum() / ((target - target.mean()) ** 2).sum())


def micro_f1(logits: torch.Tensor, target: torch.Tensor) -> float:
    pred = (logits.sigmoid() >= 0.5).int()
    target = target.int()
    tp = int(((pred == 1) & (target == 1)).sum())
    fp = int(((pred == 1) & (target == 0)).sum())
    fn = int(((pred == 0) & (target == 1)).sum())
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def plain_script(family: str, out_dir: Path):
    """What a careful person writes by hand for this family: same maths as the engine."""
    import random

    import numpy as np
    from safetensors.torch import save_file

    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    (xt, yt), (xv, yv) = DATA[family]
    regression = family == "regression"
    if regression:  # standardised targets, as RegressionTask does; figures in the target's units
        mean, std = yt.double().mean().item(), yt.double().std(unbiased=False).item()
    model = make_model(1 if regression else LABELS)
    decay = [p for n, p in model.named_parameters() if p.ndim > 1 and not n.endswith(".bias")]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim > 1 and not n.endswith(".bias"))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=LR)
    total = math.ceil(N_TRAIN / BATCH) * EPOCHS
    warmup = int(round(total * 0.06))

    def factor(step):
        if warmup and step < warmup:
            return (step + 1) / (warmup + 1)
        return max(0.0, 1.0 - min(1.0, (step - warmup) / max(1, total - warmup)))

    def loss_of(out, y):
        if regression:
            return torch.nn.functional.mse_loss(out.squeeze(-1).float(), (y.float() - mean) / std)
        return torch.nn.functional.binary_cross_entropy_with_logits(out.float(), y.float())

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    start = time.perf_counter()
    train_seconds, quality = 0.0, float("nan")
    for epoch in range(1, EPOCHS + 1):
        epoch_start = time.perf_counter()
        model.train()
        order = torch.randperm(N_TRAIN, generator=torch.Generator().manual_seed(SEED * 1_000_003 + epoch))
        for i in range(0, N_TRAIN, BATCH):
            idx = order[i : i + BATCH]
            loss = loss_of(model(xt[idx]), yt[idx])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            sched.step()
        train_seconds += time.perf_counter() - epoch_start
        model.eval()
        with torch.inference_mode():
            outputs = torch.cat([model(xv[i : i + BATCH]) for i in range(0, N_VAL, BATCH)]).float()
        quality = r2_score(outputs.squeeze(-1) * std + mean, yv) if regression else micro_f1(outputs, yv)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out_dir / "plain.safetensors"))
    seconds = time.perf_counter() - start
    return (N_TRAIN * EPOCHS / train_seconds, N_TRAIN * EPOCHS / seconds), quality, {k: v.clone() for k, v in model.state_dict().items()}


def trainlab_run(task_id: str, quality_metric: str, out_dir: Path):
    from safetensors.torch import load_file

    from trainlab.engine.runner import RunRequest, run_training
    from trainlab.runs import RunDir

    params = {"epochs": EPOCHS, "batch_size": BATCH, "lr": LR, "seed": SEED, "device": "cpu", "final_weights": "last", **EXTRA_PARAMS}
    data = out_dir / "in-memory.txt"  # the task keeps its data in memory; this only names it
    data.write_text("in-memory benchmark data\n")
    request = RunRequest(task=task_id, data=str(data), params=params, out=str(out_dir / f"run-{time.time_ns()}"))
    start = time.perf_counter()
    result = run_training(request)
    seconds = time.perf_counter() - start
    assert result.status == "completed", result.error
    weights = load_file(str(RunDir(result.run_dir).model_dir / "model.safetensors"))
    return (result.samples_per_second, N_TRAIN * EPOCHS / seconds), float(result.metrics[quality_metric]), weights


# -- the family entries -------------------------------------------------------------


@dataclass(frozen=True)
class FamilyEntry:
    """One family measured: how to run each side, and what quality means for it."""

    name: str
    family: str
    quality: str  # the metric both sides report
    plain: Callable[[Path], tuple]
    trainlab: Callable[[Path], tuple]
    available: Callable[[], str]  # "" when it can run here, else why not


def _always() -> str:
    return ""


def _built_in(task_id: str) -> Callable[[], str]:
    def check() -> str:
        from trainlab.pluginhost import registry

        if task_id not in registry().tasks:
            return f"task {task_id} is not in this TrainLab"
        return f"task {task_id} is installed, but this bench has no plain-script counterpart for it yet"

    return check


ENTRIES = [
    FamilyEntry(
        "regression", "regression", "r2",
        lambda out: plain_script("regression", out), lambda out: trainlab_run("bench-regression", "r2", out), _always,
    ),
    FamilyEntry(
        "multilabel", "multilabel", "micro_f1",
        lambda out: plain_script("multilabel", out), lambda out: trainlab_run("bench-multilabel", "micro_f1", out), _always,
    ),
    *(
        FamilyEntry(task_id, family, metric, None, None, _built_in(task_id))
        for task_id, family, metric in (
            ("image-regression", "regression", "r2"),
            ("text-regression", "regression", "r2"),
            ("image-multilabel", "multilabel", "micro_f1"),
            ("text-multilabel", "multilabel", "micro_f1"),
        )
    ),
]  # fmt: skip


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(entry: FamilyEntry, pairs: int, out: Path) -> dict[str, Any]:
    entry.trainlab(out)  # warm-up: imports, allocator, thread pools
    entry.plain(out)
    ratios, e2e, plains, engines, q_plain, q_engine, weight_diffs = [], [], [], [], [], [], []
    for pair in range(pairs):
        order = [("plain", entry.plain), ("trainlab", entry.trainlab)]
        if pair % 2:
            order.reverse()
        results = {name: fn(out) for name, fn in order}
        (p_rate, p_quality, p_w), (t_rate, t_quality, t_w) = results["plain"], results["trainlab"]
        plains.append(p_rate[0])
        engines.append(t_rate[0])
        ratios.append(t_rate[0] / p_rate[0])
        e2e.append(t_rate[1] / p_rate[1])
        q_plain.append(p_quality)
        q_engine.append(t_quality)
        weight_diffs.append(max((p_w[k].float() - t_w[k].float()).abs().max().item() for k in p_w))
        print(
            f"{entry.name} pair {pair + 1}: training samples/s plain {p_rate[0]:8.1f}  trainlab {t_rate[0]:8.1f}  "
            f"ratio {ratios[-1]:.3f} (end to end {e2e[-1]:.3f})  {entry.quality} plain {p_quality:.4f} trainlab {t_quality:.4f}",
            file=sys.stderr,
        )
    quality_diff = statistics.median(q_engine) - statistics.median(q_plain)
    return {
        "family": entry.family,
        "quality_metric": entry.quality,
        "quality_plain": spread(q_plain),
        "quality_trainlab": spread(q_engine),
        "quality_diff": quality_diff,
        "samples_per_second_plain": spread(plains),
        "samples_per_second_trainlab": spread(engines),
        "ratio": spread(ratios),
        "ratios": ratios,
        "ratio_end_to_end": spread(e2e),
        "max_abs_weight_diff": max(weight_diffs),
        "goal_met": statistics.median(ratios) >= 0.98 and quality_diff >= -1e-4,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--families", default="", help="comma-separated entry names (default: every available one)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1: steadiest on shared 2-core machines)")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="an engine parameter for the TrainLab side")
    parser.add_argument("--json", action="store_true", help="print only the JSON summary on stdout")
    args = parser.parse_args()
    for item in args.sets:
        key, _, value = item.partition("=")
        EXTRA_PARAMS[key.strip()] = value
    torch.set_num_threads(max(1, args.threads))
    wanted = {name for name in args.families.split(",") if name}
    summary: dict[str, Any] = {"families": {}, "skipped": {}}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("TRAINLAB_HOME", str(Path(tmp) / "home"))
        from trainlab.pluginhost import registry

        record = registry().add_plugin(BenchPlugin(), "bench")
        assert record.status == "ok", record.message
        DATA.update({family: make_data(family) for family in ("regression", "multilabel")})
        for entry in ENTRIES:
            if wanted and entry.name not in wanted:
                continue
            reason = entry.available()
            if reason:
                summary["skipped"][entry.name] = reason
                continue
            summary["families"][entry.name] = measure(entry, args.pairs, Path(tmp))
    summary.update(
        pairs=args.pairs,
        trainlab_params=dict(EXTRA_PARAMS),
        threads=torch.get_num_threads(),
        load_average=os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        work=f"{EPOCHS} epochs x {N_TRAIN} rows of {FEATURES} features, MLP {HIDDEN} hidden, batch {BATCH}, eval each epoch, final save",
        goal={"ratio": ">= 0.98", "quality_diff": ">= -1e-4 (equal or better)"},
    )
    if not args.json:
        for name, figures in summary["families"].items():
            print(
                f"{name}: trainlab/plain samples/s {figures['ratio']['median']:.3f} (min {figures['ratio']['min']:.3f}, "
                f"max {figures['ratio']['max']:.3f}); {figures['quality_metric']} plain {figures['quality_plain']['median']:.4f} "
                f"trainlab {figures['quality_trainlab']['median']:.4f}; goal {'met' if figures['goal_met'] else 'NOT met'}"
            )
        for name, reason in summary["skipped"].items():
            print(f"{name}: skipped ({reason})")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

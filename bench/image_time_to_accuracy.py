"""Image: the time to a good model, TrainLab's defaults against the plain torchvision script a user would write.

Data: generated 32 px shapes (``make_shapes_dataset``: 6 classes, 240 train
and 60 validation images each: 1,440 / 360, the size of a small digits
set), written as ``train/`` and ``val/`` JPEG folders.

(a) the plain script, written here as a user writes it: torchvision
    ``ImageFolder`` with ``ToTensor`` and ``Normalize``, three conv blocks
    (32, 64, 128 channels, each conv-ReLU-max-pool) and a 128-unit hidden
    layer, Adam at 1e-3, batch 32, ``--epochs`` epochs (5), no augmentation,
    two loader workers; validation accuracy after each epoch.
(b) TrainLab: ``run_training`` on ``image-classification`` with its
    defaults (only ``device=cpu`` and ``--set`` values given here), stopped
    as soon as a validation accuracy reaches the target.

The target is the plain script's final accuracy (median over its runs so
far: a warm-up run of the script sets the first one). Both sides count
training time only (the training passes, from each epoch's start to its
evaluation; evaluation is reported beside it): ``time_to_target`` is that
time summed up to the epoch whose evaluation first reached the target.
``ratio`` = TrainLab's time to the target over the script's time for all
its epochs (goal <= 2/3), median over ``--pairs`` alternating pairs, with
its spread; the training thread's CPU time is reported beside the wall time
(the loader workers' CPU is not in it: it is the main thread's own), and
the load average. ``--set`` passes parameters to the TrainLab side, to
measure one lever at a time (``--set batch_size=128 --set lr=0.006``,
``--set model=...``, ``--set num_workers=0``).

``--levers``: every pair also runs TrainLab with the defaults of before
the speed levers (``BEFORE``: model small-cnn, nothing kept in memory, no
channels_last), with each lever alone on top of them, and with the defaults
of now less one lever at a time (``LEVERS``); the JSON gives each one's ratio, time to the target, seconds per training
epoch and per evaluation, and final accuracy under ``levers``; ``ratio``
stays the figure of the defaults (plus ``--set``).

``--backbone``: a 224 px run of a pretrained-size backbone (torchvision
resnet18 from its constructor, random weights: no download) on generated
224 px images, the defaults before the levers against now, alternating;
seconds per training epoch after the first (``--set`` applies to both).

    python bench/image_time_to_accuracy.py [--pairs 3] [--epochs 5] [--set KEY=VALUE ...] [--levers] [--quick] [--json]
    python bench/image_time_to_accuracy.py --backbone [--pairs 2] [--quick] [--json]

The last line printed is one JSON object.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from pairs import bench_parser, emit, load_average, ratio_summary, run_pairs, speaker, spread

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # trainlab_dev, the data generators: not installed

CLASSES, TRAIN_PER_CLASS, VAL_PER_CLASS, SIZE = 6, 240, 60, 32
SEED = 0
# What the defaults were before the levers; each lever alone on top of that,
# and the defaults of now less one lever at a time.
BEFORE = {"model": "small-cnn", "memory_cache": "off", "channels_last": "false"}
LEVERS = {
    "before": BEFORE,
    "model_auto": {**BEFORE, "model": "auto", "batch_size": "64", "lr": "0.003"},  # the architecture, small-cnn's recipe
    "memory_cache": {**BEFORE, "memory_cache": "auto"},
    "channels_last": {**BEFORE, "channels_last": "true"},
    "batch_32_lr_0.002": {**BEFORE, "batch_size": "32", "lr": "0.002"},
    "batch_128_lr_0.006_one_cycle": {**BEFORE, "batch_size": "128", "lr": "0.006", "schedule": "cosine", "warmup_ratio": "0.3"},
    "defaults_without_memory_cache": {"memory_cache": "off"},
    "defaults_without_channels_last": {"channels_last": "false"},
    "defaults_with_batch_64_lr_0.003": {"batch_size": "64", "lr": "0.003"},
}
BACKBONE = {"model": "resnet18", "pretrained": "false", "image_size": "224", "epochs": "2", "batch_size": "16"}
BACKBONE_CLASSES, BACKBONE_TRAIN, BACKBONE_VAL, BACKBONE_SIZE = 4, 24, 6, 256


def make_data(root: Path) -> Path:
    from trainlab_dev.image_samples import make_shapes_dataset

    return make_shapes_dataset(root, classes=CLASSES, size=SIZE, seed=SEED, splits={"train": TRAIN_PER_CLASS, "val": VAL_PER_CLASS})


def plain_script(data: Path, epochs: int) -> dict:
    """What a user writes with torchvision, timed per epoch."""
    from torch import nn
    from torchvision import datasets, transforms

    torch.manual_seed(SEED)
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))])
    train = datasets.ImageFolder(str(data / "train"), tf)
    val = datasets.ImageFolder(str(data / "val"), tf)
    train_loader = torch.utils.data.DataLoader(train, batch_size=32, shuffle=True, num_workers=2, persistent_workers=True)
    val_loader = torch.utils.data.DataLoader(val, batch_size=256, num_workers=2, persistent_workers=True)

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))

    model = nn.Sequential(
        block(3, 32), block(32, 64), block(64, 128), nn.Flatten(),
        nn.Linear(128 * (SIZE // 8) ** 2, 128), nn.ReLU(), nn.Linear(128, len(train.classes)),
    )  # fmt: skip
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    epochs_out = []
    for _ in range(epochs):
        wall, cpu = time.perf_counter(), time.thread_time()
        model.train()
        for x, y in train_loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        train_wall, train_cpu = time.perf_counter() - wall, time.thread_time() - cpu
        wall = time.perf_counter()
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum().item()
        epochs_out.append({"train_s": train_wall, "train_cpu_s": train_cpu, "eval_s": time.perf_counter() - wall,
                           "accuracy": correct / len(val)})  # fmt: skip
    return {"epochs": epochs_out}


def trainlab_run(data: Path, out: Path, target: float, sets: dict[str, str]) -> dict:
    import trainlab
    from trainlab.api.callbacks import RunControl
    from trainlab.engine.scripting import RunRequest, run_training

    control = RunControl()
    epochs_out: list[dict] = []

    class Probe(trainlab.Callback):
        def on_epoch_start(self, state):
            self._wall, self._cpu = time.perf_counter(), time.thread_time()

        def on_eval_start(self, state):
            epochs_out.append({"train_s": time.perf_counter() - self._wall, "train_cpu_s": time.thread_time() - self._cpu})
            self._eval = time.perf_counter()

        def on_eval_end(self, state, result):
            accuracy = result.metrics.get("accuracy", getattr(result, "accuracy", None))
            epochs_out[-1].update(eval_s=time.perf_counter() - self._eval, accuracy=accuracy)
            if accuracy is not None and accuracy >= target:
                control.request_stop("bench: target reached")

    params = {"device": "cpu", **sets}
    result = run_training(RunRequest(task="image-classification", data=str(data), params=params, out=str(out)), callbacks=[Probe()], control=control)
    record = json.loads((out / "run.json").read_text())
    extra = record.get("data_summary", {}).get("extra", {})
    return {"epochs": epochs_out, "status": result.status, "model": extra.get("model"), "memory_cache": extra.get("memory_cache"),
            "decode_ms_per_image": extra.get("decode_ms_per_image")}  # fmt: skip


def lever_figures(runs: list[dict]) -> dict:
    """One configuration's figures over its runs (each a trainlab_run plus the pair's script time and target)."""
    reached = [r for r in runs if r["time_to_target_s"] is not None]
    ratio = ratio_summary([r["time_to_target_s"] for r in reached], [r["script_train_s"] for r in reached])
    ratio_cpu = ratio_summary([r["time_to_target_cpu_s"] for r in reached], [r["script_train_cpu_s"] for r in reached])
    epochs = [e for r in runs for e in r["epochs"]]
    later = [e for r in runs for e in r["epochs"][1:]]  # after the first epoch (a cache is filled in it)
    return {
        "ratio": ratio.get("median"),
        "ratio_spread": ratio,
        "ratio_cpu": ratio_cpu.get("median"),
        "reached_target": f"{len(reached)} of {len(runs)}",
        "time_to_target_seconds": spread([r["time_to_target_s"] for r in reached]),
        "epochs_to_target": spread([next(i + 1 for i, e in enumerate(r["epochs"]) if e["accuracy"] >= r["target"]) for r in reached]),
        "train_seconds_first_epoch": spread([r["epochs"][0]["train_s"] for r in runs if r["epochs"]]),
        "train_seconds_later_epochs": spread([e["train_s"] for e in later]),
        "train_cpu_seconds_first_epoch": spread([r["epochs"][0]["train_cpu_s"] for r in runs if r["epochs"]]),
        "train_cpu_seconds_later_epochs": spread([e["train_cpu_s"] for e in later]),
        "eval_seconds_per_epoch": spread([e["eval_s"] for e in epochs if "eval_s" in e]),
        "final_accuracy": spread([r["epochs"][-1]["accuracy"] for r in runs if r["epochs"]]),
        "model": runs[0].get("model") if runs else None,
        "memory_cache": (runs[0].get("memory_cache") or {}).get("splits") if runs else None,
        "decode_ms_per_image": runs[0].get("decode_ms_per_image") if runs else None,
    }


def time_to(epochs: list[dict], target: float) -> tuple[float | None, float | None]:
    wall = cpu = 0.0
    for epoch in epochs:
        wall += epoch["train_s"]
        cpu += epoch["train_cpu_s"]
        if epoch.get("accuracy") is not None and epoch["accuracy"] >= target:
            return wall, cpu
    return None, None


def backbone_mode(pairs: int, sets: dict[str, str], say) -> dict:
    """resnet18 at 224 px (random weights), the defaults before the levers against now; seconds per epoch after the first."""
    from trainlab_dev.image_samples import make_shapes_dataset

    configs = {"before": {**BACKBONE, **BEFORE, "model": "resnet18", **sets}, "now": {**BACKBONE, **sets}}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.environ.setdefault("TRAINLAB_HOME", str(tmp / "home"))
        data = make_shapes_dataset(tmp / "data", classes=BACKBONE_CLASSES, size=BACKBONE_SIZE, seed=SEED,
                                   splits={"train": BACKBONE_TRAIN, "val": BACKBONE_VAL})  # fmt: skip
        runs = iter(range(2 * pairs))

        def said(pair: int, name: str, run: dict) -> None:
            say(f"pair {pair + 1} {name}: epochs {[round(e['train_s'], 2) for e in run['epochs']]} s, "
                f"accuracy {[round(e['accuracy'], 4) for e in run['epochs']]}, memory cache {(run['memory_cache'] or {}).get('splits')}")  # fmt: skip

        # an unreachable target: every epoch runs
        results = run_pairs({name: (lambda config=config, name=name: trainlab_run(data, tmp / f"run-{next(runs)}-{name}", 2.0, config))
                             for name, config in configs.items()}, pairs, after=said)  # fmt: skip
    later = {name: [e["train_s"] for r in runs for e in r["epochs"][1:]] for name, runs in results.items()}
    later_cpu = {name: [e["train_cpu_s"] for r in runs for e in r["epochs"][1:]] for name, runs in results.items()}
    ratio = ratio_summary(later["now"], later["before"])
    ratio_cpu = ratio_summary(later_cpu["now"], later_cpu["before"])
    summary = {
        "benchmark": "image_time_to_accuracy --backbone",
        "setup": {**BACKBONE, "classes": BACKBONE_CLASSES, "train_images": BACKBONE_CLASSES * BACKBONE_TRAIN, "source_px": BACKBONE_SIZE},
        "ratio_now_over_before": ratio.get("median"),
        "ratio_spread": ratio,
        "ratio_cpu_now_over_before": ratio_cpu.get("median"),
        "ratio_cpu_spread": ratio_cpu,
        **{f"{name}_train_seconds_later_epochs": spread(values) for name, values in later.items()},
        **{f"{name}_train_cpu_seconds_later_epochs": spread(values) for name, values in later_cpu.items()},
        **{f"{name}_final_accuracy": spread([r["epochs"][-1]["accuracy"] for r in runs]) for name, runs in results.items()},
        **{f"{name}_params": configs[name] for name in configs},
        "goal": "ratio_now_over_before <= 1 (no slower)",
        "load_average": load_average(),
        "threads": torch.get_num_threads(),
    }
    say(f"resnet18 at 224 px: now / before seconds per epoch {summary['ratio_now_over_before']} (+-{ratio.get('spread_pct')}%), "
        f"CPU {summary['ratio_cpu_now_over_before']} (+-{ratio_cpu.get('spread_pct')}%)")
    return summary


def main() -> int:
    global TRAIN_PER_CLASS, VAL_PER_CLASS, BACKBONE_TRAIN, BACKBONE_VAL
    parser = bench_parser(__doc__, "one pair, the script for 1 epoch on 40 images a class (--backbone: 8 a class)")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=5, help="the plain script's epochs")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="a TrainLab parameter (one lever)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads of both sides")
    parser.add_argument("--levers", action="store_true", help="also each lever alone on the defaults of before (see LEVERS)")
    parser.add_argument("--backbone", action="store_true", help="a 224 px resnet18 run before and after the levers")
    args = parser.parse_args()
    if args.quick:
        args.pairs, args.epochs = 1, 1
        TRAIN_PER_CLASS, VAL_PER_CLASS, BACKBONE_TRAIN, BACKBONE_VAL = 40, 10, 8, 4
    torch.set_num_threads(max(1, args.threads))
    sets = dict(item.split("=", 1) for item in args.sets)
    say = speaker(args)
    if args.backbone:
        return emit("image_time_to_accuracy", args, backbone_mode(args.pairs, sets, say))
    levers = {name: {**change, **sets} for name, change in LEVERS.items()} if args.levers else {}
    lever_runs: dict[str, list[dict]] = {name: [] for name in levers}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.environ.setdefault("TRAINLAB_HOME", str(tmp / "home"))
        data = make_data(tmp / "data")
        warm = plain_script(data, args.epochs)  # imports, the page cache, and the first target
        finals = [warm["epochs"][-1]["accuracy"]]
        say(f"warm-up plain script: final accuracy {finals[0]:.4f}")
        scripts, runs, ratios_wall, ratios_cpu = [], [], [], []
        got: dict = {}

        def script_side() -> None:
            got["script"] = plain_script(data, args.epochs)
            finals.append(got["script"]["epochs"][-1]["accuracy"])

        def trainlab_side() -> None:
            pair = got["pair"]
            sides = ["trainlab", *levers]
            sides = sides[pair % len(sides) :] + sides[: pair % len(sides)]  # each configuration takes each place in turn
            got["target"] = statistics.median(finals)  # with this pair's script when it went first
            for name in sides:
                if name == "trainlab":
                    got["trainlab"] = trainlab_run(data, tmp / f"run-{pair}", got["target"], sets)
                else:
                    got[name] = trainlab_run(data, tmp / f"run-{pair}-{name}", got["target"], levers[name])

        def pair_done(pair: int, _side: str, _result: None) -> None:
            if "script" in got and "trainlab" in got:
                settle(pair)

        def settle(pair: int) -> None:
            script_wall = sum(e["train_s"] for e in got["script"]["epochs"])
            script_cpu = sum(e["train_cpu_s"] for e in got["script"]["epochs"])
            reach_wall, reach_cpu = time_to(got["trainlab"]["epochs"], got["target"])
            scripts.append(got["script"])
            for name in levers:
                lever_wall, lever_cpu = time_to(got[name]["epochs"], got["target"])
                lever_runs[name].append({**got[name], "target": got["target"], "time_to_target_s": lever_wall, "time_to_target_cpu_s": lever_cpu,
                                         "script_train_s": script_wall, "script_train_cpu_s": script_cpu})  # fmt: skip
            runs.append({**got["trainlab"], "target": got["target"], "time_to_target_s": reach_wall, "time_to_target_cpu_s": reach_cpu,
                         "script_train_s": script_wall, "script_train_cpu_s": script_cpu})  # fmt: skip
            if reach_wall is not None:
                ratios_wall.append((reach_wall, script_wall))
                ratios_cpu.append((reach_cpu, script_cpu))
            accuracies = [round(e["accuracy"], 4) for e in got["trainlab"]["epochs"]]
            say(f"pair {pair + 1}: script {script_wall:6.1f} s training (CPU {script_cpu:6.1f} s) to {got['script']['epochs'][-1]['accuracy']:.4f}; "
                f"TrainLab reached {got['target']:.4f} after {reach_wall if reach_wall is None else round(reach_wall, 1)} s "
                f"(CPU {reach_cpu if reach_cpu is None else round(reach_cpu, 1)} s), accuracy by epoch {accuracies}")  # fmt: skip

        def begin(pair: int) -> None:
            got.clear()
            got["pair"] = pair

        run_pairs({"script": script_side, "trainlab": trainlab_side}, args.pairs, before=begin, after=pair_done)
    ratio = ratio_summary([a for a, _ in ratios_wall], [b for _, b in ratios_wall])
    ratio_cpu = ratio_summary([a for a, _ in ratios_cpu], [b for _, b in ratios_cpu])
    summary = {
        "benchmark": "image_time_to_accuracy",
        "ratio": ratio.get("median"),
        "ratio_spread": ratio,
        "ratio_cpu": ratio_cpu.get("median"),
        "ratio_cpu_spread": ratio_cpu,
        "reached_target": f"{len(ratios_wall)} of {args.pairs}",
        "script_final_accuracy": spread(finals),
        "script_train_seconds": spread([r["script_train_s"] for r in runs]),
        "script_eval_seconds_per_epoch": spread([e["eval_s"] for s in scripts for e in s["epochs"]]),
        "trainlab_time_to_target_seconds": spread([r["time_to_target_s"] for r in runs if r["time_to_target_s"] is not None]),
        "trainlab_eval_seconds_per_epoch": spread([e["eval_s"] for r in runs for e in r["epochs"] if "eval_s" in e]),
        "trainlab_params": {"device": "cpu", **sets},
        "trainlab": lever_figures(runs),
        **({"levers": {name: {"params": levers[name], **lever_figures(lever_runs[name])} for name in levers}} if levers else {}),
        "runs": runs,
        "goal": "ratio <= 0.667 at the script's final accuracy",
        "load_average": load_average(),
        "threads": torch.get_num_threads(),
    }
    for name, figures in summary.get("levers", {}).items():
        say(f"  {name:28s} ratio {figures['ratio']} (CPU {figures['ratio_cpu']}), reached {figures['reached_target']}, "
            f"epoch {figures['train_seconds_later_epochs'].get('median')} s (CPU {figures['train_cpu_seconds_later_epochs'].get('median')} s), eval {figures['eval_seconds_per_epoch'].get('median')} s, "
            f"final accuracy {figures['final_accuracy'].get('median')}")  # fmt: skip
    say(f"TrainLab time to the script's accuracy / the script's training time: {summary['ratio']} "
        f"(+-{ratio.get('spread_pct')}%), CPU {summary['ratio_cpu']}; load average {summary['load_average']}")
    return emit("image_time_to_accuracy", args, summary)


if __name__ == "__main__":
    sys.exit(main())

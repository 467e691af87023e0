"""Training throughput: the image-classification plugin through the engine vs a hand-written loop.

CPU mode (default): generated 64 px shapes (8 classes x 150 JPEG files), the
small-cnn preset, batch 64, 2 epochs, augmentation none, the loader settings
the plugin picks (``num_workers`` auto; 0 on two cores).  Two ways, in
alternating pairs (which goes first alternates too):

  (a) ``trainlab.engine.scripting.run_training`` on the task, with every default
      callback (metrics file, run record, telemetry, checkpoints, export);
  (b) a hand-written loop, as a careful person writes it: torchvision
      ``ImageFolder`` with resize, centre crop, ToDtype and Normalize in the
      loader, the same ``SmallCNN``, AdamW (no decay on biases and norms),
      warmup-linear schedule, gradient clipping at 1.0.

Both rates are training samples over training time (evaluation and export
excluded on both sides).  ``ratio`` = median over pairs of (a) / (b).

GPU mode (``--gpu``, needs CUDA): resnet50 at 224 px, samples/s of the
model's compute alone (data already on the GPU) and of full engine runs on
generated JPEGs, in strict fp32 (no TF32), TF32, and bf16 autocast with
channels_last.

    python bench/image_throughput.py [--pairs 5] [--quick] [--json]
    python bench/image_throughput.py --gpu [--quick] [--json]

Goal on the CPU of the development machine: ratio >= 0.97.  The last line is
a JSON object.
"""

from __future__ import annotations

import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from pairs import Clock, bench_parser, emit, run_pairs, speaker, spread

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # trainlab_dev, the data generators: not installed
from trainlab_dev.image_samples import make_shapes_dataset

CLASSES, PER_CLASS, SIZE = 8, 150, 64
EPOCHS, BATCH, LR, SEED, VAL_FRACTION = 2, 64, 0.003, 1234, 0.2


def say(*args) -> None:  # replaced by main: silent with --json
    print(*args, file=sys.stderr, flush=True)


# -- (a) the plugin through the engine ---------------------------------------------------


def engine_run(data: Path, out: Path, params: dict) -> dict:
    from trainlab.engine.scripting import RunRequest, run_training

    result = run_training(RunRequest(task="image-classification", data=str(data), params=params, out=str(out)))
    if result.status != "completed":
        raise SystemExit(f"engine run failed: {result.error}")
    return {"samples_per_second": result.samples_per_second, "accuracy": result.metrics["accuracy"]}


# -- (b) by hand -----------------------------------------------------------------------------


def hand_loop(data: Path, num_workers: int) -> dict:
    import numpy as np
    from torchvision import datasets
    from torchvision.transforms import v2

    from trainlab_plugins.image.models import SmallCNN

    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    transform = v2.Compose(
        [
            v2.Resize(SIZE, antialias=True),
            v2.CenterCrop(SIZE),
            v2.ToImage(),
            v2.ToDtype(torch.float32, scale=True),
            v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        ]
    )
    full = datasets.ImageFolder(str(data), transform=transform)
    # the same stratified hold-out as the plugin's (share per class)
    by_class: dict[int, list[int]] = {}
    for index, (_, label) in enumerate(full.samples):
        by_class.setdefault(label, []).append(index)
    rng = random.Random(SEED)
    train_idx = []
    for indices in by_class.values():
        rng.shuffle(indices)
        train_idx += indices[max(1, round(len(indices) * VAL_FRACTION)) :]
    train = torch.utils.data.Subset(full, train_idx)
    model = SmallCNN(len(full.classes))
    decay = [p for n, p in model.named_parameters() if p.ndim > 1 and not n.endswith(".bias")]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim > 1 and not n.endswith(".bias"))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=LR, fused=True)  # as the engine's
    steps = math.ceil(len(train) / BATCH) * EPOCHS
    warmup = int(round(steps * 0.06))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / (warmup + 1) if s < warmup else max(0.0, 1 - (s - warmup) / max(1, steps - warmup))
    )
    seconds, samples = 0.0, 0
    for epoch in range(EPOCHS):
        model.train()
        loader = torch.utils.data.DataLoader(
            train, batch_size=BATCH, shuffle=True, num_workers=num_workers,
            generator=torch.Generator().manual_seed(SEED + epoch),
        )  # fmt: skip
        start = time.perf_counter()
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            sched.step()
            samples += len(y)
        loss.item()  # the engine reads the loss back at epoch ends too
        seconds += time.perf_counter() - start
    return {"samples_per_second": samples / seconds}


def cpu_mode(pairs: int) -> dict:
    from trainlab_plugins.image.task import auto_workers, usable_cores

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.environ["TRAINLAB_HOME"] = str(tmp / "home")
        data = make_shapes_dataset(tmp / "data", classes=CLASSES, per_class=PER_CLASS, size=SIZE, seed=1)
        # the hand loop's network, decoding every epoch as it does: this measures the engine, not the levers
        params = {"model": "small-cnn", "memory_cache": "off", "epochs": EPOCHS, "batch_size": BATCH, "lr": LR, "seed": SEED,
                  "image_size": SIZE, "device": "cpu", "precision": "fp32", "augmentation": "none", "val_fraction": VAL_FRACTION}  # fmt: skip
        # what "auto" picks for these files on this machine (measured as in the plugin)
        from trainlab_plugins.image.decode import load_rgb

        files = sorted(data.rglob("*.jpg"))[:32]
        load_rgb(str(files[0]))
        start = time.perf_counter()
        for f in files:
            load_rgb(str(f))
        workers = auto_workers(usable_cores(), (time.perf_counter() - start) * 1000 / len(files), cuda=False)
        say(f"loader workers (auto): {workers}")
        engine_run(data, tmp / "warmup", {**params, "epochs": 1})  # imports, caches
        runs = iter(range(pairs))

        def timed(run):
            def side() -> tuple[float, Clock]:
                with Clock() as clock:
                    rate = run()["samples_per_second"]
                return rate, clock
            return side

        sides = run_pairs({"engine": timed(lambda: engine_run(data, tmp / f"run-{next(runs)}", params)),
                           "hand": timed(lambda: hand_loop(data, workers))}, pairs)  # fmt: skip
        rows = []
        for pair, ((engine, engine_clock), (hand, hand_clock)) in enumerate(zip(sides["engine"], sides["hand"])):
            row = {"engine": engine, "hand": hand, "ratio": engine / hand}
            for which, clock in (("engine", engine_clock), ("hand", hand_clock)):
                row[f"{which}_process_cpu_s"] = round(clock.cpu, 2)  # whole run, this process's threads
                row[f"{which}_wall_s"] = round(clock.wall, 2)
            rows.append(row)
            say(f"pair {pair + 1}: engine {row['engine']:.1f} samples/s, hand-written {row['hand']:.1f} samples/s, ratio {row['ratio']:.3f}")
    return {
        "benchmark": "image_throughput",
        "mode": "cpu",
        "ratio": statistics.median(r["ratio"] for r in rows),
        "ratio_spread": spread([r["ratio"] for r in rows]),
        # whole runs (evaluation and export included on the engine's side): CPU seconds hand over engine
        "cpu_ratio_whole_runs": spread([r["hand_process_cpu_s"] / r["engine_process_cpu_s"] for r in rows]),
        "goal": 0.97,
        "engine_samples_per_second": statistics.median(r["engine"] for r in rows),
        "hand_samples_per_second": statistics.median(r["hand"] for r in rows),
        "pairs": rows,
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "setup": {"model": "small-cnn", "image_size": SIZE, "batch_size": BATCH, "epochs": EPOCHS,
                  "train_images": round(CLASSES * PER_CLASS * (1 - VAL_FRACTION)), "num_workers": workers,
                  "torch_threads": torch.get_num_threads()},  # fmt: skip
    }


# -- GPU mode --------------------------------------------------------------------------------


def set_tf32(enabled: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled


def compute_only(mode: str, batch: int, steps: int) -> float:
    """resnet50 forward/backward/AdamW on a batch resident on the GPU."""
    import torchvision

    set_tf32(mode != "fp32-strict")
    model = torchvision.models.resnet50(weights=None, num_classes=1000).cuda()
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (batch,), device="cuda")
    if mode == "bf16":
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=mode == "bf16"):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return batch * steps / (time.perf_counter() - start)


def gpu_mode(batch: int, steps: int, engine: bool) -> dict:
    if not torch.cuda.is_available():
        raise SystemExit("--gpu needs a CUDA GPU; none is visible here")
    result = {"benchmark": "image_throughput", "mode": "gpu", "device": torch.cuda.get_device_name(0),
              "batch_size": batch, "compute_only": {}, "engine": {}}  # fmt: skip
    for mode in ("fp32-strict", "tf32", "bf16"):
        rate = compute_only(mode, batch, steps)
        result["compute_only"][mode] = round(rate, 1)
        say(f"resnet50 224 px compute only, {mode}: {rate:.0f} samples/s")
    if engine:
        import trainlab.engine.device as device

        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            os.environ["TRAINLAB_HOME"] = str(tmp / "home")
            data = make_shapes_dataset(tmp / "data", classes=10, per_class=160, size=256, seed=2, splits={"train": 160, "val": 16})
            real_enable = device.enable_tf32
            for mode, precision in (("fp32-strict", "fp32"), ("tf32", "fp32"), ("bf16", "bf16")):
                device.enable_tf32 = (lambda d: set_tf32(False)) if mode == "fp32-strict" else real_enable
                params = {"model": "resnet50", "pretrained": False, "epochs": 2, "batch_size": batch,
                          "precision": precision, "device": "cuda", "augmentation": "standard"}  # fmt: skip
                rate = engine_run(data, tmp / f"run-{mode}", params)["samples_per_second"]
                result["engine"][mode] = round(rate, 1)
                say(f"resnet50 224 px through the engine (JPEG decoding, standard augmentation), {mode}: {rate:.0f} samples/s")
            device.enable_tf32 = real_enable
    return result


def main() -> int:
    global say, PER_CLASS, EPOCHS
    parser = bench_parser(__doc__, "one pair of one epoch on 40 images a class (--gpu: 5 steps, no engine runs)")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--gpu", action="store_true", help="resnet50 at 224 px on the GPU")
    parser.add_argument("--gpu-batch", type=int, default=128)
    parser.add_argument("--gpu-steps", type=int, default=30)
    parser.add_argument("--no-engine", action="store_true", help="--gpu: compute-only figures")
    args = parser.parse_args()
    if args.quick:
        args.pairs, args.gpu_steps, args.no_engine, PER_CLASS, EPOCHS = 1, 5, True, 40, 1
    say = speaker(args)
    result = gpu_mode(args.gpu_batch, args.gpu_steps, not args.no_engine) if args.gpu else cpu_mode(args.pairs)
    return emit("image_throughput", args, result)


if __name__ == "__main__":
    raise SystemExit(main())

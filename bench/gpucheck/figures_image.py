"""ResNet-50 throughput figures: the engine against a hand-tuned loop, and bf16 against strict fp32.

Each variant is timed over the same kind of window: optimizer steps after a
few warm-up steps, the device synchronised at both ends only.  Variants run
once per round, in an order that rotates from round to round; ratios are
taken within a round (side by side), and their median and spread reported.

* ``resnet50_synthetic``: images already on the GPU (the ``gpu-check-tensors``
  task, batch 256, 224 px), so the figure is the engine's own overhead.
* ``resnet50_jpeg``: JPEG files through the loader (the built-in
  ``image-classification`` task, model resnet50, pretrained=false), against
  torchvision's ImageFolder with the same worker count, pinned memory and
  GPU-side normalisation.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from gpucheck.common import (
    CheckEnv,
    Outcome,
    alternate,
    engine_run,
    env_threads,
    ratios,
    register_tasks,
    say,
    set_tf32,
    spread,
    stopwatch,
    tf32_off_callback,
)

WINDOW_SECONDS = 1.5  # a measured window; steps are calibrated to it in the warm-up round


def run_folder(env: CheckEnv) -> Path:
    """Where engine runs write: tmpfs when there is room (checkpoints of big models are written at each stop)."""
    shm = Path("/dev/shm")
    try:
        if not env.dry_run and shm.is_dir() and shutil.disk_usage(shm).free > 16 * 2**30:
            folder = shm / f"gpu-check-{env.name}-{time.time_ns()}"
            folder.mkdir()
            return folder
    except OSError:
        pass
    return env.work


class EngineVariant:
    """One engine configuration, runnable again and again (each run in a fresh folder, removed after)."""

    def __init__(self, env: CheckEnv, task: str, data: Path, params: dict[str, Any], warm: int, tf32_off: bool = False):
        self.env, self.task, self.data, self.params, self.warm, self.tf32_off = env, task, data, params, warm, tf32_off
        self.steps = 0
        self.last_result = None
        self.summary: dict[str, Any] = {}  # the data summary's extra facts of the last run
        self.folder = run_folder(env)

    def __call__(self) -> float:
        watch = stopwatch(self.warm, self.steps, self.env.sync)
        callbacks = [watch] + ([tf32_off_callback()] if self.tf32_off else [])
        out = self.folder / f"run-{time.time_ns()}"
        try:
            result, run_dir = engine_run(self.task, self.data, self.params, out, callbacks)
            self.last_result = result
            record = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
            self.summary = record.get("data_summary", {}).get("extra", {})
            if watch.t1 is None:
                raise RuntimeError(f"the engine run ended before the measured window ({result.status}: {result.error})")
            return watch.rate
        finally:
            shutil.rmtree(out, ignore_errors=True)

    def close(self) -> None:
        if self.folder != self.env.work:
            shutil.rmtree(self.folder, ignore_errors=True)


def calibrate(
    env: CheckEnv, variants: dict[str, Any], first_steps: int, max_steps: int, batch: int, done: dict[str, float] | None = None
) -> dict[str, int]:
    """A warm-up round (not counted): caches, kernels, the allocator; then steps per variant for a WINDOW_SECONDS window.

    ``done``: rates of variants that already ran their warm-up with ``first_steps``.
    """
    steps = {}
    for name, variant in variants.items():
        if done and name in done:
            rate = done[name]
        else:
            variant.steps = first_steps
            rate = variant()
        wanted = 2 if env.dry_run or not env.cuda else max(5, min(max_steps, round(WINDOW_SECONDS * rate / batch)))
        steps[name] = variant.steps = wanted
        say(f"  warm-up {name}: {rate:,.1f} samples/s; {wanted} steps per measurement")
    return steps


def report(out: Outcome, rates: dict[str, list[float]], rounds: int, engine: str, hand: str | None, strict: str) -> None:
    for name, values in rates.items():
        out.figure(f"{name}_samples_per_s", spread(values)["median"])
    out.fact("rates", {k: [round(v, 1) for v in vals] for k, vals in rates.items()})
    out.fact("rounds", rounds)
    if hand is not None:
        vs_hand = ratios(rates, engine, hand)
        out.figure("engine_over_hand", spread(vs_hand))
        out.goal("engine_over_hand", spread(vs_hand)["median"], at_least=0.97)
    vs_strict = ratios(rates, engine, strict)
    out.figure("bf16_over_fp32_strict", spread(vs_strict))
    out.goal("bf16_over_fp32_strict", spread(vs_strict)["median"], at_least=2.0)


def _adamw(model: Any, cuda: bool):
    import torch

    decay = [p for n, p in model.named_parameters() if p.ndim > 1 and not n.endswith(".bias")]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim > 1 and not n.endswith(".bias"))]
    groups = [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=1e-3, **({"fused": True} if cuda else {}))


def hand_step(model: Any, optimizer: Any, x: Any, y: Any, device_type: str) -> None:
    """What a careful person writes: bf16 autocast, clipping at 1.0 (as the engine), fused AdamW, no sync."""
    import torch

    with torch.autocast(device_type, dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def timed(env: CheckEnv, warm: int, steps: int, batch: int, step: Callable[[int], None]) -> float:
    for i in range(warm):
        step(i)
    env.sync()
    start = time.perf_counter()
    for i in range(warm, warm + steps):
        step(i)
    env.sync()
    return steps * batch / (time.perf_counter() - start)


# -- images already on the GPU ---------------------------------------------------------------------------


def check_resnet50_synthetic(env: CheckEnv, out: Outcome) -> None:
    """ResNet-50, bf16 autocast, channels_last, batch 256 of 224 px tensors on the GPU."""
    import torch

    from gpucheck.common import free_cuda
    from gpucheck.tasks import image_model, tensor_pool

    env_threads()
    register_tasks()
    # batch 256 (strict fp32 needs about 50 GB there); less on a smaller GPU or MIG slice
    memory = env.memory_gib()
    batch = env.pick(256 if memory >= 70 else 128 if memory >= 35 else 64, 4)
    side, classes, pool = env.pick(224, 32), env.pick(1000, 10), env.pick(512, 8)
    warm = env.pick(3, 1)
    data = env.work / "in-memory.txt"
    data.write_text("the data of this task is made in memory\n")
    base = {"arch": "resnet50", "image_size": side, "pool": pool, "classes": classes, "batch_size": batch, "epochs": 1,
            "lr": 1e-3, "schedule": "constant", "warmup_ratio": 0.0, "device": env.device, "seed": 0}  # fmt: skip
    max_steps = 200
    base["length"] = (warm + max_steps + 2) * batch  # one epoch holds every measured window
    engine_bf16 = EngineVariant(env, "gpu-check-tensors", data, {**base, "precision": "bf16"}, warm)
    engine_strict = EngineVariant(env, "gpu-check-tensors", data, {**base, "precision": "fp32"}, warm, tf32_off=True)

    class Hand:
        steps = 0

        def __call__(self) -> float:
            device = torch.device(env.device)
            set_tf32(True)  # as the engine leaves it (bf16 autocast does not use it much either way)
            x, y = tensor_pool(pool, side, classes, device, env.cuda)
            torch.manual_seed(0)
            model = image_model("resnet50", classes).to(device)
            if env.cuda:
                model = model.to(memory_format=torch.channels_last)
            optimizer = _adamw(model, env.cuda)
            gen = torch.Generator(device=device).manual_seed(0)

            def step(i: int) -> None:
                idx = torch.randint(0, pool, (batch,), device=device, generator=gen)
                images = x[idx]
                if env.cuda:
                    images = images.contiguous(memory_format=torch.channels_last)
                hand_step(model, optimizer, images, y[idx], device.type)

            rate = timed(env, warm, self.steps, batch, step)
            del model, optimizer
            free_cuda()
            return rate

    variants = {"engine_bf16": engine_bf16, "hand_bf16": Hand(), "engine_fp32_strict": engine_strict}
    out.fact("setup", {"model": "resnet50", "batch": batch, "image_size": side, "pool_on_device": pool, "warm_steps": warm,
                       "channels_last": env.cuda, "optimizer": "AdamW fused", "clip_grad_norm": 1.0})  # fmt: skip
    try:
        steps = calibrate(env, variants, env.pick(8, 1), max_steps, batch)
        out.fact("steps_per_measurement", steps)
        rates, rounds = alternate(env, variants, env.pick(3, 2))
    finally:
        engine_bf16.close()
        engine_strict.close()
    out.fact("engine_reported_samples_per_s", round(engine_bf16.last_result.samples_per_second, 1) if engine_bf16.last_result else None)
    report(out, rates, rounds, "engine_bf16", "hand_bf16", "engine_fp32_strict")
    out.expect("every variant measured in every round", all(len(v) == rounds for v in rates.values()), {k: len(v) for k, v in rates.items()})


# -- JPEG files through the loader ---------------------------------------------------------------------------


def check_resnet50_jpeg(env: CheckEnv, out: Outcome) -> None:
    """ResNet-50 from JPEG files: the image-classification task against torchvision's ImageFolder loop."""
    import torch

    from gpucheck.common import free_cuda
    from gpucheck.data import make_jpegs
    from gpucheck.tasks import image_model

    env_threads()
    memory = env.memory_gib()
    batch, side, classes = env.pick(128 if memory >= 35 else 64, 4), env.pick(224, 32), 8
    per_class = env.pick(512, 6)
    started = time.monotonic()
    data = make_jpegs(env.work / "jpegs", classes=classes, train_per_class=per_class, val_per_class=4, side=env.pick(256, 40))
    out.fact("jpegs", {"train": classes * per_class, "val": classes * 4, "side": env.pick(256, 40),
                       "seconds_to_make": round(time.monotonic() - started, 1)})  # fmt: skip
    warm = env.pick(4, 1)
    max_steps = classes * per_class // batch - warm - 1  # the measured window stays inside the first epoch
    base = {"model": "resnet50", "pretrained": False, "image_size": side, "augmentation": "none", "batch_size": batch,
            "epochs": 1, "lr": 1e-3, "schedule": "constant", "warmup_ratio": 0.0, "device": env.device, "seed": 0}  # fmt: skip
    engine_bf16 = EngineVariant(env, "image-classification", data, {**base, "precision": "bf16"}, warm)
    engine_strict = EngineVariant(env, "image-classification", data, {**base, "precision": "fp32"}, warm, tf32_off=True)

    class Hand:
        steps = 0
        workers = 0

        def __call__(self) -> float:
            from torchvision import datasets
            from torchvision.transforms import v2

            device = torch.device(env.device)
            set_tf32(True)
            transform = v2.Compose([v2.Resize(side, antialias=True), v2.CenterCrop(side), v2.PILToTensor()])
            dataset = datasets.ImageFolder(str(data / "train"), transform=transform)
            loader = torch.utils.data.DataLoader(
                dataset, batch_size=batch, shuffle=True, num_workers=self.workers, pin_memory=env.cuda,
                persistent_workers=self.workers > 0, generator=torch.Generator().manual_seed(0),
            )  # fmt: skip
            mean = torch.tensor([255 * m for m in (0.485, 0.456, 0.406)], device=device).view(1, 3, 1, 1)
            std = torch.tensor([255 * s for s in (0.229, 0.224, 0.225)], device=device).view(1, 3, 1, 1)
            torch.manual_seed(0)
            model = image_model("resnet50", classes).to(device)
            if env.cuda:
                model = model.to(memory_format=torch.channels_last)
            optimizer = _adamw(model, env.cuda)
            batches = iter(loader)

            def step(i: int) -> None:
                pixels, labels = next(batches)
                pixels = pixels.to(device, non_blocking=True)
                if env.cuda:
                    pixels = pixels.contiguous(memory_format=torch.channels_last)
                pixels = (pixels.float() - mean) / std
                hand_step(model, optimizer, pixels, labels.to(device, non_blocking=True), device.type)

            rate = timed(env, warm, self.steps, batch, step)
            del batches, loader, model, optimizer
            free_cuda()
            return rate

    hand = Hand()
    variants = {"engine_bf16": engine_bf16, "hand_bf16": hand, "engine_fp32_strict": engine_strict}
    try:
        first_steps = min(env.pick(6, 1), max(1, max_steps))
        engine_bf16.steps = first_steps
        first = {"engine_bf16": engine_bf16()}
        # The hand loop gets the worker count the task chose for these files.
        summary = engine_bf16.summary
        hand.workers = int(summary.get("num_workers", 0))
        out.fact("loader", {"num_workers": hand.workers, "decode_ms_per_image": summary.get("decode_ms_per_image"), "pin_memory": env.cuda})
        out.fact("setup", {"model": "resnet50", "batch": batch, "image_size": side, "augmentation": "none", "warm_steps": warm})
        steps = calibrate(env, variants, first_steps, max(1, max_steps), batch, done=first)
        out.fact("steps_per_measurement", steps)
        rates, rounds = alternate(env, variants, env.pick(3, 2))
    finally:
        engine_bf16.close()
        engine_strict.close()
    report(out, rates, rounds, "engine_bf16", "hand_bf16", "engine_fp32_strict")
    out.expect("every variant measured in every round", all(len(v) == rounds for v in rates.values()), {k: len(v) for k, v in rates.items()})


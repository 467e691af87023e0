"""How much memory a run needs, estimated before it starts (``train --dry-run``, ``micro_batch_size=auto``).

Three parts, each measured where it can be and computed where it must be:

* **weights, gradients, optimizer states**: counted exactly on a model built
  on the meta device (no memory, no weights read): every parameter and
  buffer at its dtype, a gradient per trainable parameter, and the
  optimizer's per-parameter state (AdamW: two moments at the parameter's
  dtype and a 4-byte step; SGD: one momentum buffer; 8-bit AdamW: two
  bytes a parameter plus its block statistics);
* **activations**: a real probe (``trainlab.engine.memory_probe``, in a child
  process so that what it allocates goes when it ends): one training step
  at each of two micro-batch sizes on the task's own longest example, the
  bytes autograd saves for backward (CPU; saved-tensor hooks, since RSS
  is too noisy there) or the CUDA allocator's peak above the weights,
  fitted as ``intercept + per_example * batch``; cached by model, data
  and settings (``$TRAINLAB_HOME/cache/memory``);
* **the rest**: the CUDA context as measured by the probe (device memory
  in use that the allocator does not own), or on a CPU the process's
  resident memory before the model is built.

Under ``sharding=fsdp`` the estimate is per process: the weights, gradients
and optimizer state divided by the number of processes, plus the weights
gathered at once (``sharded_static``); with ``fsdp_offload`` those slices
are in CPU memory and only the gathered weights count on the GPU.  The
activations are not split.

The total is for the run's micro-batch; ``micro_batch_size=auto`` picks the
largest that leaves ``HEADROOM`` of the device free.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from trainlab.api.errors import UsageError
from trainlab.engine import distributed
from trainlab.engine.strategy.fsdp import transformer_blocks
from trainlab.system import paths
from trainlab.system.fileio import atomic_write_json
from trainlab.engine.device import autocast

HEADROOM = 0.10  # of the device kept free: allocator fragmentation, evaluation batches
PROBE_BATCHES = (1, 2)
# parameters whose value changes neither the model nor the shapes a step sees
NOT_SHAPING = {
    "epochs", "lr", "batch_size", "micro_batch_size", "grad_accum", "seed", "schedule", "warmup_ratio", "weight_decay",
    "clip_grad_norm", "early_stopping_patience", "monitor", "telemetry_every", "log_interval", "keep_checkpoints",
    "final_weights", "checkpoint_every_steps", "class_weighting", "merged_model", "sharding", "fsdp_offload",
}
GiB = 1 << 30


def device_memory_bytes(device: Any) -> int:
    """What a run on ``device`` can use: the GPU's total memory, or on a CPU the RAM available now."""
    kind = getattr(device, "type", str(device).split(":")[0])
    if kind == "cuda":
        import torch

        return int(torch.cuda.get_device_properties(device).total_memory)
    import psutil

    return int(psutil.virtual_memory().available)


# -- weights, gradients, optimizer states ---------------------------------------------
@dataclass(frozen=True)
class StaticBytes:
    weights: int
    gradients: int
    optimizer: int
    parameters: int
    trainable: int

    @property
    def total(self) -> int:
        return self.weights + self.gradients + self.optimizer


def _unique_tensors(tensors):
    seen = set()
    for tensor in tensors:
        if id(tensor) not in seen:
            seen.add(id(tensor))
            yield tensor


def static_bytes(model: Any, optimizer: str = "adamw") -> StaticBytes:
    """Exact bytes of ``model``'s weights, gradients and ``optimizer`` states (meta or real tensors)."""
    params = list(_unique_tensors(model.parameters()))
    buffers = list(_unique_tensors(model.buffers()))
    trainable = [p for p in params if p.requires_grad]
    weights = sum(t.numel() * t.element_size() for t in (*params, *buffers))
    gradients = sum(p.numel() * p.element_size() for p in trainable)
    if optimizer == "sgd":
        states = gradients  # one momentum buffer per parameter
    elif optimizer == "adamw8bit":
        # bitsandbytes: uint8 moments, an fp32 absmax per 256-value block each
        # (tensors under 4096 values stay 32-bit)
        states = sum(
            2 * p.numel() + 2 * 4 * math.ceil(p.numel() / 256) if p.numel() >= 4096 else 2 * 4 * p.numel() for p in trainable
        ) + 4 * len(trainable)
    else:
        states = 2 * gradients + 4 * len(trainable)  # exp_avg, exp_avg_sq, a float32 step
    return StaticBytes(weights, gradients, states, sum(p.numel() for p in params), sum(p.numel() for p in trainable))


def sharded_static(static: StaticBytes, model: Any, shards: int, *, offload: bool = False) -> StaticBytes:
    """What one of ``shards`` processes holds under ``sharding=fsdp``: a 1/shards slice of the
    weights, gradients and optimizer state, plus the weights gathered at once (the model's own
    outside its blocks, and two blocks: the one computing and the next, prefetched).  With
    ``offload`` the slices live in CPU memory: on the device only the gathered weights."""
    blocks = transformer_blocks(model)
    in_blocks = {id(p) for block in blocks for p in block.parameters()}
    own = sum(p.numel() * p.element_size() for p in _unique_tensors(model.parameters()) if id(p) not in in_blocks)
    largest = max((sum(p.numel() * p.element_size() for p in block.parameters()) for block in blocks), default=0)
    gathered = own + 2 * largest
    if offload:
        return StaticBytes(gathered, 0, 0, static.parameters, static.trainable)
    return StaticBytes(
        -(-static.weights // shards) + gathered, -(-static.gradients // shards), -(-static.optimizer // shards), static.parameters, static.trainable
    )


def meta_model(task: Any, ctx: Any) -> Any:
    """The task's model built on the meta device: shapes and dtypes, no memory."""
    import torch

    with torch.device("meta"):
        return task.build_model(ctx)


# -- activations -----------------------------------------------------------------
def probe_batch(task: Any, size: int) -> Any:
    """A training batch of ``size`` copies of the longest training example (the worst case)."""
    dataset = task.dataset("train")
    lengths = getattr(dataset, "lengths", None)
    index = int(max(range(len(dataset)), key=lambda i: int(lengths[i]))) if lengths is not None else 0
    return task.collate([dataset[index] for _ in range(size)])


def saved_activation_bytes(task: Any, model: Any, ctx: Any, batch: Any) -> int:
    """Bytes autograd saves for backward in one training step on ``batch`` (parameters excluded)."""
    import torch


    params = {p.data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}

    def pack(tensor):
        if tensor.device.type != "meta":
            ptr = tensor.untyped_storage().data_ptr()
            if ptr not in params and ptr not in storages:
                storages[ptr] = tensor.untyped_storage().nbytes()
        return tensor

    model.train()
    batch = task.to_device(batch, ctx)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with autocast(ctx.device, ctx.precision):
            loss, _ = task.train_step(model, batch, ctx)
    loss.backward()
    model.zero_grad(set_to_none=True)
    return sum(storages.values())


def peak_step_bytes(task: Any, model: Any, ctx: Any, batch: Any) -> int:
    """CUDA: the allocator's peak during one training step, above what was allocated before it."""
    import torch


    model.train()
    batch = task.to_device(batch, ctx)
    torch.cuda.synchronize(ctx.device)
    before = torch.cuda.memory_allocated(ctx.device)
    torch.cuda.reset_peak_memory_stats(ctx.device)
    with autocast(ctx.device, ctx.precision):
        loss, _ = task.train_step(model, batch, ctx)
    loss.backward()
    torch.cuda.synchronize(ctx.device)
    peak = torch.cuda.max_memory_allocated(ctx.device) - before
    # gradients stay allocated (zeroed), so that the next step's peak is
    # activations and workspace only: the gradients are counted apart
    model.zero_grad(set_to_none=False)
    return int(peak)


@dataclass(frozen=True)
class ActivationFit:
    """``intercept + per_example * batch`` bytes, fitted on two probe steps."""

    intercept: float
    per_example: float
    measured: dict[int, int]
    method: str  # "saved-tensors" (CPU) or "cuda-peak"

    def at(self, batch: int) -> int:
        return int(max(0.0, self.intercept + self.per_example * batch))


def fit_activations(task: Any, model: Any, ctx: Any, sizes: tuple[int, int] = PROBE_BATCHES) -> ActivationFit:
    """A real step at each of two batch sizes on ``model``, fitted linearly."""
    cuda = getattr(ctx.device, "type", "") == "cuda"
    measure = peak_step_bytes if cuda else saved_activation_bytes
    if cuda:
        measure(task, model, ctx, probe_batch(task, min(sizes)))  # allocates the gradients and cuBLAS workspaces
    measured = {int(b): int(measure(task, model, ctx, probe_batch(task, b))) for b in sizes}
    (b1, m1), (b2, m2) = sorted(measured.items())
    slope = (m2 - m1) / (b2 - b1)
    return ActivationFit(intercept=m1 - slope * b1, per_example=max(slope, 0.0), measured=measured, method="cuda-peak" if cuda else "saved-tensors")


# -- the estimate ---------------------------------------------------------------------
@dataclass
class MemoryEstimate:
    """A run's memory need on its device, in bytes, with the micro-batch it was figured for."""

    device: str
    kind: str  # "gpu" or "ram"
    capacity: int
    weights: int
    gradients: int
    optimizer: int
    activations: int
    other: int  # CUDA context, or the process before the model (RAM)
    micro_batch: int
    batch_size: int
    activation_per_example: float
    activation_intercept: float
    parameters: int
    trainable: int
    probe: dict[str, Any] = field(default_factory=dict)
    shards: int = 1  # sharding=fsdp: weights, gradients and optimizer state are per process, split this many ways
    offload: bool = False  # fsdp_offload: the shards and optimizer state are in CPU memory, not the GPU's

    @property
    def total(self) -> int:
        return self.weights + self.gradients + self.optimizer + self.activations + self.other

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity * (1 - HEADROOM)

    def summary_line(self) -> str:
        """What the window shows next to Start: "needs about 14 GB of your 24 GB"."""
        where = "GPU memory" if self.kind == "gpu" else "free RAM"
        sharded = f" per process (weights, gradients and optimizer state split {self.shards} ways{', in CPU memory' if self.offload else ''})" if self.shards > 1 else ""
        return f"needs about {format_size(self.total)} of your {format_size(self.capacity)} {where}{sharded}"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(total=self.total, fits=self.fits, summary=self.summary_line(), headroom=HEADROOM)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "MemoryEstimate":
        """The estimate back from ``to_json`` (what a child process printed); the derived keys are dropped."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def format_size(n: float) -> str:
    """A memory or disk size as the estimate states it: whole GB from 10 GB, tenths down to 0.1 GB, then MB and kB
    (a small model's weights read "2 MB", never "0.0 GB")."""
    if n >= 10e9:
        return f"{n / 1e9:.0f} GB"
    if n >= 0.1e9:
        return f"{n / 1e9:.1f} GB"
    if n >= 1e6:
        return f"{n / 1e6:.0f} MB"
    return f"{max(n, 0) / 1e3:.0f} kB"


def probe_key(plan: Any) -> str:
    import torch

    shaping = {k: v for k, v in sorted(plan.params.items()) if k not in NOT_SHAPING}
    blob = json.dumps(
        [plan.task_id, plan.fingerprint.get("sha256"), shaping, str(plan.ctx.device), plan.ctx.precision, torch.__version__, PROBE_BATCHES],
        sort_keys=True, default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def run_probe(plan: Any, *, use_cache: bool = True, timeout: float = 1800.0) -> dict[str, Any]:
    """The activation probe of ``plan``'s run, in a child process; cached by model, data and settings."""
    cache = paths.cache_dir() / "memory" / f"{probe_key(plan)}.json"
    if use_cache and cache.is_file():
        try:
            cached = json.loads(cache.read_text(encoding="utf-8"))
            return {**cached, "cached": True}
        except (OSError, ValueError):
            pass
    request = plan.request.to_json()
    request["params"] = {**plan.params, "micro_batch_size": "0"}
    request["remembered"] = {}
    request["out"] = None
    proc = subprocess.run(
        [sys.executable, "-m", "trainlab.engine.memory_probe"],
        input=json.dumps({"request": request, "sizes": list(PROBE_BATCHES)}),
        capture_output=True, text=True, timeout=timeout, env=dict(os.environ),
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = " ".join((proc.stderr or "").strip().splitlines()[-1:]) or f"exit code {proc.returncode}"
        if proc.returncode == 2:
            raise UsageError(tail.removeprefix("trainlab: "))
        raise RuntimeError(f"the memory probe failed: {tail}")
    result = json.loads(lines[-1])
    atomic_write_json(cache, result)
    return {**result, "cached": False}


def estimate_memory(plan: Any, *, micro_batch: int | None = None, use_cache: bool = True) -> MemoryEstimate:
    """The memory ``plan``'s run needs at ``micro_batch`` (default: the plan's own)."""
    model = meta_model(plan.task, plan.ctx)
    static = static_bytes(model, plan.engine.optimizer)
    shards = distributed.world_size() if plan.engine.sharding == "fsdp" else 1
    offload = shards > 1 and plan.engine.fsdp_offload
    if shards > 1:
        static = sharded_static(static, model, shards, offload=offload)
    del model
    batch_size = plan.engine.batch_size
    micro = micro_batch or plan_micro_batch(plan)
    try:
        probe = run_probe(plan, use_cache=use_cache)
    except RuntimeError as exc:  # the probe could not load or step the model here: too big for this machine
        analytic = _analytic_estimate(plan, micro, static, str(exc))
        if analytic is None:
            raise
        return analytic
    fit = ActivationFit(
        intercept=float(probe["intercept"]), per_example=float(probe["per_example"]),
        measured={int(k): int(v) for k, v in probe["measured"].items()}, method=str(probe["method"]),
    )
    cuda = plan.ctx.is_cuda
    return MemoryEstimate(
        device=str(plan.ctx.device),
        kind="gpu" if cuda else "ram",
        capacity=int(probe["capacity"]),
        weights=static.weights,
        gradients=static.gradients,
        optimizer=static.optimizer,
        activations=fit.at(micro),
        other=int(probe["other"]),
        micro_batch=micro,
        batch_size=batch_size,
        activation_per_example=fit.per_example,
        activation_intercept=fit.intercept,
        parameters=static.parameters,
        trainable=static.trainable,
        probe={"method": fit.method, "measured": {str(k): v for k, v in fit.measured.items()}, "cached": bool(probe.get("cached"))},
        shards=shards,
        offload=offload,
    )


def _analytic_estimate(plan: Any, micro: int, static: StaticBytes, why: str) -> MemoryEstimate | None:
    """The task's own memory model at ``micro`` (``Task.memory_model``), where the probe could not run; None without one."""
    model_of = getattr(plan.task, "memory_model", None)  # a plugin API 1 task may not subclass Task
    figures = model_of(micro) if model_of is not None else None
    if not figures:
        return None
    return MemoryEstimate(
        device=str(plan.ctx.device),
        kind="gpu" if plan.ctx.is_cuda else "ram",
        capacity=device_memory_bytes(plan.ctx.device),
        weights=int(figures["weights"]),
        gradients=int(figures["gradients"]),
        optimizer=int(figures["optimizer"]),
        activations=int(figures["activations"]),
        other=int(figures.get("other", 0)),
        micro_batch=micro,
        batch_size=plan.engine.batch_size,
        activation_per_example=figures["activations"] / max(1, micro),
        activation_intercept=0.0,
        parameters=static.parameters,
        trainable=static.trainable,
        probe={"method": "analytic", "measured": {}, "cached": False, "probe_error": why},
    )


def plan_micro_batch(plan: Any) -> int:
    """The micro-batch the plan's run steps with (before any out-of-memory split)."""
    return max(1, math.ceil(plan.engine.batch_size / max(1, plan.position.micro_splits)))


def largest_micro_batch(estimate: MemoryEstimate) -> int:
    """The largest micro-batch whose estimate leaves ``HEADROOM`` free (at least 1, at most the batch)."""
    if estimate.activation_per_example <= 0:
        return estimate.batch_size
    room = estimate.capacity * (1 - HEADROOM) - (estimate.weights + estimate.gradients + estimate.optimizer + estimate.other)
    best = math.floor((room - estimate.activation_intercept) / estimate.activation_per_example)
    return max(1, min(estimate.batch_size, best))


def parse_micro_batch_size(value: Any) -> int | None:
    """``micro_batch_size``: None for auto, 0 for the whole batch, else N; UsageError for anything else."""
    text = str(value).strip().lower()
    if text == "auto":
        return None
    try:
        number = int(text)
    except ValueError:
        number = -1
    if number < 0:
        raise UsageError(f"bad value for parameter micro_batch_size: {value!r} (expected auto, 0 or a positive number)")
    return number


def apply_micro_batch(plan: Any) -> MemoryEstimate | None:
    """Set the plan's micro-batch from ``micro_batch_size`` (auto: from the estimate); the estimate if one was made."""
    wanted = parse_micro_batch_size(plan.engine.micro_batch_size)
    batch_size = plan.engine.batch_size
    if plan.resumed:  # the checkpoint's position keeps the micro-batches the run used
        return None
    estimate = None
    if wanted is None:
        estimate = estimate_memory(plan, micro_batch=batch_size)
        wanted = largest_micro_batch(estimate)
        estimate = replace_micro(estimate, wanted)
    if wanted:
        plan.position.micro_splits = max(1, math.ceil(batch_size / min(wanted, batch_size)))
    return estimate


def replace_micro(estimate: MemoryEstimate, micro: int) -> MemoryEstimate:
    import dataclasses

    activations = int(max(0.0, estimate.activation_intercept + estimate.activation_per_example * micro))
    return dataclasses.replace(estimate, micro_batch=micro, activations=activations)

"""The check's own tasks, registered with ``registry().add_plugin`` (never installed).

* ``gpu-check-tensors``: images that are already on the device (a pool of
  random tensors indexed on the GPU), with a small CNN, ResNet-18 or
  ResNet-50: throughput without a loader, precision and TF32 probes.
* ``gpu-check-memory``: a convolution stack without batch norm whose
  activations are sized to overflow a memory cap (out-of-memory recovery;
  without batch norm, micro-batches give the same gradient).
* ``gpu-check-image`` / ``gpu-check-text``: the built-in image and text tasks
  with probes that note what the model really ran with (memory format,
  autocast dtype, attention implementation and SDPA kernels).  They are
  subclasses of whatever class the built-in task's factory names, built on
  first use, so a move inside the plugins does not break them.

What a probe saw is kept in ``PROBES[task id]`` (runs are in-process).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import trainlab
from trainlab import ClassificationTask, DataSummary, Param, TaskSpec

PROBES: dict[str, dict[str, Any]] = {}
PROFILED_STEP = 3  # the training forward the text probe profiles (after warm-up)

TENSOR_PARAMS = (
    Param("arch", "choice", "small", "Model.", choices=("small", "resnet18", "resnet50")),
    Param("image_size", "int", 64, "Image side.", minimum=16, maximum=1024),
    Param("pool", "int", 256, "Distinct images kept on the device.", minimum=1, maximum=1_000_000),
    Param("length", "int", 1024, "Images per epoch (indices wrap around the pool).", minimum=1, maximum=10**9),
    Param("classes", "int", 10, "Classes.", minimum=2, maximum=100_000),
    Param("loss_multiplier", "float", 1.0, "Loss scale (large: fp16 gradients overflow).", minimum=0.0, maximum=1e12),
    Param("probe", "bool", False, "Record autocast, layouts and TF32 at the first step."),
)
MEMORY_PARAMS = (
    Param("channels", "int", 64, "Convolution width.", minimum=1, maximum=4096),
    Param("layers", "int", 8, "Convolutions.", minimum=1, maximum=256),
    Param("side", "int", 128, "Image side.", minimum=8, maximum=4096),
    Param("n_train", "int", 512, "Training images.", minimum=1, maximum=10**7),
    Param("n_val", "int", 128, "Validation images.", minimum=0, maximum=10**7),
    Param("classes", "int", 10, "Classes.", minimum=2, maximum=1000),
    Param("oom_above", "int", 0, "CPU dry run: raise out-of-memory for micro-batches above this (0: off).", minimum=0),
)
SYNTHETIC_DEFAULTS = {"epochs": 1, "batch_size": 32, "lr": 1e-3, "schedule": "constant", "warmup_ratio": 0.0}


class GpuCheckPlugin:
    @trainlab.hookimpl
    def trainlab_api_version(self) -> str:
        return "1.0"

    @trainlab.hookimpl
    def trainlab_tasks(self) -> list[TaskSpec]:
        from trainlab.pluginhost.host import registry

        specs = [
            TaskSpec(id="gpu-check-tensors", title="GPU check: images on the device", factory="gpucheck.tasks:TensorImageTask",
                     params=TENSOR_PARAMS, defaults=SYNTHETIC_DEFAULTS, data_kind="file"),  # fmt: skip
            TaskSpec(id="gpu-check-memory", title="GPU check: memory-hungry convolutions", factory="gpucheck.tasks:MemoryHungryTask",
                     params=MEMORY_PARAMS, defaults=SYNTHETIC_DEFAULTS, data_kind="file"),  # fmt: skip
        ]
        reg = registry()
        for probe_id, builtin, factory in (
            ("gpu-check-image", "image-classification", "gpucheck.tasks:ProbedImageTask"),
            ("gpu-check-text", "text-classification", "gpucheck.tasks:ProbedTextTask"),
        ):
            spec = reg.task(builtin).spec
            specs.append(replace(spec, id=probe_id, title=f"GPU check: {spec.title}", factory=factory))
        return specs


# -- data ---------------------------------------------------------------------------------------


_POOLS: dict[tuple[Any, ...], tuple[Any, Any]] = {}


def tensor_pool(n: int, side: int, classes: int, device: Any, channels_last: bool) -> tuple[Any, Any]:
    """``n`` random images and learnable labels (the quantile of the red channel's mean), on ``device``.

    Made once per process: the figures' runs and hand-written loops share it.
    """
    import torch

    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    key = (n, side, classes, str(device), channels_last)
    if key not in _POOLS:
        _POOLS[key] = _make_pool(n, side, classes, device, channels_last)
    return _POOLS[key]


def _make_pool(n: int, side: int, classes: int, device: Any, channels_last: bool) -> tuple[Any, Any]:
    import torch

    gen = torch.Generator().manual_seed(1234)
    x = torch.randn(n, 3, side, side, generator=gen)
    score = x[:, 0].mean(dim=(1, 2)) + 0.5 * x[:, 1, : side // 2].mean(dim=(1, 2))
    edges = torch.quantile(score, torch.linspace(0, 1, classes + 1)[1:-1])
    y = torch.bucketize(score, edges)
    x = x.to(device)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    return x, y.to(device)


class DeviceImages:
    """``length`` images cycling through a pool that lives on the device.

    ``__getitems__`` gathers a whole batch on the device: its indices go up
    through pinned memory without a blocking copy, so the loader never waits
    for the GPU.
    """

    def __init__(self, x: Any, y: Any, length: int):
        self.x, self.y, self.length = x, y, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int):
        i = i % len(self.y)
        return self.x[i], self.y[i]

    def __getitems__(self, indices: list[int]):
        import torch

        idx = torch.tensor(indices, dtype=torch.long)
        if self.x.is_cuda:
            idx = idx.pin_memory().to(self.x.device, non_blocking=True)
        idx = idx % len(self.y)
        return self.x[idx], self.y[idx]


def keep_batch(items: Any) -> Any:
    return items


def small_cnn(classes: int) -> Any:
    import torch.nn as nn

    def block(cin: int, cout: int) -> list[Any]:
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

    return nn.Sequential(
        *block(3, 32), nn.MaxPool2d(2), *block(32, 64), nn.MaxPool2d(2), *block(64, 128),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, classes),
    )  # fmt: skip


def image_model(arch: str, classes: int) -> Any:
    if arch == "small":
        return small_cnn(classes)
    import torchvision

    return getattr(torchvision.models, arch)(weights=None, num_classes=classes)


class _InMemory(ClassificationTask):
    """Data made in memory; ``--data`` only names a placeholder file."""

    def splits(self) -> list[str]:
        return [s for s in ("train", "val") if s in self.data]

    def dataset(self, split: str):
        return self.data[split]

    def collate(self, items):
        return items

    def forward(self, model, batch):
        x, y = batch
        return model(x), y

    def save_model(self, model, out_dir, ctx) -> None:
        from safetensors.torch import save_file

        save_file({k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}, str(out_dir / "model.safetensors"))


class TensorImageTask(_InMemory):
    def prepare(self, data_path, ctx, label_names=None) -> DataSummary:
        p = self.params
        classes = int(p["classes"])
        self.label_names = [str(i) for i in range(classes)]
        x, y = tensor_pool(int(p["pool"]), int(p["image_size"]), classes, ctx.device, ctx.is_cuda)
        self.data = {"train": DeviceImages(x, y, int(p["length"]))}
        return DataSummary(label_names=self.label_names, counts={})

    def build_model(self, ctx):
        return image_model(str(self.params["arch"]), int(self.params["classes"]))

    def prepare_model(self, model, ctx):
        import torch

        model = model.to(ctx.device)
        return model.to(memory_format=torch.channels_last) if ctx.is_cuda else model

    def to_device(self, batch, ctx):
        import torch

        x, y = batch  # already on the device; the gather does not keep the layout
        return (x.contiguous(memory_format=torch.channels_last) if ctx.is_cuda else x), y

    def train_step(self, model, batch, ctx):
        if self.params["probe"] and "first_step" not in PROBES.setdefault(self.spec.id, {}):
            PROBES[self.spec.id]["first_step"] = probe_step(model, batch[0], ctx)
        loss, n = super().train_step(model, batch, ctx)
        multiplier = float(self.params["loss_multiplier"])
        return (loss * multiplier if multiplier != 1.0 else loss), n


class MemoryHungryTask(_InMemory):
    def prepare(self, data_path, ctx, label_names=None) -> DataSummary:
        import torch

        p = self.params
        classes = int(p["classes"])
        self.label_names = [str(i) for i in range(classes)]
        n_train, n_val = int(p["n_train"]), int(p["n_val"])
        x, y = tensor_pool(n_train + n_val, int(p["side"]), classes, torch.device("cpu"), False)
        self.data = {"train": InMemoryRows(x[:n_train], y[:n_train])}
        if n_val:
            self.data["val"] = InMemoryRows(x[n_train:], y[n_train:])
        return DataSummary(label_names=self.label_names, counts={})

    def build_model(self, ctx):
        import torch.nn as nn

        c, classes = int(self.params["channels"]), int(self.params["classes"])
        layers: list[Any] = [nn.Conv2d(3, c, 3, padding=1), nn.ReLU()]
        for _ in range(int(self.params["layers"]) - 1):
            layers += [nn.Conv2d(c, c, 3, padding=1), nn.ReLU()]
        return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, classes))

    def train_step(self, model, batch, ctx):
        limit = int(self.params["oom_above"])
        if limit and batch[0].shape[0] > limit:  # the CPU cannot run out of memory on cue
            import torch

            raise torch.OutOfMemoryError("CUDA out of memory (injected for the CPU dry run)")
        return super().train_step(model, batch, ctx)


class InMemoryRows:
    def __init__(self, x: Any, y: Any):
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int):
        return self.x[i], self.y[i]

    def __getitems__(self, indices: list[int]):
        import torch

        idx = torch.tensor(indices, dtype=torch.long)
        return self.x[idx], self.y[idx]


# -- probes ---------------------------------------------------------------------------------------


def autocast_state(device_type: str) -> dict[str, Any]:
    import torch

    enabled = torch.is_autocast_enabled(device_type)
    return {"enabled": bool(enabled), "dtype": str(torch.get_autocast_dtype(device_type)).replace("torch.", "") if enabled else None}


def first_conv(model: Any) -> Any:
    import torch

    return next((m for m in model.modules() if isinstance(m, torch.nn.Conv2d)), None)


def last_conv(model: Any) -> Any:
    import torch

    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    return convs[-1] if convs else None


def probe_step(model: Any, pixels: Any, ctx: Any) -> dict[str, Any]:
    """What the first training step runs with: autocast, layouts, dtypes, and TF32 in effect."""
    import torch

    from gpucheck.common import tf32_state

    device_type = ctx.device.type
    seen: dict[str, Any] = {
        "autocast": autocast_state(device_type),
        "input_channels_last": pixels.is_contiguous(memory_format=torch.channels_last),
        "input_dtype": str(pixels.dtype).replace("torch.", ""),
        "param_dtypes": sorted({str(p.dtype).replace("torch.", "") for p in model.parameters()}),
        "tf32": tf32_state(),
    }
    conv = first_conv(model)
    if conv is not None:
        seen["first_conv_weight_channels_last"] = conv.weight.is_contiguous(memory_format=torch.channels_last)
    with torch.autocast(device_type, enabled=False), torch.no_grad():
        seen["numerics"] = fp32_errors(ctx.device)
    return seen


def fp32_errors(device: Any) -> dict[str, float]:
    """Relative error of an fp32 matmul and convolution against float64: about 1e-4 to 1e-3 under TF32, 1e-6 without.

    Shapes of a real layer on CUDA (a tiny convolution might get a kernel
    without tensor cores); the float64 reference is computed on the same device.
    """
    import torch

    cuda = getattr(device, "type", str(device)) == "cuda"
    n, (batch, channels, side) = (2048, (32, 128, 56)) if cuda else (256, (2, 16, 16))
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=gen, dtype=torch.float64).to(device)
    b = torch.randn(n, n, generator=gen, dtype=torch.float64).to(device)
    x = torch.randn(batch, channels, side, side, generator=gen, dtype=torch.float64).to(device)
    w = torch.randn(channels, channels, 3, 3, generator=gen, dtype=torch.float64).to(device)
    exact, got = a @ b, (a.float() @ b.float()).double()
    conv_exact = torch.nn.functional.conv2d(x, w, padding=1)
    conv_got = torch.nn.functional.conv2d(x.float(), w.float(), padding=1).double()
    return {
        "matmul": float((got - exact).norm() / exact.norm()),
        "conv": float((conv_got - conv_exact).norm() / conv_exact.norm()),
    }


def _record_image_forward(task_id: str, model: Any, batch: dict[str, Any], logits: Any, features: Any) -> None:
    import torch

    store = PROBES.setdefault(task_id, {})
    if "first_step" in store:
        return
    pixels = batch["pixels"]
    conv = first_conv(model)
    store["first_step"] = {
        "autocast": autocast_state(pixels.device.type),
        "input_channels_last": pixels.is_contiguous(memory_format=torch.channels_last),
        "first_conv_weight_channels_last": None if conv is None else conv.weight.is_contiguous(memory_format=torch.channels_last),
        "last_conv_output_channels_last": None if features is None else features.is_contiguous(memory_format=torch.channels_last),
        "last_conv_output_dtype": None if features is None else str(features.dtype).replace("torch.", ""),
        "logits_dtype": str(logits.dtype).replace("torch.", ""),
        "param_dtypes": sorted({str(p.dtype).replace("torch.", "") for p in model.parameters()}),
    }


def _probed_image(base: type) -> type:
    class ProbedImageTask(base):
        def forward(self, model, batch):
            if not model.training or "first_step" in PROBES.get(self.spec.id, {}):
                return super().forward(model, batch)
            seen: list[Any] = []
            conv = last_conv(model)
            hook = conv.register_forward_hook(lambda m, i, o: seen.append(o)) if conv is not None else None
            try:
                logits, targets = super().forward(model, batch)
            finally:
                if hook is not None:
                    hook.remove()
            _record_image_forward(self.spec.id, model, batch, logits, seen[-1] if seen else None)
            return logits, targets

    return ProbedImageTask


def _probed_text(base: type) -> type:
    class ProbedTextTask(base):
        def build_model(self, ctx):
            model = super().build_model(ctx)
            config = getattr(model, "config", None)
            PROBES.setdefault(self.spec.id, {})["attn_implementation"] = getattr(config, "_attn_implementation", None)
            return model

        def forward(self, model, batch):
            store = PROBES.setdefault(self.spec.id, {})
            if not model.training:
                return super().forward(model, batch)
            store["train_forwards"] = store.get("train_forwards", 0) + 1
            if store["train_forwards"] != PROFILED_STEP:
                return super().forward(model, batch)
            import torch

            from torch.profiler import ProfilerActivity, profile

            # CPU activity alone: the ATen op names say which SDPA kernel was
            # dispatched, without needing CUPTI on the machine.
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                logits, targets = super().forward(model, batch)
            names = sorted({e.key for e in prof.key_averages() if "attention" in e.key.lower() or "sdpa" in e.key.lower()})
            store["attention_ops"] = names
            store["autocast"] = autocast_state(batch["input_ids"].device.type)
            store["logits_dtype"] = str(logits.dtype).replace("torch.", "")
            store["padded"] = bool((batch["attention_mask"] == 0).any()) if "attention_mask" in batch else None
            if torch.cuda.is_available():
                store["sdp_backends_enabled"] = {
                    name: bool(getattr(torch.backends.cuda, f"{name}_sdp_enabled", lambda: None)())
                    for name in ("flash", "mem_efficient", "cudnn", "math")
                }
            return logits, targets

    return ProbedTextTask


_PROBED = {"ProbedImageTask": ("image-classification", _probed_image), "ProbedTextTask": ("text-classification", _probed_text)}


def __getattr__(name: str) -> Any:
    # Built on first use from the class the built-in task's factory names;
    # a module attribute, so that pickling (spawned loader workers) finds it.
    if name not in _PROBED:
        raise AttributeError(name)
    from trainlab.pluginhost.host import load_factory, registry

    builtin, make = _PROBED[name]
    cls = make(load_factory(registry().task(builtin).spec.factory))
    cls.__name__ = cls.__qualname__ = name
    cls.__module__ = __name__
    globals()[name] = cls
    return cls

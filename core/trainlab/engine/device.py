"""Choosing the device, numeric precision and CPU threads of a run."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from trainlab.api.errors import UsageError
from trainlab.telemetry.nvml import init_failure_reason


def resolve_device(name: str) -> Any:
    """``auto`` picks cuda, then mps, then cpu; explicit names are checked."""
    import torch

    name = (name or "auto").strip().lower()
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise UsageError("--device mps: this machine has no usable Apple GPU (MPS)")
        return torch.device("mps")
    if name == "cuda" or name.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise UsageError(f"--device {name}: CUDA is not available: {cuda_unavailable_reason()}")
        index = 0
        if ":" in name:
            try:
                index = int(name.split(":", 1)[1])
            except ValueError:
                raise UsageError(f"--device {name}: expected cuda:N with N a number") from None
        count = torch.cuda.device_count()
        if not 0 <= index < count:
            raise UsageError(f"--device {name}: this machine has {count} CUDA device(s) (0..{count - 1})")
        return torch.device("cuda", index)
    raise UsageError(f"--device {name!r}: expected auto, cpu, cuda, cuda:N or mps")


def set_training_threads() -> int:
    """Keep torch's intra-op threads off one core, in the thread that trains; the count it trains with.

    torch's threads spin while they wait; with one per core the window's GUI
    thread (a run in its training thread), the loader and the event writer
    wait for a core as well as for the GIL.  Every run takes the same count
    whoever starts it (the CLI, the window, a child process, the queue): CPU
    reductions summed over another number of threads round differently, and
    the same settings and seed must give the same run.  A count the user set
    (``OMP_NUM_THREADS``, a group's share of the cores) is kept.
    """
    import torch

    cores = os.cpu_count() or 1
    if "OMP_NUM_THREADS" not in os.environ and cores > 1 and torch.get_num_threads() >= cores:
        torch.set_num_threads(cores - 1)
    return torch.get_num_threads()


def cuda_unavailable_reason() -> str:
    import torch

    if torch.version.cuda is None:
        return "this torch build has no CUDA support"
    try:
        import pynvml
    except ImportError as exc:
        return f"nvidia-ml-py, which asks the NVIDIA driver, is not installed ({exc})"
    try:
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
        if count == 0:
            return "no NVIDIA GPU found"
        return "the NVIDIA driver is present but torch cannot use it (driver too old for this torch build?)"
    except Exception as exc:  # noqa: BLE001 - NVML reports many kinds of absence
        # in the GPU panel's and `trainlab doctor`'s words ("the NVIDIA driver is not
        # installed (NVML library not found)"), not NVML's exception class
        return init_failure_reason(pynvml, exc)


def resolve_precision(device: Any, name: str) -> str:
    """fp32, bf16 or fp16 for a run on ``device``.

    ``auto`` is the mixed precision the device computes natively: bf16 on GPUs
    of compute capability 8.0+, else fp16; bf16 on a CPU with native bfloat16
    arithmetic (AVX512-BF16 or AMX, where torch's CPU kernels run bf16 matmuls
    and convolutions faster than fp32), else fp32; fp32 on MPS.
    """
    import torch

    name = (name or "auto").lower()
    if device.type != "cuda":
        if device.type == "cpu":
            if name == "fp16":
                # CPU autocast supports bf16; fp16 on CPU is slow and lossy.
                raise UsageError("--precision fp16 needs a CUDA GPU; use fp32 or bf16 on the CPU")
            if name == "auto":
                return "bf16" if cpu_has_native_bf16() else "fp32"
            return name
        return "fp32" if name == "auto" else name
    if name == "auto":
        major, _ = torch.cuda.get_device_capability(device)
        return "bf16" if major >= 8 else "fp16"
    if name == "bf16" and not _bf16_supported_on(torch, device):
        raise UsageError(f"--precision bf16: {torch.cuda.get_device_name(device)} does not support bfloat16")
    return name


def cpu_has_native_bf16() -> bool:
    """Whether this CPU does bfloat16 arithmetic in hardware (AVX512-BF16 or AMX tiles).

    Without either, torch emulates bf16 on the CPU through fp32 and a run in
    it is slower, not faster, so ``auto`` stays fp32 there.  torch asks the
    CPU itself (cpuinfo); where this torch lacks the query, the answer is no.
    """
    import torch

    cpu = getattr(torch, "cpu", None)
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    for check in checks:
        query = getattr(cpu, check, None)
        if query is not None:
            try:
                if query():
                    return True
            except (RuntimeError, AttributeError):  # a torch built without the CPU query
                continue
    return False


def _bf16_supported_on(torch: Any, device: Any) -> bool:
    """bfloat16 on the run's GPU: torch asks of the current device, which may be another."""
    with torch.cuda.device(device):
        return bool(torch.cuda.is_bf16_supported())


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is torch running out of (GPU) memory."""
    import torch

    oom_type = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    return isinstance(exc, oom_type) or (isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower())


def enable_tf32(device: Any) -> None:
    """TF32 matmuls and convolutions on GPUs that have them (Ampere and newer)."""
    import torch

    if device.type != "cuda":
        return
    # Matmuls through the older switch on every torch: set through the newer
    # per-backend one alone (torch >= 2.9), torch raises on every reader of the
    # older (get_float32_matmul_precision, matmul.allow_tf32: plugins,
    # torch.compile's autotuner); this one sets both consistently.
    torch.set_float32_matmul_precision("high")
    conv = getattr(torch.backends.cudnn, "conv", None)
    if conv is not None and getattr(conv, "fp32_precision", None) is not None:
        conv.fp32_precision = "tf32"


def autocast(device: Any, precision: str):
    import torch

    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)

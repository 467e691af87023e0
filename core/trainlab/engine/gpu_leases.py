"""GPU leases: one machine-wide lock per GPU, by UUID, held by the process that uses it.

A lease is a ``FileLock`` on ``<lease dir>/<uuid>.lock``.  The lease folder
is machine-wide (``/tmp/trainlab-gpu-leases``, on Windows
``%PROGRAMDATA%\\trainlab-gpu-leases``; ``TRAINLAB_LEASE_DIR`` moves it), so
every user's queue and every directly started run on the workstation see
the same leases.  The process that trains holds the lease (the queue's
runner, or the ``execute`` of a run started with Start or ``trainlab
train``): when it ends, however it ends, the kernel releases the lease.
Processes it starts (torchrun's ranks) are covered by their ancestor's lease.

Within one process a lease is counted: the runner leases its GPUs, then the
engine's ``execute`` on one of them finds it already held here and adds a
count instead of locking twice.

A GPU nobody leases may still be in use by something outside TrainLab; the
scheduler skips a GPU whose used memory is above ``busy_threshold``: 2 GiB,
or a quarter of the card on cards under 8 GiB (a desktop's display server
takes a few hundred MiB, a training job gigabytes).  ``TRAINLAB_GPU_BUSY_MIB``
sets another threshold.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from trainlab.api.callbacks import Callback, RunState
from trainlab.api.errors import UsageError
from trainlab.system.locks import FileLock, Holder
from trainlab.telemetry.nvml import bare_uuid, decode, import_nvml, init_failure_reason

log = logging.getLogger("trainlab.queue")

LEASE_DIR_ENV = "TRAINLAB_LEASE_DIR"
BUSY_ENV = "TRAINLAB_GPU_BUSY_MIB"
GiB = 1024**3
BUSY_BYTES = 2 * GiB


def lease_dir() -> Path:
    named = os.environ.get(LEASE_DIR_ENV)
    if named:
        return Path(named).expanduser()
    if os.name == "nt":  # pragma: no cover - Windows
        return Path(os.environ.get("PROGRAMDATA", r"C:\ProgramData")) / "trainlab-gpu-leases"
    # not tempfile.gettempdir(): TMPDIR is often per user, and a lease must be seen by all
    return Path("/tmp/trainlab-gpu-leases")


def lease_path(uuid: str) -> Path:
    return lease_dir() / f"{bare_uuid(uuid)}.lock"


def busy_threshold(total_bytes: int | None) -> int:
    """Used memory above which a GPU without a lease counts as busy."""
    named = os.environ.get(BUSY_ENV, "").strip()
    if named:
        try:
            return int(float(named) * 1024**2)
        except ValueError:
            log.warning("%s=%r is not a number of MiB; using the default", BUSY_ENV, named)
    if total_bytes and total_bytes < 8 * GiB:
        return total_bytes // 4
    return BUSY_BYTES


@dataclass(frozen=True)
class Gpu:
    """One NVIDIA GPU as NVML sees it; ``uuid`` as NVML writes it (``GPU-...``), which CUDA_VISIBLE_DEVICES takes."""

    index: int
    uuid: str
    name: str = ""
    memory_used: int | None = None
    memory_total: int | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def read_gpus(nvml: Any = None) -> tuple[list[Gpu], str]:
    """The machine's GPUs and "" or, with none, why not.  ``nvml`` replaces ``pynvml`` (tests)."""
    module, reason = import_nvml(nvml)
    if module is None:
        return [], reason
    try:
        module.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVML reports absence in many ways
        return [], init_failure_reason(module, exc)
    gpus: list[Gpu] = []
    try:
        for index in range(int(module.nvmlDeviceGetCount())):
            try:
                handle = module.nvmlDeviceGetHandleByIndex(index)
                uuid = decode(module.nvmlDeviceGetUUID(handle))
                name = decode(module.nvmlDeviceGetName(handle))
            except Exception as exc:  # noqa: BLE001 - a GPU that cannot be named cannot be leased
                log.warning("GPU %d cannot be read through NVML (%s); skipped", index, exc)
                continue
            used = total = None
            try:
                memory = module.nvmlDeviceGetMemoryInfo(handle)
                used, total = int(memory.used), int(memory.total)
            except Exception:  # noqa: BLE001 - unknown memory: the lease alone decides
                pass
            gpus.append(Gpu(index, uuid, name, used, total))
    except Exception as exc:  # noqa: BLE001
        return [], f"NVML failed while listing GPUs ({type(exc).__name__}: {exc})"
    finally:
        try:
            module.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
    return gpus, "" if gpus else "the NVIDIA driver reports no GPU"


@dataclass(frozen=True)
class GpuState:
    """A GPU and whether a run can have it: not leased and not busy."""

    gpu: Gpu
    holder: Holder | None
    busy: bool

    @property
    def free(self) -> bool:
        return self.holder is None and not self.busy

    def why_not(self) -> str:
        if self.holder is not None:
            return f"leased by {self.holder.describe()}"
        if self.busy:
            return f"busy: {self.gpu.memory_used / GiB:.1f} GiB in use outside TrainLab"
        return ""


def gpu_states(gpus: Iterable[Gpu]) -> list[GpuState]:
    states = []
    for gpu in gpus:
        holder = holder_of(gpu.uuid)
        busy = holder is None and gpu.memory_used is not None and gpu.memory_used > busy_threshold(gpu.memory_total)
        states.append(GpuState(gpu, holder, busy))
    return states


# -- holding leases -------------------------------------------------------------


class LeaseTaken(UsageError):
    """A GPU that another process holds (exit 2 for a direct run: it names the holder)."""

    def __init__(self, uuid: str, holder: Holder | None, message: str = ""):
        self.uuid, self.holder = uuid, holder
        super().__init__(message or f"GPU {uuid} is leased by {holder.describe() if holder else 'another process'}")


_registry: dict[str, list[Any]] = {}  # bare uuid -> [FileLock, count]
_registry_lock = threading.Lock()


class Lease:
    """GPUs held by this process; ``release`` once (further calls do nothing)."""

    def __init__(self, uuids: Iterable[str]):
        self.uuids = tuple(uuids)
        self._released = False

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        with _registry_lock:
            for uuid in self.uuids:
                slot = _registry.get(bare_uuid(uuid))
                if slot is None:
                    continue
                slot[1] -= 1
                if slot[1] <= 0:
                    slot[0].release()
                    del _registry[bare_uuid(uuid)]

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def acquire(uuids: Iterable[str], purpose: str) -> Lease:
    """Lease every GPU of ``uuids``, or none: LeaseTaken names the first one held elsewhere."""
    uuids = list(uuids)
    taken: list[str] = []
    with _registry_lock:
        for uuid in uuids:
            key = bare_uuid(uuid)
            slot = _registry.get(key)
            if slot is not None:
                slot[1] += 1
                taken.append(uuid)
                continue
            lock = FileLock(lease_path(uuid), shared_folder=LEASE_DIR_ENV not in os.environ)
            if lock.try_acquire(purpose):
                _registry[key] = [lock, 1]
                taken.append(uuid)
                continue
            holder = lock.holder()
            for done in taken:  # all or nothing
                slot = _registry[bare_uuid(done)]
                slot[1] -= 1
                if slot[1] <= 0:
                    slot[0].release()
                    del _registry[bare_uuid(done)]
            raise LeaseTaken(uuid, holder)
    return Lease(taken)


def holder_of(uuid: str) -> Holder | None:
    """Who leases the GPU now (this process included); None when it is free."""
    with _registry_lock:
        slot = _registry.get(bare_uuid(uuid))
        if slot is not None:
            return slot[0].holder()
    return FileLock(lease_path(uuid)).holder()


def held_by_an_ancestor(holder: Holder | None) -> bool:
    """Whether the holder is a process that started this one (torchrun's ranks under the queue's runner)."""
    if holder is None or not holder.pid or (holder.host and holder.host != socket.gethostname()):
        return False
    try:
        import psutil

        return holder.pid in {p.pid for p in psutil.Process().parents()}
    except Exception:  # noqa: BLE001
        return False


# -- the engine's hook: a run holds the lease of the GPU it trains on -------------


class DeviceLease(Callback):
    """Holds a run's GPU lease until the run ends (``execute`` adds it first)."""

    def __init__(self, lease: Lease | None):
        self.lease = lease

    def on_run_end(self, state: RunState) -> None:
        self.release()

    def release(self) -> None:
        if self.lease is not None:
            self.lease.release()
            self.lease = None

    def __del__(self) -> None:  # execute raised before the run began: do not keep the GPU
        self.release()


def hold_device_lease(device: Any, uuid_of: Any = None) -> Callback:
    """The lease of the CUDA device a run is about to use, as a callback that
    releases it when the run ends; a no-op callback off CUDA.  UsageError
    (exit 2) when another process, not an ancestor of this one, holds it."""
    if getattr(device, "type", None) != "cuda":
        return Callback()
    index = device.index or 0
    uuid = (uuid_of or cuda_uuid)(index)
    if not uuid:
        log.debug("no UUID for cuda:%s; the run takes no lease", index)
        return Callback()
    try:
        return DeviceLease(acquire([uuid], f"trainlab run on cuda:{index}"))
    except LeaseTaken as exc:
        if held_by_an_ancestor(exc.holder):
            return Callback()
        raise LeaseTaken(
            uuid,
            exc.holder,
            f"--device cuda:{index}: that GPU ({uuid}) is leased by {exc.holder.describe() if exc.holder else 'another process'}; "
            "choose another --device, or add the run to the queue (trainlab queue add), which waits for a free GPU",
        ) from None
    except OSError as exc:  # the lease folder is unusable: say so, never block a run over it
        log.warning("GPU lease for cuda:%s not taken (%s)", index, exc)
        return Callback()


def cuda_uuid(index: int) -> str:
    """The UUID of torch's CUDA device ``index`` ("" when torch cannot say)."""
    try:
        import torch

        return str(torch.cuda.get_device_properties(index).uuid)
    except Exception:  # noqa: BLE001 - an old torch, or no such device
        return ""


def torch_index(uuid: str) -> int | None:
    """torch's index of the CUDA device with this UUID (None when this process cannot see it)."""
    try:
        import torch

        count = torch.cuda.device_count()
    except Exception:  # noqa: BLE001
        return None
    for index in range(count):
        if bare_uuid(cuda_uuid(index)) == bare_uuid(uuid):
            return index
    return None

"""The sampler: GPUs through NVML, this process's torch CUDA memory, CPU, RAM, disk.

One ``SystemSample`` per ``sample()``, or one every ``interval`` seconds from
a daemon thread (``start(sink)``).  It knows nothing of runs: the window's
GPU panel uses it alone, and ``TelemetryCallback`` (``callback.py``) puts it
beside a training run.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Collection

from trainlab.api.errors import UsageError
from trainlab.api.events import GPUS_READ, SystemSample
from trainlab.system.paths import data_dir
from trainlab.telemetry.nvml import (
    bare_uuid,
    constant,
    decode,
    error_code,
    import_nvml,
    init_failure_reason,
    return_code,
)

# The log users and docs/telemetry.md know, whichever module of the package writes.
log = logging.getLogger("trainlab.telemetry")

MIN_INTERVAL = 0.5
MAX_INTERVAL = 5.0  # the slowest a live view (the window's GPU panel) refreshes
# The longest period of a sampling thread: a run's ``telemetry_every`` may space
# its samples up to an hour, and its sampler then wakes once an hour, not every 5 s.
MAX_RUN_INTERVAL = 3600.0
DEFAULT_INTERVAL = 1.0
OK = GPUS_READ
NO_GPU = "no NVIDIA GPU"

# Keys of every GPU entry, always present (None when unknown) so readers of
# metrics.jsonl see one schema whatever the GPU supports.
GPU_FIELDS = (
    "index",
    "name",
    "uuid",
    "status",  # "ok" or "lost"
    "error",
    "utilization_percent",
    "memory_utilization_percent",
    "memory_used_bytes",
    "memory_total_bytes",
    "temperature_c",
    "power_w",
    "power_limit_w",
    "sm_clock_mhz",
    "fan_percent",
    "processes",  # [{"pid", "used_bytes", "name", "this_process"}] or None
    "torch_device",  # "cuda:N" when this process's torch uses this GPU
    "torch_allocated_bytes",
    "torch_reserved_bytes",
)


def check_interval(seconds: float, maximum: float = MAX_INTERVAL) -> float:
    """The sampling interval, or UsageError naming the allowed range (``MIN_INTERVAL`` to ``maximum``)."""
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        raise UsageError(f"telemetry interval {seconds!r}: expected seconds between {MIN_INTERVAL:g} and {maximum:g}") from None
    if not MIN_INTERVAL <= value <= maximum:
        raise UsageError(f"telemetry interval {value:g} s: must be between {MIN_INTERVAL:g} and {maximum:g} s")
    return value



class _Gpu:
    def __init__(self, index: int, handle: Any, name: str, uuid: str):
        self.index = index
        self.handle = handle
        self.name = name
        self.uuid = uuid
        self.unsupported: set[str] = set()
        self.lost = ""

    @property
    def label(self) -> str:
        return f"GPU {self.index} ({self.name})"


class TelemetrySampler:
    """Samples the GPUs and the system; ``sample()`` once, or ``start()`` a thread.

    ``interval`` is the period of the sampling thread, 0.5 s to an hour
    (``MAX_RUN_INTERVAL``); CPU busy is the average since the previous sample.  ``path``
    is the folder whose disk's free space is reported (the run folder; by
    default TrainLab's data folder).  ``nvml`` replaces the ``pynvml`` module.
    ``only_uuids`` samples those GPUs alone (a rank reading its own GPU).
    NVML is initialised once, on the first sample, and shut down by
    ``close()``.
    """

    def __init__(
        self,
        interval: float = DEFAULT_INTERVAL,
        *,
        path: str | os.PathLike[str] | None = None,
        nvml: Any = None,
        processes: bool = True,
        only_uuids: Collection[str] | None = None,
    ) -> None:
        self.interval = check_interval(interval, MAX_RUN_INTERVAL)
        self._only = None if only_uuids is None else {bare_uuid(u) for u in only_uuids}
        self.path = Path(path) if path is not None else None
        self.processes = processes
        self.gpu_status = ""
        self.problems: list[str] = []
        self.latest: SystemSample | None = None
        self._on_problem: list[Callable[[str], None]] = []
        self._injected = nvml
        self._nvml: Any = None
        self._opened = False
        self._gpus: list[_Gpu] = []
        self._reported: set[Any] = set()
        self._process_names: dict[int, str | None] = {}
        self._torch_map: dict[int, int] | None = None  # NVML index -> torch index
        self._cpu_last: Any = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._prime_cpu()

    # -- lifecycle ---------------------------------------------------------------------
    def on_problem(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(message)`` for each problem (each is reported once)."""
        self._on_problem.append(listener)

    def open(self) -> str:
        """Start NVML and find the GPUs (once); returns ``gpu_status``."""
        with self._lock:
            self._open()
        return self.gpu_status

    def _open(self) -> None:
        if self._opened:
            return
        self._opened = True
        nvml, reason = import_nvml(self._injected)
        if nvml is None:
            self._no_gpu(reason)
            return
        try:
            nvml.nvmlInit()
        except Exception as exc:  # noqa: BLE001 - every failure to start means "no GPU"
            self._no_gpu(init_failure_reason(nvml, exc))
            return
        self._nvml = nvml
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except Exception as exc:  # noqa: BLE001
            self._no_gpu(f"NVML could not count the GPUs ({type(exc).__name__}: {exc})")
            return
        for index in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
            except Exception as exc:  # noqa: BLE001 - one broken GPU must not hide the others
                self._report(("handle", index), f"GPU {index}: NVML cannot open it ({exc}); it is not sampled")
                continue
            gpu = _Gpu(index, handle, f"GPU {index}", "")
            gpu.name = decode(self._query(gpu, "nvmlDeviceGetName") or gpu.name)
            gpu.uuid = decode(self._query(gpu, "nvmlDeviceGetUUID") or "")
            if self._only is not None and bare_uuid(gpu.uuid) not in self._only:
                continue
            self._gpus.append(gpu)
        if not self._gpus:
            self._no_gpu("the NVIDIA driver reports no GPU" if count == 0 else "NVML cannot open any GPU")
        else:
            self.gpu_status = OK

    def _no_gpu(self, reason: str) -> None:
        self.gpu_status = f"{NO_GPU}: {reason}"
        # One line, once: the no-GPU state is normal on laptops and in CI.
        log.info("telemetry: %s; sampling CPU and RAM only", self.gpu_status)

    def close(self) -> None:
        """Stop the thread and shut NVML down."""
        self.stop()
        with self._lock:
            if self._nvml is not None:
                try:
                    self._nvml.nvmlShutdown()
                except Exception:  # noqa: BLE001 - nothing useful to do at shutdown
                    pass
                self._nvml = None
            self._gpus = []
            self._opened = False  # a later sample() starts NVML again
            self._torch_map = None

    def __enter__(self) -> "TelemetrySampler":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the sampling thread -------------------------------------------------------------
    def start(self, sink: Callable[[SystemSample], None]) -> None:
        """Sample every ``interval`` seconds in a daemon thread, passing each to ``sink``."""
        if self._thread is not None and self._thread.is_alive():
            raise RuntimeError("the telemetry sampler is already running")
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(sink,), name="trainlab-telemetry", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            # An NVML call can block on a failing GPU; the thread is a daemon,
            # so a bounded wait is enough.
            thread.join(self.interval + 5.0 if timeout is None else timeout)
        self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self, sink: Callable[[SystemSample], None]) -> None:
        # The first sample is taken even if stop() came already: a run shorter
        # than the interval still records the machine it ran on.
        due = time.monotonic()
        while True:
            try:
                sample = self.sample()
            except Exception as exc:  # noqa: BLE001 - telemetry must never stop a run
                self._report("sample", f"telemetry sampling failed: {type(exc).__name__}: {exc}")
                sample = None
            if sample is not None:
                try:
                    sink(sample)
                except Exception as exc:  # noqa: BLE001
                    self._report("sink", f"telemetry consumer failed: {type(exc).__name__}: {exc}")
            due += self.interval
            delay = due - time.monotonic()
            if delay < 0:  # fell behind (a slow query): do not burst to catch up
                due, delay = time.monotonic(), 0.0
            if self._stop.wait(delay):
                return

    # -- one sample ------------------------------------------------------------------------
    def sample(self) -> SystemSample:
        with self._lock:
            self._open()
            torch_memory = self._torch_memory()
            gpus = tuple(self._read_gpu(gpu, torch_memory) for gpu in self._gpus)
            status = self._status()
            memory = self._ram()
            allocated = reserved = None
            if torch_memory:
                allocated = sum(a for a, _ in torch_memory.values())
                reserved = sum(r for _, r in torch_memory.values())
            sample = SystemSample(
                time=time.time(),
                cpu_percent=self._cpu_percent(),
                ram_used_bytes=memory[0],
                ram_total_bytes=memory[1],
                disk_free_bytes=self._disk_free(),
                torch_allocated_bytes=allocated,
                torch_reserved_bytes=reserved,
                gpus=gpus,
                gpu_status=status,
            )
            self.latest = sample
            return sample

    def _status(self) -> str:
        if self.gpu_status != OK:
            return self.gpu_status
        lost = [f"{g.label} lost: {g.lost}" for g in self._gpus if g.lost]
        if lost and len(lost) == len(self._gpus):
            return f"{NO_GPU}: " + "; ".join(lost)
        return "; ".join(lost) if lost else OK

    def _read_gpu(self, gpu: _Gpu, torch_memory: dict[int, tuple[int, int]] | None) -> dict[str, Any]:
        entry: dict[str, Any] = dict.fromkeys(GPU_FIELDS)
        entry.update(index=gpu.index, name=gpu.name, uuid=gpu.uuid, status="ok", error="")
        nvml = self._nvml
        rates = self._query(gpu, "nvmlDeviceGetUtilizationRates")
        if rates is not None:
            entry["utilization_percent"] = int(rates.gpu)
            entry["memory_utilization_percent"] = int(rates.memory)
        memory = self._query(gpu, "nvmlDeviceGetMemoryInfo")
        if memory is not None:
            entry["memory_used_bytes"] = int(memory.used)
            entry["memory_total_bytes"] = int(memory.total)
        temperature = self._query(gpu, "nvmlDeviceGetTemperature", constant(nvml, "NVML_TEMPERATURE_GPU", 0))
        entry["temperature_c"] = None if temperature is None else int(temperature)
        power = self._query(gpu, "nvmlDeviceGetPowerUsage")
        entry["power_w"] = None if power is None else power / 1000.0  # NVML answers milliwatts
        limit = self._query(gpu, "nvmlDeviceGetEnforcedPowerLimit")
        entry["power_limit_w"] = None if limit is None else limit / 1000.0
        clock = self._query(gpu, "nvmlDeviceGetClockInfo", constant(nvml, "NVML_CLOCK_SM", 1))
        entry["sm_clock_mhz"] = None if clock is None else int(clock)
        fan = self._query(gpu, "nvmlDeviceGetFanSpeed")
        entry["fan_percent"] = None if fan is None else int(fan)
        if self.processes:
            entry["processes"] = self._processes(gpu)
        if torch_memory:
            torch_index = self._torch_index(gpu)
            if torch_index is not None and torch_index in torch_memory:
                entry["torch_device"] = f"cuda:{torch_index}"
                entry["torch_allocated_bytes"], entry["torch_reserved_bytes"] = torch_memory[torch_index]
        if gpu.lost:
            entry["status"], entry["error"] = "lost", gpu.lost
            for key in GPU_FIELDS[5:]:  # stale values of a lost GPU would mislead
                entry[key] = None
        return entry

    def _query(self, gpu: _Gpu, name: str, *args: Any) -> Any:
        """One NVML query; None when unsupported or failed (reported once)."""
        if gpu.lost or name in gpu.unsupported:
            return None
        nvml = self._nvml
        try:
            return getattr(nvml, name)(gpu.handle, *args)
        except Exception as exc:  # noqa: BLE001 - sort NVML's answers below
            code = error_code(nvml, exc)
            what = name.removeprefix("nvmlDeviceGet")
            if isinstance(exc, AttributeError) or code in (
                return_code(nvml, "NVML_ERROR_NOT_SUPPORTED"),
                return_code(nvml, "NVML_ERROR_FUNCTION_NOT_FOUND"),
            ):
                gpu.unsupported.add(name)  # a fact about this GPU or driver: stop asking
            elif code in (return_code(nvml, "NVML_ERROR_GPU_IS_LOST"), return_code(nvml, "NVML_ERROR_RESET_REQUIRED")):
                gpu.lost = str(exc) or "GPU is lost"
                self._report(("lost", gpu.index), f"{gpu.label} is lost ({gpu.lost}); it is no longer sampled")
            elif code == return_code(nvml, "NVML_ERROR_NO_PERMISSION"):
                gpu.unsupported.add(name)
                self._report(("permission", gpu.index, name), f"{gpu.label}: no permission to read {what}")
            else:
                self._report(
                    ("query", gpu.index, name),
                    f"{gpu.label}: reading {what} failed ({type(exc).__name__}: {exc}); sampling goes on",
                )
            return None

    def _processes(self, gpu: _Gpu) -> list[dict[str, Any]] | None:
        found: dict[int, dict[str, Any]] = {}
        answered = False
        for name in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            infos = self._query(gpu, name)
            if infos is None:
                continue
            answered = True
            for info in infos:
                pid = int(info.pid)
                used = getattr(info, "usedGpuMemory", None)  # None under Windows WDDM
                entry = found.setdefault(
                    pid,
                    {"pid": pid, "used_bytes": None, "name": self._process_name(pid), "this_process": pid == os.getpid()},
                )
                if used is not None:
                    entry["used_bytes"] = (entry["used_bytes"] or 0) + int(used)
        return sorted(found.values(), key=lambda p: p["pid"]) if answered else None

    def _process_name(self, pid: int) -> str | None:
        # In a container NVML gives the host's pids, which psutil cannot see:
        # the name is then None, the pid and memory still stand.
        if pid not in self._process_names:
            if len(self._process_names) > 512:
                self._process_names.clear()
            try:
                import psutil

                self._process_names[pid] = psutil.Process(pid).name()
            except Exception:  # noqa: BLE001 - NoSuchProcess, AccessDenied, ...
                self._process_names[pid] = None
        return self._process_names[pid]

    # -- torch ---------------------------------------------------------------------------
    def _torch_memory(self) -> dict[int, tuple[int, int]] | None:
        """Allocated and reserved bytes per torch CUDA device, if CUDA is in use."""
        torch = sys.modules.get("torch")  # never import torch just for this
        cuda = getattr(torch, "cuda", None)
        if cuda is None:
            return None
        try:
            if not cuda.is_initialized():
                return None
            return {i: (int(cuda.memory_allocated(i)), int(cuda.memory_reserved(i))) for i in range(cuda.device_count())}
        except Exception as exc:  # noqa: BLE001
            self._report("torch", f"reading torch CUDA memory failed ({type(exc).__name__}: {exc})")
            return None

    def _torch_index(self, gpu: _Gpu) -> int | None:
        if self._torch_map is None:
            self._torch_map = self._map_torch_devices()
        return self._torch_map.get(gpu.index)

    def _map_torch_devices(self) -> dict[int, int]:
        # NVML numbers GPUs by PCI bus and ignores CUDA_VISIBLE_DEVICES; torch
        # does neither, so match the two by UUID.
        cuda = sys.modules["torch"].cuda
        by_uuid = {bare_uuid(g.uuid): g.index for g in self._gpus if g.uuid}
        mapping: dict[int, int] = {}
        try:
            for i in range(cuda.device_count()):
                uuid = getattr(cuda.get_device_properties(i), "uuid", None)
                if uuid is not None and bare_uuid(str(uuid)) in by_uuid:
                    mapping[by_uuid[bare_uuid(str(uuid))]] = i
        except Exception:  # noqa: BLE001 - mapping is a nicety
            pass
        if not mapping and len(self._gpus) == 1 and cuda.device_count() == 1:
            mapping[self._gpus[0].index] = 0
        return mapping

    # -- psutil ----------------------------------------------------------------------------
    def _prime_cpu(self) -> None:
        try:
            import psutil

            self._cpu_last = psutil.cpu_times()
        except Exception:  # noqa: BLE001
            self._cpu_last = None

    def _cpu_percent(self) -> float | None:
        # System-wide CPU busy share since the previous sample.  Computed here
        # rather than with psutil.cpu_percent(), whose "since last call" state
        # is per calling thread and so wrong on a thread's first sample.
        import psutil

        last, now = self._cpu_last, psutil.cpu_times()
        self._cpu_last = now
        if last is None:
            return None
        total = _cpu_total(now) - _cpu_total(last)
        if total <= 0:
            return None
        busy = total - (_cpu_idle(now) - _cpu_idle(last))
        return round(max(0.0, min(100.0, 100.0 * busy / total)), 1)

    def _ram(self) -> tuple[int | None, int | None]:
        import psutil

        memory = psutil.virtual_memory()
        return int(memory.total - memory.available), int(memory.total)

    def _disk_free(self) -> int | None:
        import psutil

        if self.path is not None:
            path = self.path
        else:
            path = data_dir()
        path = path.resolve()
        while not path.exists() and path != path.parent:
            path = path.parent
        try:
            return int(psutil.disk_usage(str(path)).free)
        except OSError:
            return None

    # -- problems --------------------------------------------------------------------------
    def _report(self, key: Any, message: str) -> None:
        if key in self._reported:
            return
        self._reported.add(key)
        self.problems.append(message)
        log.warning("telemetry: %s", message)
        for listener in list(self._on_problem):
            try:
                listener(message)
            except Exception:  # noqa: BLE001 - a listener must not break sampling
                log.exception("telemetry problem listener failed")


def _cpu_total(times: Any) -> float:
    total = sum(times)
    # On Linux guest time is already counted in user/nice (as psutil does).
    return total - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)


def _cpu_idle(times: Any) -> float:
    return times.idle + getattr(times, "iowait", 0.0)

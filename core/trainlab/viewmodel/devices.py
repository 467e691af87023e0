"""The device choices the parameter form offers, naming the GPUs found.

Asked of NVML (nvidia-ml-py), not torch: the window must come up before torch
is imported, and NVML answers in milliseconds.  ``CUDA_VISIBLE_DEVICES`` (a
list of indices) is honoured so ``cuda:N`` names the GPU torch will use; NVML
numbers GPUs in PCI bus order, which is also torch's order when
``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (the usual setting on multi-GPU machines).
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceChoice:
    value: str  # what goes into the ``device`` parameter
    label: str  # what the user reads
    detail: str = ""


@dataclass(frozen=True)
class GpuInfo:
    index: int  # CUDA's number (what --gpus and cuda:N take)
    name: str
    memory_bytes: int | None
    nvml_index: int | None = None  # NVML's (PCI bus) number, what telemetry labels a GPU by; None: the same as index

    @property
    def telemetry_index(self) -> int:
        return self.index if self.nvml_index is None else self.nvml_index


def nvml_gpus() -> tuple[list[GpuInfo], str]:
    """GPUs NVML sees, in CUDA numbering, and a reason when there are none."""
    try:
        import pynvml
    except Exception as exc:  # noqa: BLE001 - any import failure means "no NVML"
        return [], f"nvidia-ml-py is not available ({exc})"
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return [], f"no NVIDIA driver ({exc})"
    try:
        count = pynvml.nvmlDeviceGetCount()
        found = []
        for index in range(count):
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                name = pynvml.nvmlDeviceGetName(handle)
                if isinstance(name, bytes):
                    name = name.decode("utf-8", "replace")
                try:
                    memory = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
                except Exception:  # noqa: BLE001 - optional field
                    memory = None
                found.append(GpuInfo(index, str(name), memory))
            except Exception:  # noqa: BLE001 - one broken GPU must not hide the others
                continue
    except Exception as exc:  # noqa: BLE001
        return [], f"NVML error ({exc})"
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
    return _visible(found), "" if found else "NVML found no GPU"


def _visible(gpus: list[GpuInfo]) -> list[GpuInfo]:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return gpus
    if not visible.strip():  # set but empty: CUDA shows no GPU at all
        return []
    indices = []
    for part in visible.split(","):
        part = part.strip()
        if not part.isdigit():
            return gpus  # UUIDs or MIG ids: cannot map cheaply, show all
        indices.append(int(part))
    by_index = {g.index: g for g in gpus}
    return [GpuInfo(n, by_index[i].name, by_index[i].memory_bytes, i) for n, i in enumerate(indices) if i in by_index]


def device_choices(gpus: list[GpuInfo] | None = None) -> list[DeviceChoice]:
    """``auto``, ``cpu``, then one ``cuda:N`` per GPU with its name and memory."""
    if gpus is None:
        gpus, _ = nvml_gpus()
    choices = [DeviceChoice("auto", "auto"), DeviceChoice("cpu", "cpu")]
    for gpu in gpus:
        memory = f", {gpu.memory_bytes / 2**30:.0f} GB" if gpu.memory_bytes else ""
        choices.append(DeviceChoice(f"cuda:{gpu.index}", f"cuda:{gpu.index} \u2014 {gpu.name}{memory}", gpu.name))
    return choices

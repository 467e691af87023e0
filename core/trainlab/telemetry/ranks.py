"""Telemetry of a run over several processes: what each rank says of itself, merged by rank 0.

Rank 0's sampler sees every GPU of its own machine through NVML, but torch's
memory only of its own process, and nothing of other machines.  So every
rank keeps a ``RankTelemetry``: at the group's telemetry gather (piggy-backed
on the ranks' stop/pause agreement, at the telemetry interval: never a
collective per step) each rank's ``record()`` goes to rank 0, and
``with_ranks`` writes the records into rank 0's ``SystemSample``: one entry
per rank in ``ranks`` (``RANK_FIELDS``), and in ``gpus`` each GPU names its
``host`` and the ``rank`` using it, with that rank's torch memory; a GPU of
another machine is added from that rank's own NVML reading of it.

A rank reads NVML only when it is on another machine than rank 0 (rank 0's
sampler already reads the GPUs of its own), and then its own GPU alone.
"""

from __future__ import annotations

import socket
import time
from dataclasses import replace
from typing import Any, Mapping, Sequence

from trainlab.api.events import SystemSample
from trainlab.telemetry.nvml import bare_uuid
from trainlab.telemetry.sampler import MAX_INTERVAL, TelemetrySampler

# Keys of every entry of SystemSample.ranks, always present (None when unknown).
RANK_FIELDS = (
    "rank",
    "host",
    "local_rank",
    "device",  # "cpu" or "cuda:N" (the rank's own torch numbering)
    "uuid",  # the rank's GPU, as torch names it; None on the CPU
    "torch_allocated_bytes",
    "torch_reserved_bytes",
    "time",  # when the rank read these (the gather's moment)
)


class RankTelemetry:
    """One rank's own figures for the group's telemetry gather.

    ``read_nvml``: also read this rank's GPU through NVML (ranks on another
    machine than rank 0); ``nvml`` replaces the ``pynvml`` module (tests).
    """

    def __init__(self, rank: int, local_rank: int, device: str, *, read_nvml: bool = False, nvml: Any = None):
        self.rank = rank
        self.local_rank = local_rank
        self.device = device
        self.host = socket.gethostname()
        self._read_nvml = read_nvml and device.startswith("cuda")
        self._nvml = nvml
        self._sampler: Any = None
        self._uuid: str | None = None

    def _cuda_index(self) -> int:
        return int(self.device.split(":", 1)[1]) if ":" in self.device else 0

    def uuid(self) -> str | None:
        if self._uuid is None and self.device.startswith("cuda"):
            import torch

            found = getattr(torch.cuda.get_device_properties(self._cuda_index()), "uuid", None)
            self._uuid = str(found) if found is not None else ""
        return self._uuid or None

    def record(self) -> dict[str, Any]:
        entry: dict[str, Any] = dict.fromkeys(RANK_FIELDS)
        entry.update(rank=self.rank, host=self.host, local_rank=self.local_rank, device=self.device, time=time.time())
        if self.device.startswith("cuda"):
            import torch

            index = self._cuda_index()
            entry["uuid"] = self.uuid()
            entry["torch_allocated_bytes"] = int(torch.cuda.memory_allocated(index))
            entry["torch_reserved_bytes"] = int(torch.cuda.memory_reserved(index))
        gpu = self.read_gpu(entry["uuid"]) if self._read_nvml else None
        if gpu is not None:
            entry["gpu"] = gpu
        return entry

    def read_gpu(self, uuid: str | None) -> dict[str, Any] | None:
        """The GPU ``uuid`` as NVML sees it (this machine's), no processes; None without one."""
        if not uuid:
            return None
        if self._sampler is None:
            self._sampler = TelemetrySampler(MAX_INTERVAL, nvml=self._nvml, processes=False, only_uuids=[uuid])
        try:
            sample = self._sampler.sample()
        except Exception:  # noqa: BLE001 - telemetry must never stop a run
            return None
        return dict(sample.gpus[0]) if sample.gpus else None

    def close(self) -> None:
        if self._sampler is not None:
            self._sampler.close()
            self._sampler = None


def with_ranks(sample: SystemSample, records: Sequence[Mapping[str, Any]], host: str) -> SystemSample:
    """Rank 0's ``sample`` (taken on ``host``) with the ranks' ``records`` merged in."""
    if not records:
        return sample
    gpus = [{**gpu, "host": host, "rank": None} for gpu in sample.gpus]
    by_uuid = {bare_uuid(str(gpu["uuid"])): gpu for gpu in gpus if gpu.get("uuid")}
    ranks = []
    for record in records:
        uuid = bare_uuid(str(record.get("uuid") or ""))
        gpu = by_uuid.get(uuid) if uuid else None
        if gpu is None and record.get("gpu"):  # a GPU of another machine, as its rank read it
            gpu = {**record["gpu"], "host": record.get("host"), "rank": None}
            gpus.append(gpu)
            by_uuid[uuid] = gpu
        if gpu is not None:
            # the rank's own figures: rank 0's process sees only its own torch memory
            gpu.update(rank=record.get("rank"), torch_device=record.get("device"),
                       torch_allocated_bytes=record.get("torch_allocated_bytes"),
                       torch_reserved_bytes=record.get("torch_reserved_bytes"))  # fmt: skip
        ranks.append({key: record.get(key) for key in RANK_FIELDS})
    return replace(sample, gpus=tuple(gpus), ranks=tuple(ranks))

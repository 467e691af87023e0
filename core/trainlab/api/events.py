"""Run events: frozen dataclasses of plain values, one JSON line each.

The same objects flow to ``metrics.jsonl``, to the window's worker thread and,
as JSON lines, from a child process to its parent.  Never a tensor or a
QObject: every field is a number, a string, a bool, None, or a list/dict of
those.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any, ClassVar, Mapping


def _finite(value: Any) -> Any:
    # JSON has no NaN/inf; keep them readable by strict parsers as strings.
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str] = "event"
    time: float = field(default_factory=time.time)
    step: int = 0
    epoch: int = 0

    def to_dict(self) -> dict[str, Any]:
        data = {"event": self.kind}
        for key, value in asdict(self).items():
            data[key] = _finite(value)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Started(Event):
    kind: ClassVar[str] = "started"
    run_dir: str = ""
    task: str = ""
    total_steps: int = 0
    epochs: int = 0
    device: str = ""
    precision: str = ""
    resumed: bool = False


@dataclass(frozen=True)
class TrainStep(Event):
    """Mean training loss over ``steps`` optimizer steps ending at ``step``."""

    kind: ClassVar[str] = "train"
    loss: float = 0.0
    lr: float = 0.0
    steps: int = 1
    samples_per_second: float = 0.0
    # what the task's ``batch_units`` counts per second ("tokens"); 0 and "" when it counts none
    units_per_second: float = 0.0
    unit: str = ""


@dataclass(frozen=True)
class EvalResult(Event):
    """One evaluation of a split: its loss and the task's declared metrics.

    In a JSON line the metrics are top-level keys beside ``loss``, as plugin
    API 1 wrote ``accuracy`` and ``macro_f1``, so files of every version
    read alike; a key no field names is read back into ``metrics``.
    ``monitor`` names the metric that ``best`` is about.  ``accuracy`` and
    ``macro_f1`` are the API 1 spellings of two classification metrics: given
    either way, each is also in ``metrics``.  ``loss`` is None (null in JSON)
    when the task's evaluation measures no loss (``EvalBatch.loss_sum`` None).
    """

    kind: ClassVar[str] = "eval"
    split: str = "val"
    loss: float | None = 0.0
    metrics: Mapping[str, Any] = field(default_factory=dict)
    best: bool = False
    monitor: str = ""
    accuracy: float | None = None
    macro_f1: float | None = None

    def __post_init__(self) -> None:
        metrics = dict(self.metrics)
        for name in ("accuracy", "macro_f1"):
            value = getattr(self, name)
            if value is not None:
                metrics.setdefault(name, value)
            elif name in metrics:
                object.__setattr__(self, name, metrics[name])
        object.__setattr__(self, "metrics", metrics)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"event": self.kind}
        for name in ("time", "step", "epoch", "split", "loss", "best", "monitor"):
            data[name] = _finite(getattr(self, name))
        if not self.monitor:
            del data["monitor"]
        for name, value in self.metrics.items():
            if name not in data:
                data[name] = _finite(value)
        return data

    def value(self, name: str) -> Any:
        """``loss`` or a metric's value (None when this evaluation lacks it)."""
        return self.loss if name == "loss" else self.metrics.get(name)


GPUS_READ = "ok"  # a SystemSample's gpu_status when the sampler reads the GPUs


class Phase(StrEnum):
    """What a run is doing, as a ``Progress`` event says (its ``phase``)."""

    TRAIN = "train"
    EVAL = "eval"
    SAVE = "save"
    PAUSED = "paused"


@dataclass(frozen=True)
class Progress(Event):
    kind: ClassVar[str] = "progress"
    total_steps: int = 0
    epochs: int = 0
    samples: int = 0
    samples_per_second: float = 0.0
    eta_seconds: float | None = None
    phase: str = Phase.TRAIN  # a Phase
    units_per_second: float = 0.0  # as TrainStep's
    unit: str = ""


@dataclass(frozen=True)
class SystemSample(Event):
    """A telemetry sample: CPU/RAM/disk and one entry per GPU.

    In a run over several processes ``ranks`` holds one entry per rank (its
    host, device and torch memory, as the ranks last told rank 0) and each GPU
    entry also names its ``host`` and the ``rank`` using it; see
    docs/telemetry.md.  Absent (empty) in one-process runs and older files.
    """

    kind: ClassVar[str] = "system"
    cpu_percent: float | None = None
    ram_used_bytes: int | None = None
    ram_total_bytes: int | None = None
    disk_free_bytes: int | None = None
    torch_allocated_bytes: int | None = None
    torch_reserved_bytes: int | None = None
    gpus: tuple[Mapping[str, Any], ...] = ()
    gpu_status: str = ""  # GPUS_READ, or why the GPUs cannot be read ("" in older files)
    ranks: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class Log(Event):
    kind: ClassVar[str] = "log"
    level: str = "info"
    message: str = ""


@dataclass(frozen=True)
class Finished(Event):
    """The run's end; with ``step`` it holds every field of ``RunOutcome``,
    so a parent process rebuilds the outcome its child returned."""

    kind: ClassVar[str] = "finished"
    status: str = "completed"  # completed, failed, cancelled
    error: str = ""
    traceback: str = ""
    metrics: Mapping[str, Any] = field(default_factory=dict)
    epochs: int = 0
    samples_per_second: float = 0.0
    # absent from metrics.jsonl written before these existed: the defaults apply
    run_dir: str = ""
    task: str = ""
    best: Mapping[str, Any] = field(default_factory=dict)  # {"metric", "value", "step"} or empty
    usage_error: bool = False  # bad input found once the run had begun (exit 2)
    failure: Mapping[str, Any] = field(default_factory=dict)  # a plugin's code failed: {plugin, task, method, exception}


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls for cls in (Started, TrainStep, EvalResult, Progress, SystemSample, Log, Finished)
}


def _revive(value: Any) -> Any:
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return value


def event_from_dict(data: Mapping[str, Any]) -> Event:
    cls = EVENT_TYPES.get(str(data.get("event")))
    if cls is None:
        raise ValueError(f"unknown event {data.get('event')!r}")
    names = {f.name for f in fields(cls)}
    kwargs = {k: _revive(v) for k, v in data.items() if k in names}
    if cls is EvalResult:
        extra = {k: _revive(v) for k, v in data.items() if k not in names and k != "event"}
        kwargs["metrics"] = {**extra, **dict(kwargs.get("metrics") or {})}
    if cls is SystemSample:
        for key in ("gpus", "ranks"):
            if key in kwargs:
                kwargs[key] = tuple(kwargs[key] or ())
    return cls(**kwargs)


def event_from_json(line: str) -> Event:
    return event_from_dict(json.loads(line))


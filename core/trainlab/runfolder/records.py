"""Typed records of a run folder: ``run.json`` and the evaluation reports.

``RunRecord`` is ``run.json``; ``EvalRecord`` is ``eval.json`` (and each
``eval-<time>.json`` that ``trainlab eval`` writes beside it), one
``SplitReport`` per evaluated split (``trainlab.runfolder.eval_report``, importable
from here too).  Both are read with ``from_json(data, path)`` and written
back with ``to_json()``:

- files of earlier versions read: a missing key takes its default, and the
  shapes older reports used (``{split: report}``, ``per_class`` as a mapping,
  ``correct`` for ``correct_examples``) are accepted;
- keys this version does not know are kept in ``extra`` and written back, so
  a round trip loses nothing a newer TrainLab wrote;
- content that cannot be used (not JSON, not an object, a value of the wrong
  type) raises ``RunFileError`` naming the file and the key.

The records are frozen; change one with ``dataclasses.replace``.  The
mappings inside them are copies of what was read, not views of it.
"""

from __future__ import annotations

import copy
import json
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from trainlab.api.errors import UsageError
from trainlab.runfolder.status import FINISHED, RunStatus, run_status, shown_status

RUN_SCHEMA_VERSION = 1


class RunFileError(UsageError):
    """A file of a run folder that cannot be used; the message names it."""

    def __init__(self, path: str | Path | None, reason: str, message: str | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.reason = reason
        super().__init__(message or (f"{self.path}: {reason}" if self.path is not None else reason))


def _whole_number(text: str) -> int:
    """A JSON integer, refused past the largest float: every reader of the records turns numbers into floats."""
    value = int(text)
    if abs(value) > _LARGEST_FLOAT:
        raise ValueError(f"a whole number of {len(text.lstrip('-'))} digits, too large for a float")
    return value


_LARGEST_FLOAT = int(sys.float_info.max)


def read_json_object(path: str | Path) -> dict[str, Any]:
    """A JSON object from ``path``; ``FileNotFoundError`` when it is not there,
    ``RunFileError`` when it is there but is not a readable JSON object."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise RunFileError(path, f"cannot be read ({exc})") from None
    try:
        data = json.loads(text, parse_int=_whole_number)
    except ValueError as exc:
        raise RunFileError(path, f"is not valid JSON ({exc})") from None
    except RecursionError:  # arrays or objects nested thousands deep
        raise RunFileError(path, "is not valid JSON (nested too deeply to read)") from None
    if not isinstance(data, dict):
        raise RunFileError(path, f"is not a JSON object (it holds a {_kind(data)})")
    return data


def run_title(name: Any, run_id: Any, folder: str | Path | None) -> str:
    """What a run is called: its name, else its id, else its folder's name."""
    for candidate in (name, run_id):
        if isinstance(candidate, str) and candidate.strip():
            return candidate
    return Path(folder).name if folder else ""


# -- typed fields -----------------------------------------------------------------


def _kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, (int, float)) else type(value).__name__
    )


class _Fields:
    """Takes typed values out of one JSON object, naming the file and key at fault."""

    def __init__(self, data: Mapping[str, Any], path: Path | None, where: str = "") -> None:
        self.data, self.path, self.where = data, path, where
        self.used: set[str] = set()

    def _bad(self, key: str, expected: str, value: Any) -> RunFileError:
        return RunFileError(self.path, f"{self.where}{key!r} should be {expected}, not a {_kind(value)}")

    def get(self, key: str) -> Any:
        self.used.add(key)
        return self.data.get(key)

    def str(self, key: str, default: str = "") -> str:
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self._bad(key, "a string", value)
        return value

    def int(self, key: str, default: int | None = None) -> int | None:
        value = self.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
            raise self._bad(key, "a whole number", value)
        return int(value)

    def float(self, key: str, default: float | None = None) -> float | None:
        value = self.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._bad(key, "a number", value)
        return float(value)

    def mapping(self, key: str) -> dict[str, Any]:
        value = self.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self._bad(key, "an object", value)
        return copy.deepcopy(dict(value))

    def list(self, key: str) -> list[Any]:
        value = self.get(key)
        if value is None:
            return []
        if not isinstance(value, (list, tuple)):
            raise self._bad(key, "a list", value)
        return list(value)

    def labels(self, key: str) -> tuple[str, ...]:
        items = self.list(key)
        for item in items:
            if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                raise self._bad(key, "a list of labels", item)
        return tuple(str(item) for item in items)

    def rest(self) -> dict[str, Any]:
        return {k: copy.deepcopy(v) for k, v in self.data.items() if k not in self.used}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- run.json -------------------------------------------------------------------------


@dataclass(frozen=True)
class RunRecord:
    """``run.json``: what a run is, how it was set up and how it went."""

    id: str = ""
    name: str = ""
    task: str = ""
    status: RunStatus | str = ""  # a RunStatus; "" none stored, a newer version's word kept as it was
    error: str = ""
    traceback: str = ""
    schema_version: int = RUN_SCHEMA_VERSION
    plugin: Mapping[str, Any] = field(default_factory=dict)
    parameters: Mapping[str, Any] = field(default_factory=dict)
    data: Mapping[str, Any] = field(default_factory=dict)  # path, fingerprint
    label_names: tuple[str, ...] = ()
    data_summary: Mapping[str, Any] = field(default_factory=dict)
    timings: Mapping[str, Any] = field(default_factory=dict)  # started, finished, duration, ...
    environment: Mapping[str, Any] = field(default_factory=dict)
    world_size: int = 1
    pid: int | None = None
    progress: Mapping[str, Any] = field(default_factory=dict)  # epochs_completed, steps
    best: Mapping[str, Any] = field(default_factory=dict)  # metric, value, step
    metrics: Mapping[str, Any] = field(default_factory=dict)
    segments: tuple[Mapping[str, Any], ...] = ()
    samples_per_second: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys this version does not know
    path: Path | None = field(default=None, compare=False)  # the file it was read from

    @classmethod
    def from_json(cls, data: Any, path: str | Path | None = None) -> "RunRecord":
        path = Path(path) if path is not None else None
        if not isinstance(data, Mapping):
            raise RunFileError(path, f"is not a JSON object (it holds a {_kind(data)})")
        f = _Fields(data, path)
        segments = f.list("segments")
        for segment in segments:
            if not isinstance(segment, Mapping):
                raise f._bad("segments", "a list of objects", segment)
        return cls(
            id=f.str("id"),
            name=f.str("name"),
            task=f.str("task"),
            status=run_status(f.str("status")),
            error=f.str("error"),
            traceback=f.str("traceback"),
            schema_version=f.int("schema_version", RUN_SCHEMA_VERSION),
            plugin=f.mapping("plugin"),
            parameters=f.mapping("parameters"),
            data=f.mapping("data"),
            label_names=f.labels("label_names"),
            data_summary=f.mapping("data_summary"),
            timings=f.mapping("timings"),
            environment=f.mapping("environment"),
            world_size=f.int("world_size", 1),
            pid=f.int("pid"),
            progress=f.mapping("progress"),
            best=f.mapping("best"),
            metrics=f.mapping("metrics"),
            segments=tuple(copy.deepcopy(dict(s)) for s in segments),
            samples_per_second=f.float("samples_per_second"),
            extra=f.rest(),
            path=path,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for spec in fields(self):
            if spec.name in ("extra", "path"):
                continue
            value = getattr(self, spec.name)
            if spec.name == "label_names":
                value = list(value)
            elif spec.name == "segments":
                value = [dict(s) for s in value]
            elif isinstance(value, Mapping):
                value = copy.deepcopy(dict(value))
            out[spec.name] = value
        for key, value in self.extra.items():
            out.setdefault(key, copy.deepcopy(value))
        return out

    # -- what views ask ---------------------------------------------------------
    @property
    def title(self) -> str:
        return run_title(self.name, self.id, self.path.parent if self.path else None)

    @property
    def shown_status(self) -> str:
        """running, completed, failed, cancelled or interrupted (trainlab.runfolder.status)."""
        return shown_status(self.status, self.error)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def _timing(self, key: str) -> float | None:
        value = self.timings.get(key)
        return float(value) if _is_number(value) else None

    @property
    def started(self) -> float | None:
        return self._timing("started")

    @property
    def finished_at(self) -> float | None:
        return self._timing("finished")

    @property
    def duration(self) -> float | None:
        return self._timing("duration")

    @property
    def data_path(self) -> str:
        value = self.data.get("path")
        return str(value) if value else ""

    @property
    def best_metric(self) -> str:
        return str(self.best.get("metric") or "")

    @property
    def best_value(self) -> float | None:
        value = self.best.get("value")
        return float(value) if _is_number(value) else None


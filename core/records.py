"""Typed records of a run folder: ``run.json`` and the evaluation reports.

``RunRecord`` is ``run.json``; ``EvalRecord`` is ``eval.json`` (and each
``eval-<time>.json`` that ``trainlab eval`` writes beside it), one
``SplitReport`` per evaluated split.  Both are read with ``from_json(data,
path)`` and written back with ``to_json()``:

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
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping, Sequence

from trainlab.api import UsageError
from trainlab.status import FINISHED, shown_status

RUN_SCHEMA_VERSION = 1


class RunFileError(UsageError):
    """A file of a run folder that cannot be used; the message names it."""

    def __init__(self, path: str | Path | None, reason: str, message: str | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.reason = reason
        super().__init__(message or (f"{self.path}: {reason}" if self.path is not None else reason))


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
        data = json.loads(text)
    except ValueError as exc:
        raise RunFileError(path, f"is not valid JSON ({exc})") from None
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
    status: str = ""  # running, completed, failed, cancelled (trainlab.status)
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
            status=f.str("status"),
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
        """running, completed, failed, cancelled or interrupted (trainlab.status)."""
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


# -- eval.json ---------------------------------------------------------------------------

# Keys that say "this object is one split's report" (classification, and the
# families the next plugin API adds).
_SPLIT_MARKERS = frozenset(
    {
        "confusion_matrix", "label_names", "per_class", "samples", "loss", "accuracy", "macro_f1",
        "micro_f1", "mae", "rmse", "r2", "misclassified", "correct_examples", "per_label", "worst",
    }
)
_RECORD_KEYS = ("weights", "step", "data")  # of the evaluation as a whole, beside its splits
_NOT_METRICS = frozenset({"step", "epoch"})


@dataclass(frozen=True)
class EvalExample:
    """One evaluated example as a report lists it (a mistake or a correct one)."""

    key: Any
    example: str  # an image path or a text
    true: str
    predicted: str
    confidence: float
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.true == self.predicted

    @classmethod
    def from_json(cls, data: Any, path: Path | None, where: str) -> "EvalExample":
        if not isinstance(data, Mapping):
            raise RunFileError(path, f"{where} should be an object, not a {_kind(data)}")
        f = _Fields(data, path, where + ": ")
        confidence = f.get("confidence")
        try:
            confidence = float(confidence if confidence is not None else 0.0)
        except (TypeError, ValueError):
            raise f._bad("confidence", "a number", confidence) from None
        key = f.get("key")
        example = f.get("example")
        return cls(
            key=key,
            example=str(example if example is not None else (key if key is not None else "")),
            true=str(f.get("true") if f.get("true") is not None else ""),
            predicted=str(f.get("predicted") if f.get("predicted") is not None else ""),
            confidence=confidence if math.isfinite(confidence) else 0.0,
            extra=f.rest(),
        )

    def to_json(self) -> dict[str, Any]:
        out = {"key": self.key, "example": self.example, "true": self.true, "predicted": self.predicted,
               "confidence": self.confidence}
        for key, value in self.extra.items():
            out.setdefault(key, copy.deepcopy(value))
        return out


@dataclass(frozen=True)
class SplitReport:
    """One split's evaluation: its metrics and, for classification, the details."""

    split: str
    metrics: Mapping[str, float] = field(default_factory=dict)  # accuracy, macro_f1, ... (not loss, samples)
    samples: int | None = None
    loss: float | None = None
    label_names: tuple[str, ...] = ()
    per_class: tuple[Mapping[str, Any], ...] = ()  # label, precision, recall, f1, support
    confusion_matrix: tuple[tuple[int, ...], ...] = ()  # rows: true label, columns: predicted
    misclassified: tuple[EvalExample, ...] = ()
    correct_examples: tuple[EvalExample, ...] = ()
    has_correct_list: bool = False  # False: the report does not list correct examples at all
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any, path: Path | None = None, split: str = "val", where: str = "") -> "SplitReport":
        if not isinstance(data, Mapping):
            raise RunFileError(path, f"{split!r} should be an object, not a {_kind(data)}")
        f = _Fields(data, path, where)
        name = f.str("split") or split
        labels = f.labels("label_names")
        matrix = _matrix(f, labels)
        per_class_raw = f.get("per_class")
        if isinstance(per_class_raw, Mapping):  # {label: {...}}, as early reports wrote it
            per_class_raw = [{"label": k, **dict(v)} if isinstance(v, Mapping) else v for k, v in per_class_raw.items()]
        elif per_class_raw is not None and not isinstance(per_class_raw, list):
            raise f._bad("per_class", "a list of objects", per_class_raw)
        per_class = []
        for row in per_class_raw or []:
            if not isinstance(row, Mapping):
                raise f._bad("per_class", "a list of objects", row)
            per_class.append(copy.deepcopy(dict(row)))
        correct_key = next((k for k in ("correct_examples", "correct") if k in data), None)
        samples = f.int("samples")
        loss = f.float("loss")
        misclassified = _examples(f, "misclassified", where)
        correct = _examples(f, correct_key, where) if correct_key else ()
        metrics: dict[str, float] = {}
        for key, value in data.items():
            if key not in f.used and key not in _NOT_METRICS and _is_number(value):
                metrics[key] = float(value)
                f.used.add(key)
        return cls(
            split=name,
            metrics=metrics,
            samples=samples,
            loss=loss,
            label_names=labels,
            per_class=tuple(per_class),
            confusion_matrix=matrix,
            misclassified=misclassified,
            correct_examples=correct,
            has_correct_list=correct_key is not None,
            extra=f.rest(),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"split": self.split, **self.metrics}
        if self.samples is not None:
            out["samples"] = self.samples
        if self.loss is not None:
            out["loss"] = self.loss
        if self.label_names:
            out["label_names"] = list(self.label_names)
        if self.per_class:
            out["per_class"] = [copy.deepcopy(dict(row)) for row in self.per_class]
        if self.confusion_matrix:
            out["confusion_matrix"] = [list(row) for row in self.confusion_matrix]
        if self.misclassified:
            out["misclassified"] = [e.to_json() for e in self.misclassified]
        if self.has_correct_list:
            out["correct_examples"] = [e.to_json() for e in self.correct_examples]
        for key, value in self.extra.items():
            out.setdefault(key, copy.deepcopy(value))
        return out

    # -- what views ask ---------------------------------------------------------
    def value(self, name: str) -> float | None:
        """A metric by name, ``loss`` and ``samples`` included."""
        if name == "loss":
            return self.loss
        if name == "samples":
            return float(self.samples) if self.samples is not None else None
        return self.metrics.get(name)

    @property
    def example_count(self) -> int:
        return self.samples if self.samples is not None else sum(map(sum, self.confusion_matrix))

    @property
    def misclassified_count(self) -> int:
        if self.confusion_matrix:
            return sum(v for i, row in enumerate(self.confusion_matrix) for j, v in enumerate(row) if i != j)
        return len(self.misclassified)

    def examples_for(self, true_label: str, predicted_label: str) -> list[EvalExample]:
        """The listed examples of one confusion-matrix cell, most confident first."""
        source = self.correct_examples if true_label == predicted_label else self.misclassified
        found = [e for e in source if e.true == true_label and e.predicted == predicted_label]
        return sorted(found, key=lambda e: -e.confidence)

    def cell_count(self, true_label: str, predicted_label: str) -> int:
        try:
            return self.confusion_matrix[self.label_names.index(true_label)][self.label_names.index(predicted_label)]
        except (ValueError, IndexError):
            return 0


def _matrix(f: _Fields, labels: Sequence[str]) -> tuple[tuple[int, ...], ...]:
    rows = f.list("confusion_matrix")
    out = []
    for row in rows:
        if not isinstance(row, (list, tuple)) or not all(_is_number(v) and float(v).is_integer() for v in row):
            raise f._bad("confusion_matrix", "a list of rows of counts", row)
        out.append(tuple(int(v) for v in row))
    if out:
        size = len(out)
        if any(len(row) != size for row in out):
            raise RunFileError(f.path, f"{f.where}'confusion_matrix' is not square")
        if size != len(labels):
            raise RunFileError(f.path, f"{f.where}'confusion_matrix' has {size} rows for {len(labels)} label_names")
    return tuple(out)


def _examples(f: _Fields, key: str, where: str) -> tuple[EvalExample, ...]:
    items = f.list(key)
    return tuple(EvalExample.from_json(item, f.path, f"{where}{key}[{i}]") for i, item in enumerate(items))


def _looks_like_split(value: Any) -> bool:
    return isinstance(value, Mapping) and any(key in value for key in _SPLIT_MARKERS)


@dataclass(frozen=True)
class EvalRecord:
    """An evaluation report: ``eval.json`` or one ``eval-<time>.json``.

    ``splits`` keeps the file's order; the first is the run's own validation
    split in ``eval.json``.  ``layout`` is the shape it was read in and is
    written back in: ``"flat"`` (the first split's keys at the top, other
    splits nested by name: what the engine writes), ``"nested"`` (``{split:
    report}``) or ``"splits"`` (``{"splits": {split: report}}``).
    """

    splits: Mapping[str, SplitReport] = field(default_factory=dict)
    weights: str = ""  # best, last or model: the weights evaluated
    step: int | None = None
    data: str = ""  # the data evaluated, when not the run's own (eval-<time>.json)
    layout: str = "flat"
    extra: Mapping[str, Any] = field(default_factory=dict)
    path: Path | None = field(default=None, compare=False)

    @classmethod
    def from_json(cls, data: Any, path: str | Path | None = None) -> "EvalRecord":
        path = Path(path) if path is not None else None
        if not isinstance(data, Mapping):
            raise RunFileError(path, f"is not a JSON object (it holds a {_kind(data)})")
        f = _Fields(data, path)
        weights, step, evaluated = f.str("weights"), f.int("step"), f.str("data")
        splits: dict[str, SplitReport] = {}
        extra: dict[str, Any] = {}
        if isinstance(data.get("splits"), Mapping):
            layout, body = "splits", data["splits"]
            extra = {k: copy.deepcopy(v) for k, v in data.items() if k not in (*_RECORD_KEYS, "splits")}
        elif any(key in data for key in _SPLIT_MARKERS):
            layout, body = "flat", {}
            nested = {k: v for k, v in data.items() if k not in _RECORD_KEYS and _looks_like_split(v)}
            own = {k: v for k, v in data.items() if k not in _RECORD_KEYS and k not in nested}
            first = SplitReport.from_json(own, path, "val")
            splits[first.split] = first
            body = nested
        else:
            layout, body = "nested", {k: v for k, v in data.items() if k not in _RECORD_KEYS}
        for key, value in body.items():
            if _looks_like_split(value):
                report = SplitReport.from_json(value, path, str(key), where=f"{key}: ")
                splits[str(key)] = report
            elif layout == "nested":
                extra[key] = copy.deepcopy(value)
            else:
                raise RunFileError(path, f"'splits': {key!r} is not a split's report")
        return cls(splits=splits, weights=weights, step=step, data=evaluated, layout=layout, extra=extra, path=path)

    def to_json(self) -> dict[str, Any]:
        own = {k: v for k, v in (("weights", self.weights), ("step", self.step), ("data", self.data)) if v not in ("", None)}
        reports = list(self.splits.items())
        if self.layout == "flat" and reports:
            (first_name, first), rest = reports[0], reports[1:]
            out = {**first.to_json(), "split": first_name}
            for name, report in rest:
                out[name] = report.to_json()
        elif self.layout == "splits":
            out = {"splits": {name: report.to_json() for name, report in reports}}
        else:
            out = {name: report.to_json() for name, report in reports}
        out.update(own)
        for key, value in self.extra.items():
            out.setdefault(key, copy.deepcopy(value))
        return out

    @property
    def primary(self) -> SplitReport | None:
        """The first split (the run's own validation split in eval.json)."""
        return next(iter(self.splits.values()), None)

"""Evaluation reports: ``eval.json`` and each ``eval-<time>.json``, one ``SplitReport`` per split.

Every family's report holds the task's metrics (at the top level, where
plugin API 1 readers look, and under ``metrics``: the declared ones, in the
task's order), ``loss`` and ``samples``, and says its ``family``.  A report
without ``family`` was written before plugin API 2 and is classification.
The families' details:

- classification: ``label_names``, ``per_class`` rows, ``confusion_matrix``,
  ``misclassified`` and ``correct_examples`` (``EvalExample``);
- regression: ``target`` (mean, std, min, max), ``scatter`` pairs of (true,
  predicted), ``residual_histogram`` (``Histogram``), ``worst_examples``
  (``RegressionExample``);
- multi-label: ``label_names``, ``per_label`` rows, ``thresholds``,
  ``misclassified`` and ``correct_examples`` (``LabelSetExample``).

Plugin API 2.1 adds ``details``: a list of typed details
(``trainlab.api.details``: tables, example rows, series, figures), each
saying its kind, title and columns.  ``SplitReport.view_details`` gives them
with the built-in families' own keys as the same types, and, for a family
that declares its metrics, the other numbers of the report as a table (a
count is a detail, not a metric).

Read as ``trainlab.runfolder.records`` reads ``run.json``: earlier shapes accepted,
unknown keys kept in ``extra`` and written back, unusable content raising
``RunFileError`` that names the file and the key.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from trainlab.api.details import (
    FAMILY_DETAILS,
    Column,
    Detail,
    ExampleRows,
    Line,
    Series,
    Table,
    detail_from_json,
)
from trainlab.runfolder.records import RunFileError, _Fields, _is_number, _kind

CLASSIFICATION = "classification"

# Keys that say "this object is one split's report", in every family.
_SPLIT_MARKERS = frozenset(
    {
        "confusion_matrix", "label_names", "per_class", "samples", "loss", "accuracy", "macro_f1",
        "micro_f1", "mae", "rmse", "r2", "misclassified", "correct_examples", "per_label", "worst",
        "family", "worst_examples", "scatter", "thresholds", "details",
    }
)
# Objects inside one split's report: never a split of their own, whatever
# they hold (``metrics`` names accuracy or mae as a split would).
_REPORT_OBJECTS = frozenset({"metrics", "target", "residual_histogram", "per_class"})
_RECORD_KEYS = ("weights", "step", "data")  # of the evaluation as a whole, beside its splits
_NOT_METRICS = frozenset({"step", "epoch"})
# Families whose reports listed every number as a metric before plugin API 2.1
# (classification's top5_accuracy): they keep doing so.
_NUMBERS_ARE_METRICS = frozenset({"classification", "regression", "multilabel"})


def _finite(value: float) -> float:
    return value if math.isfinite(value) else 0.0


@dataclass(frozen=True)
class EvalExample:
    """One evaluated example of a classification report (a mistake or a correct one)."""

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
        f = _example_fields(data, path, where)
        confidence = f.get("confidence")
        try:
            confidence = float(confidence if confidence is not None else 0.0)
        except (TypeError, ValueError):
            raise f._bad("confidence", "a number", confidence) from None
        key = f.get("key")
        return cls(
            key=key,
            example=_example_text(f, key),
            true=str(f.get("true") if f.get("true") is not None else ""),
            predicted=str(f.get("predicted") if f.get("predicted") is not None else ""),
            confidence=_finite(confidence),
            extra=f.rest(),
        )

    def to_json(self) -> dict[str, Any]:
        out = {"key": self.key, "example": self.example, "true": self.true, "predicted": self.predicted,
               "confidence": self.confidence}
        return _with_extra(out, self.extra)


@dataclass(frozen=True)
class RegressionExample:
    """One example of a regression report's worst list: its true and predicted values."""

    key: Any
    example: str  # an image path or a text
    true: float
    predicted: float
    error: float  # predicted - true
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any, path: Path | None, where: str) -> "RegressionExample":
        f = _example_fields(data, path, where)
        key = f.get("key")
        true, predicted = f.float("true"), f.float("predicted")
        if true is None or predicted is None:
            missing = "true" if true is None else "predicted"
            raise RunFileError(path, f"{where}: {missing!r} is missing")
        error = f.float("error")
        return cls(key=key, example=_example_text(f, key), true=true, predicted=predicted,
                   error=error if error is not None else predicted - true, extra=f.rest())

    def to_json(self) -> dict[str, Any]:
        out = {"key": self.key, "example": self.example, "true": self.true, "predicted": self.predicted,
               "error": self.error}
        return _with_extra(out, self.extra)


@dataclass(frozen=True)
class LabelSetExample:
    """One example of a multi-label report: its true and predicted label sets, top scores."""

    key: Any
    example: str  # an image path or a text
    true: tuple[str, ...]
    predicted: tuple[str, ...]
    scores: tuple[tuple[str, float], ...] = ()  # (label, probability), highest first
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return set(self.true) == set(self.predicted)

    @property
    def missed(self) -> tuple[str, ...]:
        """True labels the model did not predict."""
        return tuple(label for label in self.true if label not in self.predicted)

    @property
    def unexpected(self) -> tuple[str, ...]:
        """Predicted labels that are not true."""
        return tuple(label for label in self.predicted if label not in self.true)

    @classmethod
    def from_json(cls, data: Any, path: Path | None, where: str) -> "LabelSetExample":
        f = _example_fields(data, path, where)
        key = f.get("key")
        scores = []
        for item in f.list("scores"):
            if isinstance(item, Mapping):  # {"label", "probability"}, as predict writes them
                item = (item.get("label"), item.get("probability"))
            if not isinstance(item, (list, tuple)) or len(item) != 2 or not _is_number(item[1]):
                raise f._bad("scores", "a list of [label, probability] pairs", item)
            scores.append((str(item[0]), _finite(float(item[1]))))
        return cls(key=key, example=_example_text(f, key), true=f.labels("true"), predicted=f.labels("predicted"),
                   scores=tuple(scores), extra=f.rest())

    def to_json(self) -> dict[str, Any]:
        out = {"key": self.key, "example": self.example, "true": list(self.true), "predicted": list(self.predicted),
               "scores": [[label, p] for label, p in self.scores]}
        return _with_extra(out, self.extra)


@dataclass(frozen=True)
class Histogram:
    """Counts between consecutive edges (``len(edges) == len(counts) + 1``)."""

    edges: tuple[float, ...]
    counts: tuple[int, ...]

    @classmethod
    def from_json(cls, data: Any, path: Path | None, where: str) -> "Histogram":
        if not isinstance(data, Mapping):
            raise RunFileError(path, f"{where} should be an object, not a {_kind(data)}")
        edges, counts = data.get("edges") or [], data.get("counts") or []
        if not isinstance(edges, list) or not all(_is_number(v) for v in edges):
            raise RunFileError(path, f"{where}: 'edges' should be a list of numbers")
        if not isinstance(counts, list) or not all(_is_number(v) and float(v).is_integer() for v in counts):
            raise RunFileError(path, f"{where}: 'counts' should be a list of counts")
        if counts and len(edges) != len(counts) + 1:
            raise RunFileError(path, f"{where}: {len(edges)} edges for {len(counts)} counts (needs one more edge)")
        return cls(tuple(float(v) for v in edges), tuple(int(v) for v in counts))

    def to_json(self) -> dict[str, Any]:
        return {"edges": list(self.edges), "counts": list(self.counts)}


def _example_fields(data: Any, path: Path | None, where: str) -> _Fields:
    if not isinstance(data, Mapping):
        raise RunFileError(path, f"{where} should be an object, not a {_kind(data)}")
    return _Fields(data, path, where + ": ")


def _example_text(f: _Fields, key: Any) -> str:
    example = f.get("example")
    return str(example if example is not None else (key if key is not None else ""))


def _with_extra(out: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        out.setdefault(key, copy.deepcopy(value))
    return out


AnyExample = EvalExample | LabelSetExample


@dataclass(frozen=True)
class SplitReport:
    """One split's evaluation: its metrics and its family's details."""

    split: str
    metrics: Mapping[str, float] = field(default_factory=dict)  # every number at the top (not loss, samples)
    samples: int | None = None
    loss: float | None = None
    family: str = ""  # as written; "" before plugin API 2 (then classification)
    declared_metrics: Mapping[str, float | None] = field(default_factory=dict)  # "metrics": the task's, in order
    label_names: tuple[str, ...] = ()
    # classification
    per_class: tuple[Mapping[str, Any], ...] = ()  # label, precision, recall, f1, support
    confusion_matrix: tuple[tuple[int, ...], ...] = ()  # rows: true label, columns: predicted
    # classification (EvalExample) and multi-label (LabelSetExample)
    misclassified: tuple[AnyExample, ...] = ()
    correct_examples: tuple[AnyExample, ...] = ()
    has_correct_list: bool = False  # False: the report does not list correct examples at all
    # regression
    target: Mapping[str, Any] = field(default_factory=dict)  # mean, std, min, max
    scatter: tuple[tuple[float, float], ...] = ()  # (true, predicted)
    residual_histogram: Histogram | None = None
    worst_examples: tuple[RegressionExample, ...] = ()
    # multi-label
    per_label: tuple[Mapping[str, Any], ...] = ()  # label, precision, recall, f1, support, predicted, threshold
    thresholds: tuple[float, ...] = ()
    # plugin API 2.1: typed details, as written (view_details adds the family's own)
    details: tuple[Detail, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any, path: Path | None = None, split: str = "val", where: str = "") -> "SplitReport":
        if not isinstance(data, Mapping):
            raise RunFileError(path, f"{split!r} should be an object, not a {_kind(data)}")
        f = _Fields(data, path, where)
        name = f.str("split") or split
        family = f.str("family")
        labels = f.labels("label_names")
        matrix = _matrix(f, labels)
        per_class = _rows(f, "per_class", keyed=True)
        correct_key = next((k for k in ("correct_examples", "correct") if k in data), None)
        samples = f.int("samples")
        loss = f.float("loss")
        example_type = LabelSetExample if family == "multilabel" else EvalExample
        misclassified = _examples(f, "misclassified", where, example_type)
        correct = _examples(f, correct_key, where, example_type) if correct_key else ()
        declared = _declared(f)
        histogram = f.get("residual_histogram")
        details = dict(
            target=f.mapping("target"),
            scatter=_pairs(f, "scatter"),
            residual_histogram=Histogram.from_json(histogram, path, f"{where}'residual_histogram'")
            if histogram is not None else None,
            worst_examples=_examples(f, "worst_examples", where, RegressionExample),
            per_label=_rows(f, "per_label"),
            thresholds=_numbers(f, "thresholds"),
            details=_details(f),
        )
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
            family=family,
            declared_metrics=declared,
            label_names=labels,
            per_class=per_class,
            confusion_matrix=matrix,
            misclassified=misclassified,
            correct_examples=correct,
            has_correct_list=correct_key is not None,
            **details,
            extra=f.rest(),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"split": self.split, **self.metrics}
        if self.family:
            out["family"] = self.family
        if self.declared_metrics:
            out["metrics"] = dict(self.declared_metrics)
        if self.samples is not None:
            out["samples"] = self.samples
        if self.loss is not None:
            out["loss"] = self.loss
        if self.label_names:
            out["label_names"] = list(self.label_names)
        for key in ("per_class", "per_label"):
            rows = getattr(self, key)
            if rows:
                out[key] = [copy.deepcopy(dict(row)) for row in rows]
        if self.confusion_matrix:
            out["confusion_matrix"] = [list(row) for row in self.confusion_matrix]
        if self.misclassified:
            out["misclassified"] = [e.to_json() for e in self.misclassified]
        if self.has_correct_list:
            out["correct_examples"] = [e.to_json() for e in self.correct_examples]
        if self.target:
            out["target"] = copy.deepcopy(dict(self.target))
        if self.scatter:
            out["scatter"] = [list(pair) for pair in self.scatter]
        if self.residual_histogram is not None:
            out["residual_histogram"] = self.residual_histogram.to_json()
        if self.worst_examples:
            out["worst_examples"] = [e.to_json() for e in self.worst_examples]
        if self.thresholds:
            out["thresholds"] = list(self.thresholds)
        if self.details:
            out["details"] = [d.to_json() for d in self.details]
        return _with_extra(out, self.extra)

    # -- what views ask ---------------------------------------------------------
    @property
    def shown_family(self) -> str:
        """The family to show it as: its own, classification for earlier reports."""
        return self.family or CLASSIFICATION

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The task's declared metrics when the report names them, else every metric in it."""
        return tuple(self.declared_metrics) or tuple(self.metrics)

    def value(self, name: str) -> float | None:
        """A metric by name, ``loss`` and ``samples`` included."""
        if name == "loss":
            return self.loss
        if name == "samples":
            return float(self.samples) if self.samples is not None else None
        if name in self.metrics:
            return self.metrics[name]
        return self.declared_metrics.get(name)

    @property
    def other_numbers(self) -> dict[str, float]:
        """Numbers of the report that are not its declared metrics (a count of
        windows): empty when it declares none, and for the families whose
        reports have always listed every number as a metric."""
        if not self.declared_metrics or self.shown_family in _NUMBERS_ARE_METRICS:
            return {}
        return {k: v for k, v in self.metrics.items() if k not in self.declared_metrics}

    def view_details(self, declared: Sequence[Detail] = ()) -> tuple[Detail, ...]:
        """What the results page shows besides the metrics, typed: the details
        as written, the built-in families' own keys as the same types, and the
        report's other numbers as a table; in the order of ``declared`` (the
        task's ``TaskSpec.details``, else its family's), the rest after."""
        found: dict[str, Detail] = {d.name: d for d in _family_details(self)}
        for detail in self.details:
            found[detail.name] = detail
        numbers = self.other_numbers
        if numbers:
            found.setdefault("other_numbers", Table(
                "other_numbers", "Other numbers",
                columns=(Column("name", "Name"), Column("value", "Value", "number")),
                rows=tuple({"name": k, "value": v} for k, v in numbers.items()),
            ))
        order = [d.name for d in (declared or FAMILY_DETAILS.get(self.shown_family, ()))]
        names = [n for n in order if n in found] + [n for n in found if n not in order]
        return tuple(found[n] for n in names)

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
        found = [e for e in source if isinstance(e, EvalExample) and e.true == true_label and e.predicted == predicted_label]
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


def _rows(f: _Fields, key: str, keyed: bool = False) -> tuple[Mapping[str, Any], ...]:
    raw = f.get(key)
    if keyed and isinstance(raw, Mapping):  # {label: {...}}, as early reports wrote per_class
        raw = [{"label": k, **dict(v)} if isinstance(v, Mapping) else v for k, v in raw.items()]
    elif raw is not None and not isinstance(raw, list):
        raise f._bad(key, "a list of objects", raw)
    rows = []
    for row in raw or []:
        if not isinstance(row, Mapping):
            raise f._bad(key, "a list of objects", row)
        rows.append(copy.deepcopy(dict(row)))
    return tuple(rows)


def _declared(f: _Fields) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, value in f.mapping("metrics").items():
        if value is not None and not _is_number(value):
            raise RunFileError(f.path, f"{f.where}'metrics': {name!r} should be a number, not a {_kind(value)}")
        out[str(name)] = float(value) if value is not None else None
    return out


def _pairs(f: _Fields, key: str) -> tuple[tuple[float, float], ...]:
    out = []
    for pair in f.list(key):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(_is_number(v) for v in pair):
            raise f._bad(key, "a list of [true, predicted] pairs", pair)
        out.append((float(pair[0]), float(pair[1])))
    return tuple(out)


def _numbers(f: _Fields, key: str) -> tuple[float, ...]:
    values = f.list(key)
    if not all(_is_number(v) for v in values):
        raise f._bad(key, "a list of numbers", next(v for v in values if not _is_number(v)))
    return tuple(float(v) for v in values)


def _examples(f: _Fields, key: str, where: str, kind: type = EvalExample) -> tuple[Any, ...]:
    items = f.list(key)
    return tuple(kind.from_json(item, f.path, f"{where}{key}[{i}]") for i, item in enumerate(items))


def _details(f: _Fields) -> tuple[Detail, ...]:
    raw = f.data.get("details")
    # a plugin API 2.0 report may hold its own "details" key of another shape: kept as written
    if not isinstance(raw, list) or not all(isinstance(d, Mapping) and "kind" in d for d in raw):
        return ()
    f.used.add("details")
    out = []
    for index, item in enumerate(raw):
        try:
            out.append(detail_from_json(item))
        except ValueError as exc:
            raise RunFileError(f.path, f"{f.where}'details'[{index}]: {exc}") from None
    return tuple(out)


_IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff")


def _example_column(examples: Sequence[Any]) -> Column:
    """The example column: images when every example is an image file's path."""
    images = bool(examples) and all(str(e.example).lower().endswith(_IMAGE_SUFFIXES) for e in examples)
    return Column("example", "Example", "image" if images else "text")


def _declared_detail(family: str, name: str) -> Detail:
    return next(d for d in FAMILY_DETAILS[family] if d.name == name)


def _family_details(report: "SplitReport") -> list[Detail]:
    """The built-in families' report keys as typed details (written as they were before 2.1)."""
    out: list[Detail] = []
    family = report.shown_family
    if family == CLASSIFICATION:
        if report.per_class:
            out.append(_declared_detail(family, "per_class").filled(report.per_class))
        if report.misclassified:
            spec = _declared_detail(family, "misclassified")
            columns = (_example_column(report.misclassified), *spec.columns[1:])
            rows = [{"example": e.example, "true": e.true, "predicted": e.predicted, "confidence": e.confidence}
                    for e in report.misclassified if isinstance(e, EvalExample)]
            out.append(replace(spec, columns=columns, rows=tuple(rows), total=report.samples))
    elif family == "regression":
        if report.worst_examples:
            spec = _declared_detail(family, "worst_examples")
            columns = (_example_column(report.worst_examples), *spec.columns[1:])
            rows = [{"example": e.example, "true": e.true, "predicted": e.predicted, "error": e.error,
                     "abs_error": abs(e.error)} for e in report.worst_examples]
            out.append(replace(spec, columns=columns, rows=tuple(rows), total=report.samples))
        if report.scatter:
            line = Line(y=tuple(p for _, p in report.scatter), x=tuple(t for t, _ in report.scatter),
                        label="examples", style="points")
            out.append(_declared_detail(family, "scatter").filled([line]))
        histogram = report.residual_histogram
        if histogram is not None and histogram.counts:
            centers = tuple((a + b) / 2 for a, b in zip(histogram.edges, histogram.edges[1:]))
            line = Line(y=tuple(float(c) for c in histogram.counts), x=centers, label="examples", style="steps")
            out.append(_declared_detail(family, "residual_histogram").filled([line]))
    elif family == "multilabel":
        if report.per_label:
            out.append(_declared_detail(family, "per_label").filled(report.per_label))
        if report.misclassified:
            spec = _declared_detail(family, "misclassified")
            columns = (_example_column(report.misclassified), *spec.columns[1:])
            rows = [{"example": e.example, "true": "; ".join(e.true), "predicted": "; ".join(e.predicted),
                     "missed": "; ".join(e.missed), "unexpected": "; ".join(e.unexpected),
                     "wrong": len(e.missed) + len(e.unexpected)}
                    for e in report.misclassified if isinstance(e, LabelSetExample)]
            out.append(replace(spec, columns=columns, rows=tuple(rows), total=report.samples))
    return out


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
            layout = "flat"
            nested = {
                k: v for k, v in data.items()
                if k not in _RECORD_KEYS and k not in _REPORT_OBJECTS and _looks_like_split(v)
            }
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

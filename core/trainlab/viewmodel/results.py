"""What the results view shows of one run, read through ``RunDir`` (no Qt).

``load_results(run_dir)`` gathers the run's title and state from its
``RunRecord`` and every evaluation it has: the splits of ``eval.json``, then
each ``eval-<time>.json`` that ``trainlab eval`` wrote beside it (an
evaluation on other data).  A file that cannot be read does not stop the
others: its error, naming the file, lands in ``problems``, and the view shows
it.  The per-split reports are ``trainlab.runfolder.eval_report.SplitReport``.

Which view shows a report is its family: the one the report names, else the
one ``run.json`` recorded, else the family its task declares
(``TaskSpec.family``, when the task is installed), else classification
(every report from before plugin API 2).  The metrics' titles and display
forms come from what the run recorded (``declared_metrics`` in run.json),
else from the installed task, else from the family's defaults.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from trainlab.api.descriptors import FAMILY_METRICS, Metric, TaskSpec
from trainlab.api.errors import UsageError
from trainlab.api.events import EvalResult
from trainlab.runfolder.eval_report import EvalExample, SplitReport
from trainlab.runfolder.records import RunRecord, run_title

__all__ = [
    "EvalExample", "EvalPoint", "ReportSource", "RunResults", "SplitReport", "eval_history", "is_image_example",
    "load_results", "task_spec",
]
from trainlab.pluginhost.host import registry
from trainlab.runfolder.index import RunDir
from trainlab.runfolder.status import RUNNING, UNKNOWN

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff", ".ppm", ".pgm"}
CLASSIFICATION = "classification"


@dataclass(frozen=True)
class ReportSource:
    """Where one shown report comes from."""

    key: str  # the split for eval.json ("val", "test"); else the file's stem (and ":split")
    file: str  # the file's name in the run folder
    split: str
    own: bool  # from eval.json: the run's own evaluation
    data: str = ""  # the data evaluated, for an evaluation on other data

    @property
    def evaluated_at(self) -> datetime | None:
        """When ``trainlab eval`` wrote it, from its name (``eval-YYYYmmdd-HHMMSS``)."""
        stamp = self.file[len("eval-"):len("eval-") + 15]
        try:
            return datetime.strptime(stamp, "%Y%m%d-%H%M%S")
        except ValueError:
            return None


@dataclass
class RunResults:
    run_dir: str
    title: str
    task: str = ""
    status: str = UNKNOWN  # as stored (trainlab.runfolder.status); the view translates it
    error: str = ""
    reports: dict[str, SplitReport] = field(default_factory=dict)
    sources: dict[str, ReportSource] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # one line per unreadable file, naming it
    has_eval_files: bool = False
    spec: TaskSpec | None = None  # the run's task, when it is installed here
    parameters: dict[str, Any] = field(default_factory=dict)  # run.json's
    recorded_family: str = ""  # run.json's "family": what the run was trained as
    recorded_metrics: tuple[Metric, ...] = ()  # run.json's "declared_metrics"

    @property
    def running(self) -> bool:
        return self.status == RUNNING

    def family_of(self, report: SplitReport) -> str:
        """The view for ``report``: its own family, else its task's, else classification."""
        if report.family:
            return report.family
        if self.recorded_family:
            return self.recorded_family
        if self.spec is not None and self.spec.family:
            return self.spec.family
        return CLASSIFICATION

    def _declared(self, family: str) -> tuple[Metric, ...]:
        if self.recorded_metrics:
            return self.recorded_metrics
        if self.spec is not None:
            return self.spec.metric_specs()
        return FAMILY_METRICS.get(family or self.recorded_family, ((), ""))[0]

    def metric_spec(self, name: str, family: str = "") -> Metric | None:
        """How metric ``name`` is declared: as the run recorded it, else by the
        installed task, else by its family's defaults."""
        found = next((m for m in self._declared(family) if m.name == name), None)
        if found is None:
            defaults = FAMILY_METRICS.get(family or self.recorded_family or (self.spec.family if self.spec else ""), ((), ""))[0]
            found = next((m for m in defaults if m.name == name), None)
        return found

    def declared_metrics(self, report: SplitReport) -> list[str]:
        """The metrics to show for ``report``, in its task's order (as recorded,
        else the installed task's, else its family's), then any others it names."""
        order = [m.name for m in self._declared(self.family_of(report))]
        names = [n for n in order if report.value(n) is not None] + list(report.metric_names)
        return list(dict.fromkeys(names))

    @property
    def monitor(self) -> str:
        """The metric the run picked its best weights by."""
        chosen = self.parameters.get("monitor")
        if isinstance(chosen, str) and chosen:
            return chosen
        return self.spec.default_monitor() if self.spec is not None else ""


def task_spec(task_id: str) -> TaskSpec | None:
    """The installed task ``task_id``'s descriptor, None when it is not installed here."""
    if not task_id:
        return None
    try:
        entry = registry().tasks.get(task_id)
    except Exception:  # noqa: BLE001 - a view never fails over the plugins; it shows what the files say
        return None
    return entry.spec if entry is not None else None


def load_results(run_dir: str | os.PathLike[str]) -> RunResults:
    folder = RunDir(run_dir)
    record: RunRecord | None
    try:
        record = folder.read_record()
    except UsageError as exc:
        record = None
        problem = str(exc)
    results = RunResults(
        run_dir=str(run_dir),
        title=record.title if record else run_title(None, None, folder.path),
        task=record.task if record else "",
        status=record.status if record else UNKNOWN,
        error=record.error if record else "",
        spec=task_spec(record.task) if record else None,
        parameters=dict(record.parameters) if record else {},
    )
    if record is not None:
        results.recorded_family, results.recorded_metrics = recorded_declarations(record)
    if record is None:
        results.problems.append(problem)
    files = folder.eval_files()
    results.has_eval_files = bool(files)
    for path in files:
        try:
            evaluation = folder.read_eval(path.name)
        except UsageError as exc:
            results.problems.append(str(exc))
            continue
        if evaluation is None:  # removed meanwhile
            continue
        own = path == folder.eval_json
        for split, report in evaluation.splits.items():
            if own:
                key = split
            else:
                key = path.stem if len(evaluation.splits) == 1 else f"{path.stem}:{split}"
            results.reports[key] = report
            results.sources[key] = ReportSource(key, path.name, split, own, evaluation.data)
    return results


def recorded_declarations(record: RunRecord) -> tuple[str, tuple[Metric, ...]]:
    """The family and metrics run.json recorded (runs from before plugin API 2: none)."""
    family = record.extra.get("family")
    metrics = []
    for item in record.extra.get("declared_metrics") or ():
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            metrics.append(Metric.from_json(item))  # title, direction, display, unit, monitorable
    return (family if isinstance(family, str) else ""), tuple(metrics)


@dataclass(frozen=True)
class EvalPoint:
    """One evaluation during training, as metrics.jsonl recorded it."""

    epoch: int
    step: int
    loss: float | None  # None: the task's evaluation measures no loss
    metrics: dict[str, float]
    best: bool


def eval_history(run_dir: str | os.PathLike[str], split: str = "val") -> list[EvalPoint]:
    """The run's evaluations of ``split`` during training, by step (a step
    evaluated twice, by a run resumed from an earlier checkpoint: the later)."""
    points: dict[int, EvalPoint] = {}
    try:
        events = list(RunDir(run_dir).events())
    except (OSError, UsageError):
        return []
    for event in events:
        if isinstance(event, EvalResult) and event.split == split:
            numbers = {k: float(v) for k, v in event.metrics.items() if _number(v) is not None}
            loss = float(event.loss) if event.loss is not None else None
            point = EvalPoint(int(event.epoch or 0), int(event.step or 0), loss, numbers, bool(event.best))
            points[point.step] = point
    return [points[k] for k in sorted(points)]


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def is_image_example(text: str) -> bool:
    return Path(text).suffix.lower() in IMAGE_SUFFIXES and os.path.isfile(text)

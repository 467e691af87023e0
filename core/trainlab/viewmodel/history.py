"""What the run history shows of each run's metrics: ``trainlab runs`` and the window's Runs page (no Qt).

``run_metrics(row)`` reads one run of the index (``RunStore.list``) with its
``run.json``: the metrics its task declared (as the run recorded them, else
as the installed task declares them, else its family's), the monitor first,
and their values: the monitor's best, the others as the run's last
evaluation left them.  Each value is written by
``trainlab.runfolder.display.format_metric`` with its declaration (display
and unit), as everywhere else, and named: ``mae 2.17 kWh``, never a bare
number.

The history sorts by any metric, best first whatever its direction
(``sort_key``), and filters by conditions on any of them (``parse_condition``:
``mae<3``, ``accuracy>=90%``, ``smape<=5%``).  A run lacking the metric sorts
last and fails every condition on it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from trainlab.api.descriptors import FAMILY_METRICS, Metric
from trainlab.api.errors import UsageError
from trainlab.runfolder.display import MISSING, format_metric
from trainlab.runfolder.index import RunDir
from trainlab.viewmodel.results import recorded_declarations, task_spec

LOSS = Metric("loss", "Loss", False, "loss")
CONDITION_RE = re.compile(r"^\s*([a-z][a-z0-9_]*)\s*(<=|>=|<|>|=)\s*(-?[0-9.eE+-]+)\s*(%?)\s*$")


@dataclass(frozen=True)
class RunMetrics:
    """One run's declared metrics and their values, for the history."""

    family: str = ""
    monitor: str = ""
    declared: tuple[Metric, ...] = ()  # the monitor first, then the others in their declared order
    values: Mapping[str, float] = field(default_factory=dict)

    def metric(self, name: str) -> Metric | None:
        return next((m for m in self.declared if m.name == name), LOSS if name == "loss" else None)

    def value(self, name: str) -> float | None:
        return self.values.get(name)

    def text(self, name: str) -> str:
        """The value of ``name`` as every view writes it (``MISSING`` when the run has none)."""
        return format_metric(name, self.values.get(name), self.metric(name))

    def named(self, name: str) -> str:
        """``name value``: ``mae 2.17 kWh``; empty when the run has no value for it."""
        return f"{name} {self.text(name)}" if name in self.values else ""

    def summary(self, sep: str = "  ") -> str:
        """Every metric with a value, named, the monitor first."""
        return sep.join(filter(None, (self.named(m.name) for m in self.declared))) or MISSING

    def higher_is_better(self, name: str) -> bool:
        metric = self.metric(name)
        return metric.higher_is_better if metric is not None else False


def declarations(record: Any, task: str) -> tuple[str, tuple[Metric, ...], str]:
    """(family, declared metrics, monitor) of a run: as its run.json recorded them,
    else as the installed task declares them, else its family's."""
    family, metrics = recorded_declarations(record) if record is not None else ("", ())
    chosen = record.parameters.get("monitor") if record is not None else None
    monitor = chosen if isinstance(chosen, str) else ""
    spec = task_spec(task) if not metrics or not monitor or not family else None
    if spec is not None:
        family = family or spec.family
        metrics = metrics or spec.metric_specs()
        monitor = monitor or spec.default_monitor()
    if not metrics:
        metrics, default_monitor = FAMILY_METRICS.get(family or "classification", ((), ""))
        monitor = monitor or default_monitor
    return family, tuple(metrics), monitor


_cache: dict[tuple[Any, ...], RunMetrics] = {}


def run_metrics(row: Mapping[str, Any]) -> RunMetrics:
    """The metrics of one index row (``RunStore.list``), read from its run folder.

    Kept while the row's ``updated`` and ``status`` stay the same, so that the
    Runs page, which reads the index every two seconds, reads each run.json
    once per change.
    """
    key = (row.get("run_dir"), row.get("updated"), row.get("status"), row.get("best_metric"))
    found = _cache.get(key)
    if found is None:
        found = _read(row)
        if len(_cache) > 4096:
            _cache.clear()
        _cache[key] = found
    return found


def _read(row: Mapping[str, Any]) -> RunMetrics:
    try:
        record = RunDir(str(row.get("run_dir") or "")).read_record()
    except (UsageError, OSError):  # a damaged or missing run.json: what the index knows
        record = None
    family, declared, monitor = declarations(record, str(row.get("task") or (record.task if record else "")))
    monitor = str(row.get("monitor") or monitor or "")
    recorded = dict(record.metrics) if record is not None else {}
    values: dict[str, float] = {}
    for metric in declared:
        number = _number(recorded.get(metric.name))
        if number is not None:
            values[metric.name] = number
    best = _number(row.get("best_metric"))
    if monitor and best is not None:
        values[monitor] = best  # the monitor's best, which picked the run's weights
    order = sorted(declared, key=lambda m: m.name != monitor)
    if monitor == "loss":
        order.insert(0, LOSS)
    return RunMetrics(family, monitor, tuple(order), values)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


# -- sorting and filtering -------------------------------------------------------


def sort_key(metrics: RunMetrics, name: str) -> tuple[int, float]:
    """Ascending order puts the best value of ``name`` first (whatever its direction), runs without it last."""
    value = metrics.value(name)
    if value is None:
        return (1, 0.0)
    return (0, -value if metrics.higher_is_better(name) else value)


@dataclass(frozen=True)
class Condition:
    """``name op value``: a filter on one metric (``mae<3``, ``accuracy>=90%``)."""

    name: str
    op: str
    value: float

    def holds(self, metrics: RunMetrics) -> bool:
        value = metrics.value(self.name)
        if value is None:
            return False
        return {
            "<": value < self.value, "<=": value <= self.value, ">": value > self.value,
            ">=": value >= self.value, "=": math.isclose(value, self.value, rel_tol=1e-9, abs_tol=1e-12),
        }[self.op]


def parse_condition(text: str) -> Condition | None:
    """``mae<3`` as a Condition; ``90%`` reads as 0.9; None when ``text`` is not a condition."""
    match = CONDITION_RE.match(text)
    if match is None:
        return None
    name, op, number, percent = match.groups()
    try:
        value = float(number)
    except ValueError:
        return None
    return Condition(name, op, value / 100 if percent else value)


def split_filter(text: str) -> tuple[list[str], list[Condition]]:
    """A filter box's text: the plain words, and the metric conditions among them."""
    words: list[str] = []
    conditions: list[Condition] = []
    for term in text.split():
        condition = parse_condition(term)
        if condition is None:
            words.append(term.lower())
        else:
            conditions.append(condition)
    return words, conditions


def metric_columns(runs: Sequence[RunMetrics]) -> list[Metric]:
    """One column per metric any of ``runs`` declares, in the order first seen (the monitors lead)."""
    columns: dict[str, Metric] = {}
    for metrics in runs:
        for metric in metrics.declared:
            columns.setdefault(metric.name, metric)
    return list(columns.values())

"""The data behind a run's curves: growing numpy buffers, no Qt.

A ``RunSession`` (``trainlab.viewmodel.session``) owns one ``RunCurves`` per run and
feeds it the run's events in order, whether they come from the window's
worker, a child process or a ``metrics.jsonl``.  Rows are appended to
preallocated arrays that double when full, so a refresh hands a plot views of
contiguous arrays without copying.  inf becomes NaN at the door (pyqtgraph's ``connect="finite"`` then
leaves a gap instead of wrecking the auto range), and the smoothed loss is an
exponential moving average that skips non-finite points, debiased at the start
as TensorBoard does.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from trainlab.api.events import EvalResult, Event, Finished, Started, SystemSample, TrainStep
from trainlab.runfolder.tail import read_events

# A run logging every step for hours would otherwise grow without bound; past
# this many points every other old point is dropped (the smoothed curve was
# computed at full resolution, so it keeps its shape).
MAX_POINTS = 2_000_000


class Series:
    """Parallel float64 columns that grow by appending rows."""

    def __init__(self, columns: Iterable[str], capacity: int = 1024, max_points: int = MAX_POINTS):
        self.columns = tuple(columns)
        self._data = np.empty((len(self.columns), capacity), dtype=np.float64)
        self.n = 0
        self.version = 0  # bumped on every change; views compare it to skip redraws
        self.max_points = max_points
        self.nonfinite = False

    def __len__(self) -> int:
        return self.n

    def clear(self) -> None:
        self.n = 0
        self.nonfinite = False
        self.version += 1

    def extend(self, rows: np.ndarray) -> None:
        """Append ``rows`` (shape ``[k, columns]``)."""
        rows = np.asarray(rows, dtype=np.float64)
        if rows.ndim != 2 or rows.shape[0] == 0:
            return
        if not np.isfinite(rows).all():
            rows = np.where(np.isfinite(rows), rows, np.nan)
            self.nonfinite = True
        k = rows.shape[0]
        if self.n + k > self._data.shape[1]:
            self._grow(self.n + k)
        self._data[:, self.n : self.n + k] = rows.T
        self.n += k
        if self.n > self.max_points:
            self._thin()
        self.version += 1

    def _grow(self, needed: int) -> None:
        capacity = self._data.shape[1]
        while capacity < needed:
            capacity *= 2
        data = np.empty((len(self.columns), capacity), dtype=np.float64)
        data[:, : self.n] = self._data[:, : self.n]
        self._data = data

    def _thin(self) -> None:
        keep = self._data[:, : self.n : 2].copy()
        self.n = keep.shape[1]
        self._data[:, : self.n] = keep

    def column(self, name: str) -> np.ndarray:
        return self._data[self.columns.index(name), : self.n]

    def last(self, name: str) -> float | None:
        return float(self._data[self.columns.index(name), self.n - 1]) if self.n else None


class Smoother:
    """Debiased exponential moving average that ignores NaN and inf."""

    def __init__(self, weight: float = 0.9):
        self.weight = weight
        self.reset()

    def reset(self) -> None:
        self._value = 0.0
        self._count = 0

    def __call__(self, values: Iterable[float]) -> list[float]:
        out = []
        w = self.weight
        for x in values:
            if math.isfinite(x):
                self._value = w * self._value + (1.0 - w) * x
                self._count += 1
            if self._count == 0:
                out.append(math.nan)
            else:
                out.append(self._value / (1.0 - w**self._count) if w > 0 else self._value)
        return out


class RunCurves:
    """Everything the live plots draw for one run.

    * ``train``: step, time (seconds since the run started), loss, smoothed
      loss, learning rate; one row per ``TrainStep`` event.
    * ``evals``: epoch, step, time, loss, accuracy, macro_f1, best (1.0/0.0);
      one row per validation ``EvalResult``.  ``accuracy`` and ``macro_f1``
      are the API 1 columns; every metric a task declares is in
      ``eval_metrics`` (one dict per row, the event's own ``metrics``) and
      ``eval_values(name)`` gives any of them as a column beside ``evals``.
    """

    def __init__(self, smoothing: float = 0.9):
        self.train = Series(("step", "time", "loss", "smooth", "lr"))
        self.evals = Series(("epoch", "step", "time", "loss", "accuracy", "macro_f1", "best"), capacity=64)
        self.eval_metrics: list[dict[str, Any]] = []  # aligned with the rows of ``evals``
        self.smoother = Smoother(smoothing)
        self.start_time: float | None = None
        self.total_steps = 0
        self.epochs = 0
        self.run_dir = ""

    def clear(self) -> None:
        self.train.clear()
        self.evals.clear()
        self.eval_metrics.clear()
        self.smoother.reset()
        self.start_time = None

    # -- input -------------------------------------------------------------
    def _t(self, when: float) -> float:
        if self.start_time is None:
            self.start_time = when
        return when - self.start_time

    def started(self, event: Started) -> None:
        if self.start_time is None:
            self.start_time = event.time
        self.total_steps = event.total_steps
        self.epochs = event.epochs
        self.run_dir = event.run_dir

    def add_train(self, events: Iterable[TrainStep]) -> None:
        events = list(events)
        if not events:
            return
        losses = [float(e.loss) if e.loss is not None else math.nan for e in events]
        rows = np.empty((len(events), 5), dtype=np.float64)
        rows[:, 0] = [e.step for e in events]
        rows[:, 1] = [self._t(e.time) for e in events]
        rows[:, 2] = losses
        rows[:, 3] = self.smoother(losses)
        rows[:, 4] = [float(e.lr) if e.lr is not None else math.nan for e in events]
        self.train.extend(rows)

    def add_evals(self, events: Iterable[EvalResult]) -> None:
        validation = [e for e in events if e.split in ("val", "validation")]
        rows = [
            (e.epoch, e.step, self._t(e.time), _num(e.loss), _num(e.accuracy), _num(e.macro_f1), 1.0 if e.best else 0.0)
            for e in validation
        ]
        if rows:
            self.evals.extend(np.array(rows, dtype=np.float64))
            self.eval_metrics.extend(dict(e.metrics) for e in validation)

    def metric_names(self) -> list[str]:
        """Every metric the validation passes reported, in the order first seen."""
        names: dict[str, None] = {}
        for metrics in self.eval_metrics:
            names.update(dict.fromkeys(metrics))
        return list(names)

    def eval_values(self, name: str) -> np.ndarray:
        """``loss`` or one metric per row of ``evals`` (NaN where a pass lacks it)."""
        if name == "loss":
            return self.evals.column("loss")
        # Validation passes are never thinned (a run has far fewer than MAX_POINTS)
        values = np.array([_num(m.get(name)) for m in self.eval_metrics], dtype=np.float64)
        return np.where(np.isfinite(values), values, np.nan)

    def add_events(self, events: Iterable[Event]) -> None:
        """Events in the order they happened (a metrics.jsonl, say)."""
        pending: list[TrainStep] = []
        for event in events:
            if isinstance(event, TrainStep):
                pending.append(event)
                continue
            if pending:
                self.add_train(pending)
                pending = []
            if isinstance(event, Started):
                self.started(event)
            elif isinstance(event, EvalResult):
                self.add_evals([event])
        if pending:
            self.add_train(pending)

    def set_smoothing(self, weight: float) -> None:
        """Recompute the smoothed loss with a new weight."""
        self.smoother = Smoother(weight)
        if self.train.n:
            smooth = self.smoother(self.train.column("loss").tolist())
            self.train._data[self.train.columns.index("smooth"), : self.train.n] = smooth
            self.train.version += 1

    @property
    def steps_per_epoch(self) -> float | None:
        return self.total_steps / self.epochs if self.total_steps and self.epochs else None

    @classmethod
    def from_metrics(cls, path: str | Path, smoothing: float = 0.9) -> "RunCurves":
        """The curves of a finished (or running) run from its metrics.jsonl."""
        curves = cls(smoothing)
        curves.add_events(e for e in read_events(path) if not isinstance(e, (SystemSample, Finished)))
        return curves


def _num(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan

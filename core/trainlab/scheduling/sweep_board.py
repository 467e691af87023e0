"""One study as the window's sweep views see it, with no Qt: ``SweepBoard``.

The trials table (state, GPU, parameters, best metric, duration; sortable
by any column), the parallel-coordinates plot (each trial a line across one
axis per parameter and one for the metric, every axis scaled to 0..1), the
overlaid learning curves (the monitored metric at each epoch, as reported
to the study, pruned trials marked to be dimmed), the parameters'
importance, and "train the best configuration" (a queued full run with the
best trial's values).  ``trainlab_desktop.scheduling.sweep_view`` draws it.

Importance is Optuna's PED-ANOVA (``PedAnovaImportanceEvaluator``): fANOVA
(Optuna's default) and mean decrease in impurity need scikit-learn, which
TrainLab does not otherwise depend on.  Only completed trials count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from trainlab.api.errors import UsageError
from trainlab.runfolder.status import EntryState, TrialState
from trainlab.scheduling import queue_actions as actions
from trainlab.scheduling.queue_board import gpu_names
from trainlab.scheduling.queue_store import QueueStore
from trainlab.scheduling.scheduler import ensure_scheduler
from trainlab.scheduling.sweep_study import SweepStudy, studies_dir

IMPORTANCE_EVALUATOR = "PED-ANOVA (optuna.importance.PedAnovaImportanceEvaluator)"
MIN_TRIALS_FOR_IMPORTANCE = 2
FIXED_COLUMNS = ("trial", "state", "gpu")
TAIL_COLUMNS = ("value", "duration")


@dataclass(frozen=True)
class TrialRow:
    """One trial as a row: plain values, ``value`` the best of the monitored metric (completed trials)."""

    number: int
    state: str  # completed, pruned, failed, running, waiting
    gpu: str
    params: Mapping[str, Any]
    value: float | None
    duration: float | None
    run_dir: str = ""
    reason: str = ""
    curve: tuple[tuple[int, float], ...] = ()  # (epoch, monitored value) as reported to the study

    @property
    def last_value(self) -> float | None:
        """What the trial reached last (a pruned or running trial has no ``value``)."""
        return self.curve[-1][1] if self.curve else None


@dataclass(frozen=True)
class ParallelAxis:
    name: str
    labels: tuple[str, ...] = ()  # a list of values: the tick labels, at 0..1 evenly
    low: float | None = None  # a range: its ends (log scale: their logs)
    high: float | None = None
    log: bool = False


@dataclass(frozen=True)
class ParallelLine:
    number: int
    state: str
    points: tuple[float | None, ...]  # one per axis, 0..1; None where the trial has no value there


@dataclass
class Importance:
    evaluator: str = IMPORTANCE_EVALUATOR
    values: dict[str, float] = field(default_factory=dict)  # parameter -> share, largest first
    message: str = ""  # why there is none yet


class SweepBoard:
    """A study's trials, read once (``load``); ``SweepBoard.load(name)`` again to refresh."""

    def __init__(self, summary: Mapping[str, Any], devices: Mapping[int, str] | None = None, dimensions: Sequence[Any] = (),
                 gpu_names: Mapping[str, str] | None = None):
        self.summary = dict(summary)
        self.name = str(summary.get("study", ""))
        self.task = str(summary.get("task", ""))
        self.monitor = str(summary.get("monitor", ""))
        self.direction = str(summary.get("direction", "maximize"))
        self.dimensions = list(dimensions)
        devices = dict(devices or {})
        names = dict(gpu_names or {})
        self.rows: list[TrialRow] = [self._row(t, devices, names) for t in summary.get("trials", [])]
        names: list[str] = [d.name for d in self.dimensions]
        for row in self.rows:
            names += [n for n in row.params if n not in names]
        self.param_names = names
        self._study = None

    @classmethod
    def load(cls, name: str) -> "SweepBoard":
        """The study ``name`` now (UsageError when there is no such study)."""
        study = SweepStudy.load(name)

        board = cls(study.summary(), devices=_trial_devices(name), dimensions=study.dimensions, gpu_names=gpu_names())
        board._study = study
        return board

    @staticmethod
    def _row(trial: Mapping[str, Any], devices: Mapping[int, str], gpu_names: Mapping[str, str]) -> TrialRow:
        curve = []
        for epoch, value in (trial.get("last_reported") or {}).items():
            if isinstance(value, (int, float)) and math.isfinite(value):
                curve.append((int(epoch), float(value)))
        number = int(trial["number"])
        return TrialRow(
            number=number,
            state=str(trial.get("state", "")),
            gpu=_gpu_text(devices.get(number) or str(trial.get("gpu") or ""), gpu_names),
            params=dict(trial.get("params") or {}),
            value=trial.get("value"),
            duration=trial.get("duration"),
            run_dir=str(trial.get("run_dir") or ""),
            reason=str(trial.get("reason") or ""),
            curve=tuple(sorted(curve)),
        )

    # -- the table ---------------------------------------------------------------------
    def columns(self) -> list[str]:
        """Column keys: trial, state, gpu, each parameter, value (the monitored metric), duration."""
        return [*FIXED_COLUMNS, *self.param_names, *TAIL_COLUMNS]

    def cell(self, row: TrialRow, column: str) -> Any:
        """The plain value of one cell (what sorting compares)."""
        if column == "trial":
            return row.number
        if column in ("state", "gpu", "value", "duration"):
            return getattr(row, column)
        return row.params.get(column)

    def sorted_rows(self, column: str = "trial", descending: bool = False) -> list[TrialRow]:
        """The rows by one column; rows without a value there come last either way."""
        have = [r for r in self.rows if self.cell(r, column) is not None]
        lack = [r for r in self.rows if self.cell(r, column) is None]
        have.sort(key=lambda r: _sort_key(self.cell(r, column)), reverse=descending)
        return have + lack

    def best(self) -> TrialRow | None:
        done = [r for r in self.rows if r.state == TrialState.COMPLETED and r.value is not None]
        if not done:
            return None
        pick = max if self.direction == "maximize" else min
        return pick(done, key=lambda r: r.value)

    # -- parallel coordinates ---------------------------------------------------------------
    def parallel_axes(self) -> list[ParallelAxis]:
        axes = []
        for name in self.param_names:
            dimension = next((d for d in self.dimensions if d.name == name), None)
            values = [r.params[name] for r in self.rows if name in r.params]
            if dimension is not None and dimension.is_range:
                low, high, log = float(dimension.low), float(dimension.high), bool(dimension.log)
                axes.append(ParallelAxis(name, low=_scale(low, log), high=_scale(high, log), log=log))
            elif dimension is not None:
                axes.append(ParallelAxis(name, labels=tuple(str(v) for v in dimension.values)))
            elif values and all(isinstance(v, (int, float)) for v in values):
                axes.append(ParallelAxis(name, low=float(min(values)), high=float(max(values))))
            else:
                axes.append(ParallelAxis(name, labels=tuple(dict.fromkeys(str(v) for v in values))))
        metric = [v for r in self.rows if (v := r.value if r.value is not None else r.last_value) is not None]
        axes.append(ParallelAxis(self.monitor or "value", low=min(metric, default=0.0), high=max(metric, default=1.0)))
        return axes

    def parallel_lines(self) -> list[ParallelLine]:
        axes = self.parallel_axes()
        lines = []
        for row in self.rows:
            values = [row.params.get(a.name) for a in axes[:-1]]
            values.append(row.value if row.value is not None else row.last_value)
            lines.append(ParallelLine(row.number, row.state, tuple(_position(a, v) for a, v in zip(axes, values))))
        return lines

    # -- learning curves and importance --------------------------------------------------------
    def curves(self) -> list[tuple[TrialRow, bool]]:
        """Each trial with a curve, and whether to dim it (pruned)."""
        return [(r, r.state == TrialState.PRUNED) for r in self.rows if r.curve]

    def importance(self) -> Importance:
        done = [r for r in self.rows if r.state == TrialState.COMPLETED]
        if len(done) < MIN_TRIALS_FOR_IMPORTANCE:
            return Importance(message=f"Importance needs {MIN_TRIALS_FOR_IMPORTANCE} completed trials ({len(done)} so far).")
        if len(self.param_names) < 2:
            return Importance(values={n: 1.0 for n in self.param_names}, message="One parameter: it explains everything.")
        if self._study is None:
            return Importance(message="The study is not loaded.")
        import warnings

        from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                values = get_param_importances(self._study.study, evaluator=PedAnovaImportanceEvaluator())
        except Exception as exc:  # noqa: BLE001 - too few distinct values, say, is a message, not a crash
            return Importance(message=f"Importance could not be computed: {exc}")
        return Importance(values={k: float(v) for k, v in values.items()})

    # -- train the best configuration -----------------------------------------------------------
    def best_request(self, epochs: int | None = None) -> dict[str, Any]:
        """The run that trains the best trial's values: the study's base parameters and those values."""
        best = self.best()
        if best is None:
            raise UsageError(f"study {self.name}: no trial has completed yet")
        params = {**dict(self.summary.get("params") or {}), **dict(best.params)}
        if epochs:
            params["epochs"] = int(epochs)
        return {"task": self.task, "data": str(self.summary.get("data", "")), "params": params}

    def train_best(self, store: Any = None, *, epochs: int | None = None, gpus: int | None = None, start: bool = True):
        """Queue the best configuration as a full run; the queue entry."""
        request = self.best_request(epochs)
        store = store or QueueStore()
        if gpus is None:
            gpus = int(self.summary.get("gpus_per_trial", 1))
        entry = actions.add_run(store, task=request["task"], data=request["data"], params=request["params"], gpus=gpus)
        if start:
            ensure_scheduler()
        return entry


def study_names() -> list[str]:
    """The studies under the TrainLab home, newest first."""
    folder = studies_dir()
    if not folder.is_dir():
        return []
    journals = sorted(folder.glob("*.journal"), key=lambda p: p.stat().st_mtime, reverse=True)
    return [p.stem for p in journals]


def _trial_devices(study: str) -> dict[int, str]:
    """The GPUs the queue gave each running trial of ``study`` (finished ones say it in run.json)."""
    try:
        entries = QueueStore().entries()
    except Exception:  # noqa: BLE001 - no queue yet
        return {}
    return {int(e.trial): ", ".join(e.devices) or "cpu" for e in entries
            if e.study == study and e.trial is not None and e.state == EntryState.RUNNING}


def _gpu_text(where: str, gpu_names: Mapping[str, str]) -> str:
    """GPU UUIDs as their names on this machine ("GPU 0"); a device ("cpu", "cuda:1") as it is."""
    return ", ".join(gpu_names.get(part.strip(), part.strip()) for part in where.split(",")) if where else ""


def _scale(value: float, log: bool) -> float:
    return math.log10(value) if log and value > 0 else value


def _position(axis: ParallelAxis, value: Any) -> float | None:
    if value is None:
        return None
    if axis.labels:
        text = str(value)
        if text not in axis.labels:
            return None
        return 0.5 if len(axis.labels) == 1 else axis.labels.index(text) / (len(axis.labels) - 1)
    try:
        number = _scale(float(value), axis.log)
    except (TypeError, ValueError):
        return None
    low, high = float(axis.low or 0.0), float(axis.high or 0.0)
    if high == low:
        return 0.5
    return min(1.0, max(0.0, (number - low) / (high - low)))


def _sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value))
    return (1, str(value))

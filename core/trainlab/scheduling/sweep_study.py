"""A sweep's study: Optuna's ask-and-tell over a journal file under the TrainLab home.

One journal file per study (``studies/NAME.journal``, Optuna's
``JournalFileBackend``): an append-only log that several processes (the
foreground sweep, the queue's scheduler and each trial's runner) write under
a file lock, with no database server, and without SQLite's lock-ups under
parallel writers (optuna#820).  What the study is about (task, data, the
base parameters, the space, sampler, monitor and its direction, GPUs per
trial) is kept in the study itself (``user_attrs["trainlab"]``), so that a
study named again is resumed or extended only with the same definition.

TrainLab owns the trials (ask-and-tell): the sampler proposes each trial's
parameters, a trial is an ordinary run, the run's evaluations are reported
to it (``TrialPruning``) and its end is told (``tell_outcome``): completed
with the best value of the monitored metric, pruned, or failed.  Each
trial's run folder is one of its user attributes (``run_dir``), and the run
says its study and trial number in run.json (``study``).
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from trainlab.api.assignments import compact_value
from trainlab.api.callbacks import Callback, RunControl, RunState
from trainlab.api.errors import UsageError
from trainlab.api.params import full_schema
from trainlab.pluginhost.host import registry
from trainlab.runfolder.display import format_metric
from trainlab.runfolder.status import TrialState, trial_state_of_run
from trainlab.scheduling.execution import PRUNED_REASON
from trainlab.scheduling.sweep_space import Dimension, parse_space
from trainlab.system import paths
from trainlab.system.locks import FileLock

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
SAMPLERS = ("tpe", "random", "grid")
PRUNER_STARTUP_TRIALS = 2  # completed trials before the median pruner may prune: small sweeps prune too
META_KEY = "trainlab"


def studies_dir() -> Path:
    return paths.data_dir() / "studies"


def journal_path(name: str) -> Path:
    return studies_dir() / f"{name}.journal"


def check_name(name: str) -> str:
    if not NAME_RE.match(name or ""):
        raise UsageError(f"--study {name!r}: a study name is letters, digits, '.', '_' and '-' (up to 100)")
    return name


@dataclass(frozen=True)
class SweepSpec:
    """What a study is about; equal specs mean the same study."""

    task: str
    data: str
    params: Mapping[str, Any] = field(default_factory=dict)  # the base parameters, as given (--set, flags)
    space: tuple[str, ...] = ()  # the --space items, written canonically
    sampler: str = "tpe"
    monitor: str = ""
    direction: str = "maximize"
    gpus_per_trial: int = 1
    seed: int = 0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["params"], data["space"] = dict(self.params), list(self.space)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "SweepSpec":
        names = set(cls.__dataclass_fields__)
        values = {k: v for k, v in data.items() if k in names}
        values["space"] = tuple(values.get("space") or ())
        values["params"] = dict(values.get("params") or {})
        return cls(**values)

    def differences(self, other: "SweepSpec") -> list[str]:
        mine, theirs = self.to_json(), other.to_json()
        return [key for key in mine if key != "gpus_per_trial" and mine[key] != theirs[key]]


def _optuna():
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _storage(name: str):
    optuna = _optuna()
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

    path = journal_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Windows has no symbolic links for ordinary users: Optuna's open lock works everywhere.
    lock = JournalFileOpenLock(str(path)) if os.name == "nt" else None
    return optuna, JournalStorage(JournalFileBackend(str(path), lock_obj=lock))


class SweepStudy:
    """One named study: its definition, its trials, asking and telling."""

    def __init__(self, name: str, spec: SweepSpec, study: Any):
        self.name, self.spec, self.study = name, spec, study
        self.dimensions: list[Dimension] = parse_space(list(spec.space), _schema(spec.task))

    @classmethod
    def open(cls, name: str, spec: SweepSpec) -> "SweepStudy":
        """Create the study, or open the one of that name (UsageError when it is about something else)."""
        check_name(name)
        optuna, storage = _storage(name)
        study = optuna.create_study(study_name=name, storage=storage, direction=spec.direction, load_if_exists=True)
        stored = study.user_attrs.get(META_KEY)
        if stored is None:
            study.set_user_attr(META_KEY, spec.to_json())
        else:
            known = SweepSpec.from_json(stored)
            different = known.differences(spec)
            if different:
                what = "; ".join(f"{key}: {known.to_json()[key]!r} there, {spec.to_json()[key]!r} here" for key in different)
                raise UsageError(f"--study {name}: that study was started with other settings ({what}); use another --study name")
        return cls(name, spec, study)

    @classmethod
    def load(cls, name: str) -> "SweepStudy":
        check_name(name)
        if not journal_path(name).is_file():
            raise UsageError(f"--study {name}: no such study ({journal_path(name)} is missing)")
        optuna, storage = _storage(name)
        study = optuna.load_study(study_name=name, storage=storage)
        stored = study.user_attrs.get(META_KEY)
        if stored is None:
            raise UsageError(f"study {name}: {journal_path(name)} was not written by trainlab sweep")
        return cls(name, SweepSpec.from_json(stored), study)

    def journal_text(self) -> str:
        return str(journal_path(self.name))

    def lock(self):
        """The lock whoever drives the study holds (the foreground sweep, or the queue's scheduler)."""
        return FileLock(studies_dir() / f"{self.name}.lock")

    # -- trials ---------------------------------------------------------------------
    def trials(self) -> list[Any]:
        return list(self.study.get_trials(deepcopy=False))

    def running(self) -> list[Any]:
        optuna = _optuna()
        return [t for t in self.trials() if t.state == optuna.trial.TrialState.RUNNING]

    def ask(self) -> tuple[int, dict[str, Any]]:
        """A new trial: (its number, the parameters the sampler chose)."""
        self.study.sampler = self._sampler()
        self.study.pruner = self._pruner()
        distributions = {d.name: d.distribution() for d in self.dimensions}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trial = self.study.ask(distributions)
        return trial.number, dict(trial.params)

    def trial_params(self, number: int) -> dict[str, Any]:
        return dict(self._frozen(number).params)

    def note_run_dir(self, number: int, run_dir: str, gpu: str = "") -> None:
        """The trial's run folder, and where it runs (GPU UUIDs, or the device), for the sweep views."""
        trial = self._live_trial(number)
        trial.set_user_attr("run_dir", str(run_dir))
        if gpu:
            trial.set_user_attr("gpu", str(gpu))

    def pruning(self, number: int) -> "TrialPruning":
        return TrialPruning(self, number)

    def tell_outcome(self, number: int, outcome: Any) -> TrialState | str:
        """Tell the study how a trial's run ended; the trial's state ("" when it was told before)."""
        optuna = _optuna()
        state = optuna.trial.TrialState
        frozen = self._frozen(number)
        if frozen.state != state.RUNNING:
            return ""
        trial = self._live_trial(number)
        if outcome.run_dir:
            trial.set_user_attr("run_dir", str(outcome.run_dir))
        trial.set_user_attr("status", outcome.status)
        if outcome.error:
            trial.set_user_attr("reason", outcome.error)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            told = trial_state_of_run(outcome.status, pruned=outcome.error == PRUNED_REASON)
            if told == TrialState.COMPLETED:
                value = objective_value(outcome, self.spec.monitor)
                if value is not None:
                    self.study.tell(number, value)
                    return told
                trial.set_user_attr("reason", f"the run gave no {self.spec.monitor}")
                told = TrialState.FAILED
            self.study.tell(number, state=state.PRUNED if told == TrialState.PRUNED else state.FAIL)
            return told

    def summary(self) -> dict[str, Any]:
        """The study as plain values: its definition, every trial, the best one."""
        trials = [trial_json(t) for t in self.trials()]
        done = [t for t in trials if t["state"] == TrialState.COMPLETED]
        best = None
        if done:
            pick = max if self.spec.direction == "maximize" else min
            best = pick(done, key=lambda t: t["value"])
        return {
            "study": self.name,
            "storage": str(journal_path(self.name)),
            **{k: v for k, v in self.spec.to_json().items() if k not in ("seed",)},
            "trials": trials,
            "best": best,
        }

    # -- internals --------------------------------------------------------------------
    def _frozen(self, number: int) -> Any:
        for trial in self.study.get_trials(deepcopy=False):
            if trial.number == number:
                return trial
        raise UsageError(f"study {self.name}: no trial {number}")

    def _live_trial(self, number: int) -> Any:
        """A running trial to report to, from any process.  Optuna hands a Trial only to
        whoever asked for it; its constructor takes the storage's trial id, which
        only the frozen trial carries (``_trial_id``)."""
        self.study.pruner = self._pruner()
        return _optuna().trial.Trial(self.study, self._frozen(number)._trial_id)

    def _sampler(self) -> Any:
        samplers = _optuna().samplers
        # a resumed study must not draw the same points again: the seed moves on with each trial
        seed = int(self.spec.seed) + len(self.trials())
        if self.spec.sampler == "grid":
            return samplers.GridSampler({d.name: d.grid_values() for d in self.dimensions}, seed=int(self.spec.seed))
        if self.spec.sampler == "random":
            return samplers.RandomSampler(seed=seed)
        return samplers.TPESampler(seed=seed)

    def _pruner(self) -> Any:
        return _optuna().pruners.MedianPruner(n_startup_trials=PRUNER_STARTUP_TRIALS, n_warmup_steps=0, interval_steps=1)


class TrialPruning(Callback):
    """Reports each validation of a trial's run to its study; stops the run when the pruner says so.

    The stop is the engine's cooperative one (``RunControl.request_stop``,
    reason ``pruned``): the run ends ``cancelled`` after that evaluation,
    its checkpoint kept.
    """

    def __init__(self, study: SweepStudy, number: int):
        self.study, self.number = study, number
        self.pruned_at: int | None = None

    def on_eval_end(self, state: RunState, result: Any) -> None:
        self.observe(result, state.control)

    def observe(self, result: Any, control: RunControl) -> None:
        if getattr(result, "split", "val") != "val":
            return
        value = result.value(self.study.spec.monitor)
        if value is None:
            return
        trial = self.study._live_trial(self.number)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a resumed run reports an epoch again: Optuna keeps the first
            trial.report(float(value), int(result.epoch))
        if trial.should_prune():
            self.pruned_at = int(result.epoch)
            control.request_stop(PRUNED_REASON)


def objective_value(outcome: Any, monitor: str) -> float | None:
    """A completed run's value for the study: the best value of the monitored metric."""
    best = dict(outcome.best or {})
    if best.get("metric") == monitor and best.get("value") is not None:
        return float(best["value"])
    value = dict(outcome.metrics or {}).get(monitor)
    return float(value) if isinstance(value, (int, float)) else None


# optuna's names for a trial's states, in ours
_STATE_WORDS = {
    "COMPLETE": TrialState.COMPLETED,
    "PRUNED": TrialState.PRUNED,
    "FAIL": TrialState.FAILED,
    "RUNNING": TrialState.RUNNING,
    "WAITING": TrialState.WAITING,
}


def monitor_text(task: str, monitor: str, value: Any) -> str:
    """``accuracy 51.7%``: a trial's monitored value as ``trainlab train`` and ``runs`` print it."""
    entry = registry().tasks.get(task)
    declared = entry.spec.metric(monitor) if entry is not None else None
    return f"{monitor} {format_metric(monitor, value, declared)}"


def params_text(params: Mapping[str, Any]) -> str:
    """``lr=0.002369, batch_size=16``: a trial's values as a terminal line shows them, floats to 4 significant
    digits (a log-uniform sample has 16); the summary's JSON and the trial's run keep the exact values."""
    return ", ".join(f"{name}={compact_value(value)}" for name, value in params.items())


def trial_json(trial: Any) -> dict[str, Any]:
    attrs = dict(trial.user_attrs)
    return {
        "number": trial.number,
        "state": _STATE_WORDS.get(trial.state.name, trial.state.name.lower()),
        "params": dict(trial.params),
        "value": trial.value if trial.state.name == "COMPLETE" else None,
        "last_reported": {str(k): v for k, v in sorted(trial.intermediate_values.items())},
        "run_dir": attrs.get("run_dir", ""),
        "reason": attrs.get("reason", ""),
        "gpu": attrs.get("gpu", ""),
        "duration": trial.duration.total_seconds() if trial.duration is not None else None,
    }


def _schema(task: str):
    return full_schema(registry().task(task).spec)

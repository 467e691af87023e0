"""Experiment logs: a run's logged values in TensorBoard and MLflow too (``report_to``).

``--set report_to=tensorboard,mlflow`` adds one engine callback per name
(rank 0's alone: the run folder and the stores are the writer's):

- ``TensorBoardLogger`` writes every logged value (training loss, learning
  rate and throughput, each evaluation's loss and metrics per split, the
  system samples, the final metrics) as scalars, the log lines and the
  parameters as text, into event files in ``RUN/tensorboard/``;
- ``MlflowLogger`` writes the same values as MLflow metrics (step: the
  optimizer step; ``epoch`` beside them), the run's parameters, tags (task,
  model, run folder, TrainLab's status) and status (FINISHED, FAILED,
  KILLED) to a local store, with run.json and eval.json as artifacts and,
  with ``log_model=true``, the model folder.

The store is ``MLFLOW_TRACKING_URI`` when it names a local one (a path, a
``file:`` or ``sqlite:`` URI), else ``mlruns/mlflow.db`` under TrainLab's
data folder, its artifacts in ``mlruns/artifacts/``.  A tracking server
(``http``, ``https``, or any other remote scheme) is refused: TrainLab opens
no network connection.  MLflow's own usage telemetry is turned off before
it is imported, for the same reason.

Both packages are extras, imported only when a run asks for them; a run that
names one that is not installed stops before it begins, with the line that
installs it.  A store that fails in mid-run is reported once in the run's log
and dropped: the run and its folder are the record, the loggers are copies.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import unquote, urlparse

from trainlab.api.callbacks import Callback, RunState
from trainlab.api.errors import UsageError
from trainlab.api.events import EvalResult, Event, Finished, Log, SystemSample, TrainStep
from trainlab.system.paths import data_dir

REPORT_TO_NAMES = ("tensorboard", "mlflow")
# the package each name needs, and the extra that installs it
_PACKAGES = {"tensorboard": "tensorboard", "mlflow": "mlflow"}
TRACKING_URI_VAR = "MLFLOW_TRACKING_URI"
EXPERIMENT_VAR = "MLFLOW_EXPERIMENT_NAME"
_LOCAL_SCHEMES = ("", "file", "sqlite")
# MLflow's run status for each of TrainLab's
_MLFLOW_STATUS = {"completed": "FINISHED", "failed": "FAILED", "cancelled": "KILLED"}
MLFLOW_PARAM_LIMIT = 6000  # characters of a parameter value MLflow keeps (2.x and later)


def report_targets(value: Any) -> tuple[str, ...]:
    """The names in ``report_to`` ("none" or empty: none), in the order given; UsageError for an unknown one."""
    names: list[str] = []
    for part in str(value or "").replace(";", ",").split(","):
        name = part.strip().lower()
        if name in ("", "none"):
            continue
        if name not in REPORT_TO_NAMES:
            raise UsageError(f"bad value for parameter report_to: {name!r} is not one of none, {', '.join(REPORT_TO_NAMES)} (comma-separated)")
        if name not in names:
            names.append(name)
    return tuple(names)


def extra_hint(name: str) -> str:
    return f"pip install 'trainlab[{name}]'"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent that fails to import; a module set to None in sys.modules
        return False


def check_report_to(params: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The run's ``report_to`` names, checked before it begins: each one's
    package installed, an MLflow store that is local.  UsageError otherwise."""
    names = report_targets(params.get("report_to"))
    for name in names:
        if not _installed(_PACKAGES[name]):
            raise UsageError(f"report_to={name} needs the {name} extra, which is not installed: {extra_hint(name)}")
    if "mlflow" in names:
        mlflow_store(os.environ if environ is None else environ)
    return names


def mlflow_store(environ: Mapping[str, str]) -> tuple[str, Path | None]:
    """The MLflow tracking URI a run writes to, and where new experiments keep
    their artifacts (None: MLflow's own choice, for a folder store).

    UsageError for a store that is not on this machine.
    """
    given = str(environ.get(TRACKING_URI_VAR, "") or "").strip()
    if not given:
        folder = data_dir() / "mlruns"
        return f"sqlite:///{folder / 'mlflow.db'}", folder / "artifacts"
    parsed = urlparse(given)
    scheme = parsed.scheme.lower()
    if len(scheme) == 1:  # a Windows drive letter: a path
        scheme = ""
    if scheme in ("http", "https"):
        raise UsageError(
            f"{TRACKING_URI_VAR}={given}: an MLflow tracking server is a network connection, which TrainLab never opens "
            "(offline); give a local store: a folder, or sqlite:///PATH/mlflow.db"
        )
    if scheme not in _LOCAL_SCHEMES or given.lower() in ("databricks", "databricks-uc", "uc"):  # MLflow's names of remote stores
        raise UsageError(f"{TRACKING_URI_VAR}={given}: not a local MLflow store (TrainLab works offline); give a folder, or sqlite:///PATH/mlflow.db")
    if scheme == "sqlite":
        prefix = "sqlite:///"  # then a relative path, or /an/absolute one
        database = unquote(given[len(prefix) :].split("?")[0]) if given.lower().startswith(prefix) else ""
        if database in ("", ":memory:"):
            raise UsageError(f"{TRACKING_URI_VAR}={given}: give the database file, sqlite:///PATH/mlflow.db")
        return given, Path(database).expanduser().resolve().parent / "artifacts"
    if scheme == "file":
        return given, None
    return Path(given).expanduser().resolve().as_uri(), None


def experiment_loggers(run_dir: Path, params: Mapping[str, Any], *, task_id: str, record: Mapping[str, Any], resumed: bool, step: int,
                       warn: Callable[[str], None]) -> list[Callback]:  # fmt: skip
    """The loggers ``report_to`` names for this run (rank 0's); UsageError for a store that cannot be opened."""
    loggers: list[Callback] = []
    for name in check_report_to(params):
        if name == "tensorboard":
            loggers.append(TensorBoardLogger(run_dir / "tensorboard", params, purge_step=step if resumed else None, warn=warn))
        else:
            loggers.append(MlflowLogger(run_dir, params, task_id=task_id, record=record, resumed=resumed, warn=warn))
    return loggers


# -- the values ---------------------------------------------------------------------


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def logged_values(event: Event) -> Iterator[tuple[str, float]]:
    """Every number an event carries, as (tag, value): ``train/loss``, ``val/accuracy``,
    ``system/gpu0/utilization_percent``, ``final/test/loss`` ..."""
    if isinstance(event, TrainStep):
        yield "train/loss", event.loss
        yield "train/lr", event.lr
        if event.samples_per_second:
            yield "train/samples_per_second", event.samples_per_second
        yield "epoch", float(event.epoch)
    elif isinstance(event, EvalResult):
        if event.loss is not None:  # None: the task's evaluation measures no loss
            yield f"{event.split}/loss", event.loss
        for name, value in event.metrics.items():
            number = _number(value)
            if number is not None and name != "loss":
                yield f"{event.split}/{name}", number
    elif isinstance(event, SystemSample):
        for name in ("cpu_percent", "ram_used_bytes", "disk_free_bytes", "torch_allocated_bytes", "torch_reserved_bytes"):
            number = _number(getattr(event, name))
            if number is not None:
                yield f"system/{name}", number
        for position, gpu in enumerate(event.gpus):
            index = gpu.get("index", position)
            host = f"{gpu['host']}/" if gpu.get("host") and event.ranks else ""
            for name, value in gpu.items():
                number = _number(value)
                if number is not None and name not in ("index", "rank"):
                    yield f"system/{host}gpu{index}/{name}", number
    elif isinstance(event, Finished):
        yield from _flat("final", event.metrics)
        if event.best and _number(event.best.get("value")) is not None:
            yield f"best/{event.best.get('metric')}", float(event.best["value"])


def _flat(prefix: str, values: Mapping[str, Any]) -> Iterator[tuple[str, float]]:
    for name, value in values.items():
        if isinstance(value, Mapping):
            yield from _flat(f"{prefix}/{name}", value)
        else:
            number = _number(value)
            if number is not None:
                yield f"{prefix}/{name}", number


def _text(value: Any) -> str:
    return "" if value is None else str(value)


class _Logger(Callback):
    """A copy of the run's values somewhere else: its first failure is said once, then it stops writing."""

    what = ""

    def __init__(self, warn: Callable[[str], None]):
        self._warn = warn
        self._lock = threading.RLock()  # on_event also comes from the telemetry sampler's thread
        self.broken = False

    def _safely(self, action: Callable[[], None], doing: str) -> None:
        if self.broken:
            return
        with self._lock:
            try:
                action()
            except Exception as exc:  # noqa: BLE001 - a copy of the run's values must not fail the run
                self.broken = True
                self._warn(f"{self.what}: {doing} failed ({type(exc).__name__}: {exc}); no more values go there in this run")


class TensorBoardLogger(_Logger):
    """Event files of every logged value in ``folder`` (the run's ``tensorboard/``).

    A resumed run continues in the same folder with ``purge_step``: TensorBoard
    drops what the earlier session wrote after the checkpoint it resumed from.
    """

    what = "TensorBoard"

    def __init__(self, folder: Path, params: Mapping[str, Any], *, purge_step: int | None = None, warn: Callable[[str], None]):
        super().__init__(warn)
        from torch.utils.tensorboard import SummaryWriter  # the tensorboard extra; torch is loaded by now

        self.folder = folder
        self._open = lambda: SummaryWriter(log_dir=str(folder), purge_step=purge_step, flush_secs=10)
        self._start_step = purge_step or 0
        self._params = dict(params)
        self.writer: Any = None  # opened at the first value, once the run folder exists

    def on_event(self, event: Event) -> None:
        self._safely(lambda: self._write(event), f"writing to {self.folder}")

    def _write(self, event: Event) -> None:
        if self.writer is None:
            self.writer = self._open()
            rows = "\n".join(f"| {name} | {_text(value)} |" for name, value in sorted(self._params.items()))
            self.writer.add_text("parameters", "| parameter | value |\n|---|---|\n" + rows, global_step=self._start_step)
        for tag, value in logged_values(event):
            self.writer.add_scalar(tag, value, global_step=event.step, walltime=event.time)
        if isinstance(event, Log):
            self.writer.add_text("log", f"{event.level}: {event.message}", global_step=event.step, walltime=event.time)
        elif isinstance(event, Finished):
            self.writer.add_text("status", event.status + (f": {event.error}" if event.error else ""), global_step=event.step)

    def on_run_end(self, state: RunState) -> None:
        if self.writer is not None:
            self._safely(self.writer.flush, f"writing to {self.folder}")
            self.writer.close()


class MlflowLogger(_Logger):
    """The run as an MLflow run in a local store (``mlflow_store``).

    The experiment is ``MLFLOW_EXPERIMENT_NAME``, else the task's id; the MLflow
    run is named after the run folder and tagged with it, so a resumed run
    continues the same MLflow run.  Values are sent in batches: at each
    evaluation, epoch end and the run's end, and otherwise at most every
    ``FLUSH_EVERY`` seconds, so the store's writes stay off the step's path.
    """

    what = "MLflow"
    FLUSH_EVERY = 5.0
    RUN_DIR_TAG = "trainlab.run_dir"

    def __init__(self, run_dir: Path, params: Mapping[str, Any], *, task_id: str, record: Mapping[str, Any], resumed: bool,
                 warn: Callable[[str], None]):  # fmt: skip
        super().__init__(warn)
        os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"  # the offline rule: MLflow's usage reports are a connection
        uri, artifacts = mlflow_store(os.environ)
        if artifacts is not None:
            artifacts.mkdir(parents=True, exist_ok=True)
        try:
            from mlflow.entities import Metric, Param  # the mlflow extra
            from mlflow.tracking import MlflowClient

            self.client = MlflowClient(tracking_uri=uri)
            experiment = self._experiment(str(os.environ.get(EXPERIMENT_VAR) or task_id), artifacts)
            self.run_id = self._run(experiment, run_dir, task_id, record, resumed)
            known = set(self.client.get_run(self.run_id).data.params) if resumed else set()
            chosen = [Param(name, _text(value)[:MLFLOW_PARAM_LIMIT]) for name, value in sorted(params.items()) if name not in known]
            for first in range(0, len(chosen), 100):  # MLflow takes 100 parameters a batch
                self.client.log_batch(self.run_id, params=chosen[first : first + 100])
        except UsageError:
            raise
        except Exception as exc:  # noqa: BLE001 - MLflow's own errors: one line naming the store
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            hint = ""
            if "MLFLOW_ALLOW_FILE_STORE" in str(exc):
                message = "this MLflow keeps a folder store only with MLFLOW_ALLOW_FILE_STORE=true"
                hint = "; set it, or give sqlite:///PATH/mlflow.db"
            raise UsageError(f"{TRACKING_URI_VAR}={uri}: the MLflow store cannot be opened ({message}){hint}") from None
        self._metric = Metric
        self.uri = uri
        self.run_dir = run_dir
        self.log_model = bool(params.get("log_model", False))
        self._pending: list[Any] = []
        self._last_flush = time.monotonic()

    def _experiment(self, name: str, artifacts: Path | None) -> str:
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            if found.lifecycle_stage == "deleted":
                self.client.restore_experiment(found.experiment_id)
            return found.experiment_id
        location = (artifacts / name).as_uri() if artifacts is not None else None
        return self.client.create_experiment(name, artifact_location=location)

    def _run(self, experiment: str, run_dir: Path, task_id: str, record: Mapping[str, Any], resumed: bool) -> str:
        if resumed:
            found = self.client.search_runs([experiment], filter_string=f"tags.`{self.RUN_DIR_TAG}` = '{run_dir}'", max_results=1)
            if found:
                self.client.update_run(found[0].info.run_id, status="RUNNING")
                return found[0].info.run_id
        plugin = record.get("plugin") or {}
        tags = {
            self.RUN_DIR_TAG: str(run_dir),
            "trainlab.run_id": _text(record.get("id")),
            "trainlab.task": task_id,
            "trainlab.plugin": f"{plugin.get('name', '')} {plugin.get('version', '')}".strip(),
            "trainlab.model": _text((record.get("parameters") or {}).get("model")),
            "trainlab.status": "running",
            "mlflow.source.name": "trainlab",
        }
        run = self.client.create_run(experiment, run_name=run_dir.name, tags={k: v for k, v in tags.items() if v})
        return run.info.run_id

    def on_event(self, event: Event) -> None:
        values = list(logged_values(event))
        if not values or self.broken:
            return
        stamp = int(event.time * 1000)
        with self._lock:
            self._pending += [self._metric(tag, value, stamp, event.step) for tag, value in values]
            due = isinstance(event, (EvalResult, Finished)) or time.monotonic() - self._last_flush >= self.FLUSH_EVERY
        if due:
            self._safely(self._flush, f"writing to {self.uri}")

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        self._last_flush = time.monotonic()
        for first in range(0, len(pending), 1000):  # MLflow takes 1000 metrics a batch
            self.client.log_batch(self.run_id, metrics=pending[first : first + 1000])

    def on_epoch_end(self, state: RunState) -> None:
        self._safely(self._flush, f"writing to {self.uri}")

    def on_run_end(self, state: RunState) -> None:
        self._safely(lambda: self._end(state), f"writing to {self.uri}")

    def _end(self, state: RunState) -> None:
        self._flush()
        self.client.set_tag(self.run_id, "trainlab.status", state.status)
        if state.error:
            self.client.set_tag(self.run_id, "trainlab.error", state.error[:5000])
        for name in ("run.json", "eval.json"):
            if (self.run_dir / name).is_file():
                self.client.log_artifact(self.run_id, str(self.run_dir / name))
        model = self.run_dir / "model"
        if self.log_model and model.is_dir():
            where = self.client.get_run(self.run_id).info.artifact_uri
            if urlparse(where).scheme.lower() not in ("", "file") and len(urlparse(where).scheme) > 1:
                self._warn(f"MLflow: the model folder was not stored: the run's artifacts go to {where}, not this machine")
            else:
                self.client.log_artifacts(self.run_id, str(model), "model")
        self.client.set_terminated(self.run_id, status=_MLFLOW_STATUS.get(state.status, "FAILED"))

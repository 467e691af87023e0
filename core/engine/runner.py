"""Running a training run end to end, evaluating and predicting with it.

``run_training`` is what the CLI's main thread, the window's QThread and the
child-process worker all call: one engine, one event stream.
"""

from __future__ import annotations

import hashlib
import os
import platform
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

from trainlab import __version__, paths
from trainlab.api import RunContext, RunFailed, UsageError
from trainlab.engine.callbacks import Callback, CallbackList, IsolatedCallback, RunControl, RunState
from trainlab.events import Event, Finished, Log, Progress, Started
from trainlab.fileio import atomic_write_json
from trainlab.params import ENGINE_PARAMS, resolve
from trainlab.pluginhost import load_factory, registry
from trainlab.runs import RUN_SCHEMA_VERSION, MetricsWriter, RunDir, RunStore, new_run_id
from trainlab.telemetry import TelemetryCallback


@dataclass
class RunRequest:
    task: str = ""
    data: str = ""
    params: dict[str, Any] = field(default_factory=dict)  # explicit --set / flags
    out: str | None = None
    resume: str | None = None
    remembered: dict[str, Any] = field(default_factory=dict)
    more_epochs: int = 0

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RunResult:
    run_dir: str
    status: str
    task: str
    metrics: dict[str, Any]
    epochs: int
    steps: int
    samples_per_second: float
    error: str = ""
    best: dict[str, Any] = field(default_factory=dict)
    traceback: str = ""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @property
    def exit_code(self) -> int:
        return {"completed": 0, "cancelled": 130}.get(self.status, 1)


# -- default callbacks -----------------------------------------------------------


class MetricsFileCallback(Callback):
    """Writes every event to metrics.jsonl; progress at most every few seconds."""

    PROGRESS_EVERY = 5.0

    def __init__(self, run_dir: RunDir):
        self.writer = MetricsWriter(run_dir.metrics_jsonl)
        self._last_progress = 0.0

    def on_event(self, event: Event) -> None:
        if isinstance(event, Progress) and event.phase == "train":
            if event.time - self._last_progress < self.PROGRESS_EVERY:
                return
            self._last_progress = event.time
        self.writer.write(event)

    def on_run_end(self, state: RunState) -> None:
        self.writer.close()


class RunRecordCallback(Callback):
    """Keeps run.json and the run index current at each evaluation."""

    def __init__(self, run_dir: RunDir, record: dict[str, Any], store: RunStore | None):
        self.run_dir = run_dir
        self.record = record
        self.store = store

    def on_eval_end(self, state: RunState, result) -> None:
        self.record["progress"] = {"epochs_completed": result.epoch, "steps": state.step}
        if state.best_metric is not None:
            self.record["best"] = {
                "metric": state.params["monitor"],
                "value": state.best_metric,
                "step": state.best_step,
            }
        self.save()

    def save(self) -> None:
        self.run_dir.write(self.record)
        if self.store is not None:
            try:
                self.store.record(self.record, self.run_dir.path)
            except Exception as exc:  # noqa: BLE001 - the index is a cache; never fail a run over it
                print(f"trainlab: could not update the run index: {exc}", file=sys.stderr)


def default_callbacks(run_dir: RunDir, record: dict[str, Any], store: RunStore | None, params: dict[str, Any]) -> list[Callback]:
    """The callbacks every run gets: metrics file, run record, telemetry."""
    callbacks: list[Callback] = [MetricsFileCallback(run_dir), RunRecordCallback(run_dir, record, store)]
    callbacks.append(TelemetryCallback(float(params.get("telemetry_every", 5.0))))
    return callbacks


# -- helpers ---------------------------------------------------------------------------


def data_fingerprint(path: str) -> dict[str, Any]:
    """Cheap identity of the data: names, sizes and mtimes (not contents)."""
    target = Path(path)
    digest = hashlib.sha256()
    files = 0
    size = 0
    if target.is_file():
        stat = target.stat()
        digest.update(f"{target.name}|{stat.st_size}|{int(stat.st_mtime)}".encode())
        files, size = 1, stat.st_size
    elif target.is_dir():
        for root, dirs, names in os.walk(target):
            dirs.sort()
            for name in sorted(names):
                full = Path(root, name)
                try:
                    stat = full.stat()
                except OSError:
                    continue
                rel = full.relative_to(target).as_posix()
                digest.update(f"{rel}|{stat.st_size}|{int(stat.st_mtime)}\n".encode())
                files += 1
                size += stat.st_size
    return {"sha256": digest.hexdigest(), "files": files, "bytes": size}


def environment() -> dict[str, Any]:
    import torch

    gpus = []
    if torch.cuda.is_available():
        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "trainlab": __version__,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": cudnn,
        "gpus": gpus,
    }


def seed_everything(seed: int) -> None:
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def _task_for(task_id: str, params: dict[str, Any]):
    entry = registry().task(task_id)
    factory = load_factory(entry.spec.factory)
    try:
        task = factory(entry.spec, params)
    except UsageError:
        raise
    except Exception as exc:
        raise RunFailed(f"task {task_id} (plugin {entry.plugin.name}) failed to start: {type(exc).__name__}: {exc}") from exc
    return entry, task


def _ctx(params: dict[str, Any], run_dir: Path | None, log, mp_context: str | None) -> RunContext:
    from trainlab.engine.device import enable_tf32, resolve_device, resolve_precision

    device = resolve_device(str(params.get("device", "auto")))
    precision = resolve_precision(device, str(params.get("precision", "auto")))
    enable_tf32(device)
    return RunContext(
        device=device,
        precision=precision,
        seed=int(params.get("seed", 0)),
        run_dir=run_dir,
        params=params,
        log=log,
        multiprocessing_context=mp_context,
    )


def _class_weights(task, ctx: RunContext):
    import torch

    counts = list(task.label_counts())
    if not counts:
        ctx.log("class weighting is on but the task reports no label counts; ignored")
        return None
    total = sum(counts)
    weights = [total / (len(counts) * c) if c else 0.0 for c in counts]
    return torch.tensor(weights, dtype=torch.float32, device=ctx.device)


# -- training ------------------------------------------------------------------------


def run_training(
    request: RunRequest,
    *,
    callbacks: Iterable[Callback] = (),
    control: RunControl | None = None,
    mp_context: str | None = None,
    store: RunStore | None = None,
) -> RunResult:
    """Train (or resume, or continue) a run; UsageError before it starts."""
    control = control or RunControl()
    user_callbacks = list(callbacks)
    early_events: list[Event] = []

    def early_log(message: str, level: str = "info") -> None:
        event = Log(level=level, message=message)
        early_events.append(event)
        for cb in user_callbacks:
            cb.on_event(event)

    prior: dict[str, Any] | None = None
    prior_dir: RunDir | None = None
    if request.resume:
        prior_dir = RunDir(request.resume)
        prior = prior_dir.read()
        if request.task and request.task != prior["task"]:
            raise UsageError(f"--resume {prior_dir.path}: that run is {prior['task']}, not {request.task}")
        if prior.get("status") == "completed" and not request.more_epochs:
            raise UsageError(f"--resume {prior_dir.path}: the run is already completed; use --more-epochs N to train further")
        if prior.get("status") == "running" and _alive_elsewhere(prior):
            raise UsageError(f"--resume {prior_dir.path}: the run is still running in process {prior.get('pid')}")
        if not prior_dir.last_checkpoint.exists():
            raise UsageError(f"--resume {prior_dir.path}: no checkpoint to resume from ({prior_dir.last_checkpoint} is missing)")
    task_id = prior["task"] if prior else request.task
    if not task_id:
        raise UsageError("which task? give TASK (see `trainlab tasks`)")
    data = request.data or (prior["data"]["path"] if prior else "")
    if not data:
        raise UsageError("--data PATH is required")
    entry = registry().task(task_id)
    if prior:
        explicit = dict(prior["parameters"])
        # a resumed run keeps its parameters, but may move to another device
        for key in ("device", "precision"):
            if key in request.params:
                explicit[key] = request.params[key]
        params = resolve(entry.spec, ENGINE_PARAMS, {}, explicit)
    else:
        params = resolve(entry.spec, ENGINE_PARAMS, request.remembered, request.params)
    if not Path(data).exists():
        raise UsageError(f"--data {data}: no such file or folder")
    if 0 < float(params.get("telemetry_every", 0)) < 0.5:
        raise UsageError("bad value for parameter telemetry_every: must be 0 (off) or at least 0.5 seconds")

    entry, task = _task_for(task_id, params)
    ctx = _ctx(params, None, early_log, mp_context)
    ctx.purpose = "resume" if prior else "train"
    seed_everything(int(params["seed"]))
    summary = task.prepare(str(data), ctx, label_names=prior["label_names"] if prior else None)
    for warning in summary.warnings:
        early_log(warning, "warning")

    # -- the run folder ---------------------------------------------------------
    if prior_dir is not None:
        run_dir = prior_dir
        record = prior
        fingerprint = data_fingerprint(str(data))
        if record.get("data", {}).get("fingerprint", {}).get("sha256") not in (None, fingerprint["sha256"]):
            early_log(f"the data at {data} changed since the run started; continuing on the new contents", "warning")
    else:
        run_id = new_run_id(task_id)
        run_dir = RunDir(request.out) if request.out else RunDir(paths.runs_dir() / run_id)
        if run_dir.exists():
            raise UsageError(f"--out {run_dir.path}: already holds a run (run.json); use --resume or another folder")
        run_dir.path.mkdir(parents=True, exist_ok=True)
        record = {
            "schema_version": RUN_SCHEMA_VERSION,
            "id": run_id,
            "name": "",
            "task": task_id,
            "plugin": {"name": entry.plugin.name, "version": entry.plugin.version, "distribution": entry.plugin.distribution},
            "parameters": params,
            "data": {"path": str(Path(data).resolve()), "fingerprint": data_fingerprint(str(data))},
            "label_names": list(task.label_names),
            "data_summary": summary.to_json(),
            "status": "running",
            "error": "",
            "timings": {"started": time.time()},
            "environment": {},
            "world_size": 1,
        }
    record.update(status="running", error="", pid=os.getpid())
    record.setdefault("timings", {})["resumed" if prior else "started"] = time.time()
    record["environment"] = environment()
    ctx.run_dir = run_dir.path
    store = store if store is not None else _open_store()

    state = RunState(task_id=task_id, params=params, run_dir=run_dir.path, control=control)
    plugin_callbacks = [
        IsolatedCallback(cb, owner="plugin", log=early_log) for cb in registry().run_callbacks(task_id, params)
    ]
    defaults = default_callbacks(run_dir, record, store, params)
    recorder = next(cb for cb in defaults if isinstance(cb, RunRecordCallback))
    cblist = CallbackList([*defaults, *plugin_callbacks, *user_callbacks])
    state._emit = cblist.emit
    ctx.log = lambda message: state.emit(Log(step=state.step, epoch=state.epoch, message=str(message)))
    recorder.save()
    for event in early_events:  # what was said before the folder existed
        for cb in cblist.callbacks:
            if cb not in user_callbacks:
                cb.on_event(event)

    # -- model, schedule, position ------------------------------------------------
    from trainlab.engine.loop import LoopPosition, StopRun, Trainer
    from trainlab.engine.schedule import Segment, make_segment

    status, error, tb = "failed", "", ""
    trainer = None
    late_usage_error: UsageError | None = None
    try:
        if params["class_weighting"]:
            ctx.class_weights = _class_weights(task, ctx)
        model = task.build_model(ctx)
        model = task.prepare_model(model, ctx)
        batches = len(task.batch_order("train", 1, int(params["batch_size"]), int(params["seed"])))
        steps_per_epoch = -(-batches // int(params["grad_accum"]))
        if prior_dir is not None:
            from trainlab.engine.checkpoint import read_checkpoint

            _, plain = read_checkpoint(prior_dir.last_checkpoint)
            position = LoopPosition(**plain["meta"]["position"])
            segments = [Segment(**s) for s in position.segments]
            if request.more_epochs:
                seg = make_segment(position.step, steps_per_epoch * request.more_epochs, params["schedule"], float(params["warmup_ratio"]))
                segments.append(seg)
                position.epochs_total += request.more_epochs
                record.setdefault("segments", []).append(seg.to_json())
        else:
            segments = [make_segment(0, steps_per_epoch * int(params["epochs"]), params["schedule"], float(params["warmup_ratio"]))]
            position = LoopPosition(epochs_total=int(params["epochs"]))
            record["segments"] = [s.to_json() for s in segments]
        position.segments = [s.to_json() for s in segments]
        trainer = Trainer(task, model, ctx, state, cblist, position=position, segments=segments)
        if prior_dir is not None:
            trainer.restore(prior_dir.last_checkpoint)
            position.segments = [s.to_json() for s in segments]
        state.extra["start_step"] = position.step
        state.extra["start_samples"] = position.samples_seen
        state.best_metric, state.best_step = position.best_metric, position.best_step
        state.step, state.samples_seen = position.step, position.samples_seen
        state.total_steps = steps_per_epoch * position.epochs_total
        state.emit(
            Started(
                step=position.step,
                epoch=position.epoch,
                run_dir=str(run_dir.path),
                task=task_id,
                total_steps=state.total_steps,
                epochs=position.epochs_total,
                device=str(ctx.device),
                precision=ctx.precision,
                resumed=prior is not None,
            )
        )
        cblist.call("on_run_start", state)
        started = time.perf_counter()
        try:
            trainer.fit()
            early = state.extra.get("early_stopped", False)
            status = "cancelled" if control.stop_requested and not early else "completed"
        except StopRun:
            status = "cancelled"
        train_seconds = time.perf_counter() - started
        state.extra["session_seconds"] = trainer._train_seconds or train_seconds
        record["timings"]["train_seconds"] = record["timings"].get("train_seconds", 0.0) + train_seconds
        if status == "completed":
            _finish_completed(task, trainer, ctx, run_dir, record, state)
        elif status == "cancelled":
            error = control.stop_reason or "stopped"
    except (KeyboardInterrupt, SystemExit):
        status, error = "cancelled", "interrupted"
        raise
    except BaseException as exc:  # noqa: BLE001 - reported in run.json and the Finished event
        status = "failed"
        error = str(exc) if isinstance(exc, (RunFailed, UsageError)) else f"{type(exc).__name__}: {exc}"
        tb = traceback.format_exc()
        cblist.call("on_exception", state, exc)
        if isinstance(exc, UsageError):
            late_usage_error = exc  # bad input found once the run had begun: still exit 2
    finally:
        if trainer is not None:
            trainer.close()
        result = _finalize(record, run_dir, state, trainer, status, error, tb, cblist, recorder)
    if late_usage_error is not None:
        raise late_usage_error
    return result


def _open_store() -> RunStore | None:
    try:
        return RunStore()
    except Exception as exc:  # noqa: BLE001
        print(f"trainlab: run index unavailable ({exc}); the run folder is still written", file=sys.stderr)
        return None


def _alive_elsewhere(record: dict[str, Any]) -> bool:
    pid = record.get("pid")
    if not pid or pid == os.getpid() or record.get("environment", {}).get("hostname") != socket.gethostname():
        return False
    try:
        import psutil

        return psutil.pid_exists(int(pid))
    except Exception:  # noqa: BLE001
        return False


def _finish_completed(task, trainer, ctx, run_dir: RunDir, record, state) -> None:
    params = ctx.params
    weights = "last"
    if params["final_weights"] == "best" and trainer.load_best_weights():
        weights = "best"
    state.emit(Progress(step=state.step, epoch=state.epoch, total_steps=state.total_steps, phase="eval"))
    report: dict[str, Any] = {}
    if "val" in task.splits():
        report = trainer.evaluate("val")
        report["split"] = "val"
    if "test" in task.splits():
        report["test"] = trainer.evaluate("test")
        report["test"]["split"] = "test"
    report["weights"] = weights
    report["step"] = state.step
    atomic_write_json(run_dir.eval_json, report)
    state.metrics = {k: report[k] for k in ("accuracy", "macro_f1", "loss", "top5_accuracy") if k in report}
    if "test" in report:
        state.metrics["test"] = {k: report["test"][k] for k in ("accuracy", "macro_f1", "loss") if k in report["test"]}
    state.emit(Progress(step=state.step, epoch=state.epoch, total_steps=state.total_steps, phase="save"))
    model_dir = run_dir.model_dir
    model_dir.mkdir(parents=True, exist_ok=True)
    task.save_model(trainer.model, model_dir, ctx)
    keep = params["keep_checkpoints"]
    if keep in ("last", "none"):
        run_dir.best_checkpoint.unlink(missing_ok=True)
    if keep in ("best", "none"):
        run_dir.last_checkpoint.unlink(missing_ok=True)


def _finalize(record, run_dir: RunDir, state: RunState, trainer, status, error, tb, cblist: CallbackList, recorder) -> RunResult:
    now = time.time()
    timings = record.setdefault("timings", {})
    timings["finished"] = now
    timings["duration"] = now - timings.get("started", now)
    pos = trainer.position if trainer is not None else None
    epochs_done = (pos.epoch - 1) if pos else record.get("progress", {}).get("epochs_completed", 0)
    steps = pos.step if pos else 0
    # this session's samples over this session's wall time in fit()
    seconds = state.extra.get("session_seconds", 0.0)
    rate = (state.samples_seen - state.extra.get("start_samples", 0)) / seconds if seconds else 0.0
    record.update(status=status, error=error, traceback=tb, metrics=state.metrics, pid=None)
    record["progress"] = {"epochs_completed": epochs_done, "steps": steps}
    if state.best_metric is not None:
        record["best"] = {"metric": state.params["monitor"], "value": state.best_metric, "step": state.best_step}
    if trainer is not None:
        skipped = trainer.task.skipped_during_training()
        if skipped:
            record["skipped_during_training"] = skipped
    record["samples_per_second"] = rate
    recorder.save()
    state.status = status
    state.emit(
        Finished(
            step=steps,
            epoch=epochs_done,
            status=status,
            error=error,
            traceback=tb,
            metrics=dict(state.metrics),
            epochs=epochs_done,
            samples_per_second=rate,
        )
    )
    cblist.call("on_run_end", state)
    return RunResult(
        run_dir=str(run_dir.path),
        status=status,
        task=state.task_id,
        metrics=dict(state.metrics),
        epochs=epochs_done,
        steps=steps,
        samples_per_second=rate,
        error=error,
        best=record.get("best", {}),
        traceback=tb,
    )


# -- evaluation and prediction ------------------------------------------------------------


def _load_trained(run_dir: RunDir, device: str = "auto"):
    """(record, task, model, ctx) of a finished run, ready for inference."""
    import torch

    record = run_dir.read()
    entry = registry().task(record["task"])
    params = resolve(entry.spec, ENGINE_PARAMS, {}, {**record["parameters"], "device": device})
    entry, task = _task_for(record["task"], params)
    ctx = _ctx(params, run_dir.path, lambda m: print(m, file=sys.stderr), None)
    return record, task, ctx, torch


def evaluate_run(run_dir: str, data: str | None = None, *, device: str = "auto") -> dict[str, Any]:
    """Evaluate a trained run; the report is written beside (never over) eval.json."""
    from trainlab.engine.checkpoint import load_model_weights, read_checkpoint
    from trainlab.engine.loop import LoopPosition, Trainer
    from trainlab.engine.schedule import make_segment

    rd = RunDir(run_dir)
    record, task, ctx, torch = _load_trained(rd, device)
    data_path = data or record["data"]["path"]
    if not Path(data_path).exists():
        raise UsageError(f"--data {data_path}: no such file or folder")
    ctx.purpose = "evaluate"
    own = Path(record["data"]["path"]).expanduser().resolve()
    ctx.whole_data = Path(data_path).expanduser().resolve() != own
    task.prepare(str(data_path), ctx, label_names=record["label_names"])
    split = "val"
    if data and "val" not in task.splits():
        split = "train"
    elif data is None and "val" not in task.splits():
        raise UsageError(f"{rd.path}: its data has no validation split to evaluate on; give --data")
    params = ctx.params
    checkpoint = rd.best_checkpoint if params["final_weights"] == "best" and rd.best_checkpoint.exists() else rd.last_checkpoint
    if checkpoint.exists():
        model = task.prepare_model(task.build_model(ctx), ctx)
        tensors, plain = read_checkpoint(checkpoint)
        load_model_weights(model, tensors, plain)
    else:
        model = task.prepare_model(task.load_trained_model(rd.model_dir, ctx), ctx)
    state = RunState(task_id=record["task"], params=params, run_dir=rd.path, control=RunControl())
    trainer = Trainer(
        task, model, ctx, state, CallbackList([]), position=LoopPosition(), segments=[make_segment(0, 1, "constant", 0.0)]
    )
    report = trainer.evaluate(split)
    report["split"] = split
    report["data"] = str(Path(data_path).resolve())
    report["weights"] = checkpoint.stem if checkpoint.exists() else "model"
    name = f"eval-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    out = rd.path / name
    counter = 1
    while out.exists():
        counter += 1
        out = rd.path / f"{name[:-5]}-{counter}.json"
    atomic_write_json(out, report)
    report["written"] = str(out)
    return report


_predictors: dict[tuple[str, str], Any] = {}
_predictors_lock = threading.Lock()


def predict(run_dir: str, inputs: Sequence[str], top_k: int = 5, *, device: str = "auto") -> list[dict[str, Any]]:
    """Top-k predictions of a trained run for each input (paths or texts).

    Each result is ``{"input", "predictions": [{"label", "probability"}]}``;
    an input the task could not use has empty predictions and an ``"error"``.
    """
    rd = RunDir(run_dir)
    if not rd.model_dir.is_dir():
        raise UsageError(f"{rd.path}: has no model/ folder (the run did not complete)")
    key = (str(rd.path), device)
    with _predictors_lock:  # one predictor in memory (the window's try-it), loaded once
        cached = _predictors.get(key)
        if cached is None:
            record, task, ctx, _ = _load_trained(rd, device)
            cached = (task, task.load_predictor(rd.model_dir, ctx.device), threading.Lock())
            _predictors.clear()
            _predictors[key] = cached
    task, predictor, lock = cached
    items = task.expand_inputs(list(inputs))
    if not items:
        raise UsageError("nothing to predict: no inputs")
    with lock:
        results = predictor(items, int(top_k))
    out: list[dict[str, Any]] = []
    for item, preds in zip(items, results):
        if isinstance(preds, Exception):  # this input only (an unreadable file); see Task.load_predictor
            out.append({"input": item, "predictions": [], "error": str(preds)})
        else:
            out.append({"input": item, "predictions": [{"label": label, "probability": float(p)} for label, p in preds]})
    return out

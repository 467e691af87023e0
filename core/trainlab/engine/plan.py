"""Planning a run: everything decided before anything is written.

``plan_run`` resolves the parameters once (the contract's precedence), checks
the request, instantiates and prepares the task (or takes over a
``PreparedTask``), and computes the run folder, the initial record, the
schedule and the total number of steps, from the task's own batch order.  It
creates no folder and writes no file: ``execute`` does, and a dry run is a
plan that is only described (``RunPlan.to_json``).
"""

from __future__ import annotations

import copy
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from trainlab.api.errors import UsageError
from trainlab.api.events import Log
from trainlab.api.finetune import check_quantized_training
from trainlab.api.params import ENGINE_PARAMS, EngineParams, RunParams, resolve
from trainlab.api.taskbase import DataSummary, RunContext, Task
from trainlab.engine import distributed
from trainlab.engine.context import RandomState, make_context
from trainlab.engine.experiment_logs import check_report_to
from trainlab.engine.memory import apply_micro_batch, parse_micro_batch_size
from trainlab.engine.plugin_calls import plugin_calls
from trainlab.engine.position import LoopPosition
from trainlab.engine.prepare import PreparedTask, prepare, resolved_path
from trainlab.engine.recorder import data_fingerprint
from trainlab.engine.schedule import Segment, make_segment
from trainlab.engine.strategy import sharding_problem
from trainlab.engine.torchrun import effective_batch
from trainlab.pluginhost.host import registry
from trainlab.runfolder.index import RUN_SCHEMA_VERSION, RunDir, new_run_id
from trainlab.runfolder.records import RunFileError
from trainlab.runfolder.status import RunStatus
from trainlab.system import paths
from trainlab.system.fileio import folder_write_problem
from trainlab.engine.checkpoint import DamagedCheckpoint, checkpoint_position, verify_checkpoint


@dataclass
class RunRequest:
    task: str = ""
    data: str = ""
    params: dict[str, Any] = field(default_factory=dict)  # explicit --set / flags
    out: str | None = None
    resume: str | None = None
    remembered: dict[str, Any] = field(default_factory=dict)
    more_epochs: int = 0
    dry_run: bool = False  # train --dry-run: planned for its estimate only (ctx.purpose "dry-run")

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ResumeSource:
    """Where a resumed run continues from.

    ``kind``: ``"last"`` (the last checkpoint: weights, optimizer, schedule
    and random states, so the run ends as an uninterrupted one would),
    ``"best"`` (the best checkpoint, when the last one is damaged: its
    weights and loop position, the optimizer's state started afresh) or
    ``"start"`` (nothing was saved yet: step 0, in the same folder).
    ``note`` is what the run says about it, ``level`` how loudly.
    """

    kind: str
    path: Path | None = None
    note: str = ""
    level: str = "info"

    @property
    def full(self) -> bool:
        return self.kind == "last"


@dataclass
class RunPlan:
    """A run ready to execute: resolved, prepared and counted, nothing written yet.

    A plan is executed once (the run takes its task over).  ``early_events``
    are the log lines said while planning; ``execute`` writes them to
    metrics.jsonl once the folder exists.
    """

    request: RunRequest
    task_id: str
    plugin: dict[str, Any]
    params: RunParams  # every value (what the task and callbacks read); the engine reads ``engine``
    task: Task
    ctx: RunContext
    summary: DataSummary
    data: str  # absolute path
    fingerprint: dict[str, Any]
    run_dir: RunDir
    record: dict[str, Any]  # run.json as the run starts (a resumed run's own, with its new segment)
    resumed: bool
    position: LoopPosition  # where the loop starts
    segments: list[Segment]
    steps_per_epoch: int
    total_steps: int
    random_state: RandomState | None = field(default=None, repr=False)
    early_events: list[Log] = field(default_factory=list)
    reused_preparation: bool = False
    mp_context: str | None = None
    resume_from: ResumeSource | None = None  # a resumed run's checkpoint (or its restart from step 0)
    memory: Any = None  # a trainlab.engine.memory.MemoryEstimate when one was made (micro_batch_size=auto)

    @property
    def engine(self) -> EngineParams:
        """The engine's parameters, typed."""
        return self.params.engine

    @property
    def epochs(self) -> int:
        return self.position.epochs_total

    def to_json(self) -> dict[str, Any]:
        """What the run will be, as plain values (``train --dry-run``)."""
        return {
            "task": self.task_id,
            "plugin": dict(self.plugin),
            "run_dir": str(self.run_dir.path),
            "resumed": self.resumed,
            "parameters": dict(self.params),
            "data": {"path": self.data, "fingerprint": dict(self.fingerprint)},
            "label_names": list(self.task.label_names),
            "data_summary": self.summary.to_json(),
            "device": str(self.ctx.device),
            "precision": self.ctx.precision,
            "steps_per_epoch": self.steps_per_epoch,
            "total_steps": self.total_steps,
            "epochs": self.epochs,
            "start_step": self.position.step,
            "resume_from": self.resume_from.kind if self.resume_from else None,
            "effective_batch": effective_batch(self.engine.batch_size, self.record.get("world_size", 1), self.engine.grad_accum),
            "world_size": int(self.record.get("world_size", 1)),
            "micro_batch": max(1, -(-self.engine.batch_size // max(1, self.position.micro_splits))),
            "reused_preparation": self.reused_preparation,
        }


def plan_run(
    request: RunRequest,
    *,
    prepared: PreparedTask | None = None,
    log: Callable[[Log], None] | None = None,
    mp_context: str | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> RunPlan:
    """Resolve, check and prepare ``request``; UsageError for bad input.

    ``prepared`` (from ``prepare_task``) is taken over when it still fits the
    request, else the task is prepared again.  ``log`` sees each log line as
    it is said (the task's data summary, warnings).  ``should_stop`` is what
    a long preparation asks (``RunContext.should_stop``); it raises
    ``StopRequested`` when that says yes.
    """
    said = _Said(log)
    target = _resolve_target(request)
    run_id, run_dir = _run_folder(request, target)
    if target.source is not None and target.source.note:
        said(target.source.note, target.source.level)
    ctx = _run_context(target, said, mp_context, should_stop, dry_run=request.dry_run)
    engine = target.params.engine
    problem = sharding_problem(sharding=engine.sharding, world_size=distributed.world_size(), finetune=str(target.params.get("finetune", "full")),
                               precision=ctx.precision, cuda=ctx.is_cuda, micro_batch_size=engine.micro_batch_size)  # fmt: skip
    if problem:
        raise UsageError(problem)
    prepared, reused = _preparation(target, prepared, ctx, said)
    record = _starting_record(target, run_id, prepared, said)
    steps_per_epoch = _steps_per_epoch(prepared.task, target, record, said)
    position, segments = _starting_position(target, record, steps_per_epoch, request.more_epochs)
    if target.source is None and position.epochs_total > engine.epochs:
        said(f"{position.epochs_total} epochs instead of {engine.epochs}: min_steps={engine.min_steps} at {steps_per_epoch} steps an epoch")
    plan = RunPlan(
        request=request,
        task_id=target.task_id,
        plugin=dict(record.get("plugin") or {}),
        params=target.params,
        task=prepared.task,
        ctx=ctx,
        summary=prepared.summary,
        data=resolved_path(target.data),
        fingerprint=prepared.fingerprint,
        run_dir=run_dir,
        record=record,
        resumed=target.prior is not None,
        resume_from=target.source,
        position=position,
        segments=segments,
        steps_per_epoch=steps_per_epoch,
        total_steps=steps_per_epoch * position.epochs_total,
        random_state=prepared.random_state,
        early_events=said.events,
        reused_preparation=reused,
        mp_context=mp_context,
    )
    plan.memory = apply_micro_batch(plan)  # micro_batch_size: N, or auto from the memory estimate
    if plan.memory is not None:
        said(f"memory estimate: {plan.memory.summary_line()} at micro-batches of {plan.memory.micro_batch}")
    return plan


class _Said:
    """The log lines said while planning: kept for metrics.jsonl, and passed on as said."""

    def __init__(self, log: Callable[[Log], None] | None):
        self.events: list[Log] = []
        self._log = log

    def __call__(self, message: str, level: str = "info") -> None:
        event = Log(level=level, message=str(message))
        self.events.append(event)
        if self._log is not None:
            self._log(event)


@dataclass
class _Target:
    """What a request trains: the task, the data, the parameters resolved, the run resumed (if any)."""

    task_id: str
    data: str
    entry: Any
    params: RunParams
    prior_dir: RunDir | None = None
    prior: dict[str, Any] | None = None
    source: ResumeSource | None = None


def _resolve_target(request: RunRequest) -> _Target:
    """The task, data and parameters of ``request`` (a resumed run's own); UsageError for what is missing."""
    prior_dir, prior, source = _resume_target(request)
    task_id = prior["task"] if prior else request.task
    if not task_id:
        raise UsageError("which task? give TASK (see `trainlab tasks`)")
    data = request.data or (str(prior["data"].get("path") or "") if prior else "")
    if not data:
        raise UsageError("--data PATH is required")
    entry = registry().task(task_id)
    if prior:
        # a resumed run keeps its parameters (those it predates as runs then behaved: Param.before), but may
        # move to another device, or report elsewhere
        moved = {key: request.params[key] for key in ("device", "precision", "report_to", "log_model") if key in request.params}
        params = resolve(entry.spec, ENGINE_PARAMS, {}, moved, recorded=prior["parameters"])
    else:
        params = resolve(entry.spec, ENGINE_PARAMS, request.remembered, request.params)
        problem = _preset_of_other_tasks(entry.spec, params.get("model"))
        if problem:
            raise UsageError(problem)
    if not Path(data).exists():
        raise UsageError(f"--data {data}: no such file or folder")
    if 0 < params.engine.telemetry_every < 0.5:
        raise UsageError("bad value for parameter telemetry_every: must be 0 (off) or at least 0.5 seconds")
    check_report_to(params)  # the extras installed, the MLflow store local: before the data is read
    return _Target(task_id, str(data), entry, params, prior_dir, prior, source)


def _preset_of_other_tasks(spec, model: Any) -> str:
    """Why ``model`` names another task's preset, not one of this task's ("" when it does not).

    Said before the task looks the name up as a model to download, which
    would send an image preset's user to a text model hub.
    """
    if not isinstance(model, str) or not model or any(p.name == model for p in spec.presets):
        return ""
    if "/" in model or os.sep in model or Path(model).expanduser().exists():
        return ""
    others = [(task_id, entry.spec) for task_id, entry in sorted(registry().tasks.items()) if task_id != spec.id]
    owners = [(task_id, other) for task_id, other in others if any(p.name == model for p in other.presets)]
    if not owners:
        return ""
    kinds = sorted({other.input.kind for _, other in owners if other.input.kind})
    kind = f"an {kinds[0]} preset" if len(kinds) == 1 and kinds[0][:1] in "aeiou" else f"a {'/'.join(kinds)} preset" if kinds else "a preset"
    own = ", ".join(p.name for p in spec.presets) or "none"
    return (
        f"--model {model}: {model} is {kind} (of {', '.join(task_id for task_id, _ in owners)}), not a model for {spec.id}; "
        f"{spec.id}'s presets: {own} (or a model folder, or a model `trainlab models` lists for it)"
    )


def _run_folder(request: RunRequest, target: _Target) -> tuple[str, RunDir]:
    """(run id, folder) the run is written to, checked before the data scan (which can take minutes)."""
    if target.prior_dir is not None:
        assert target.prior is not None
        _check_writable(target.prior_dir.path, f"--resume {target.prior_dir.path}: cannot write", "")
        return str(target.prior.get("id") or target.prior_dir.path.name), target.prior_dir
    run_id = new_run_id(target.task_id)
    run_dir = RunDir(request.out) if request.out else RunDir(paths.runs_dir() / run_id)
    if run_dir.exists():
        raise UsageError(f"--out {run_dir.path}: already holds a run (run.json); use --resume or another folder")
    if request.out:
        _check_writable(run_dir.path, f"--out {request.out}: cannot create", "")
    else:
        _check_writable(run_dir.path, f"run folder {run_dir.path}: cannot create", "; set TRAINLAB_HOME to a writable folder or use --out")
    return run_id, run_dir


def _run_context(target: _Target, say: _Said, mp_context: str | None, should_stop: Callable[[], bool] | None, *, dry_run: bool = False) -> RunContext:
    """The task's view of the run (device and precision resolved); UsageError for what this machine lacks."""
    ctx = make_context(target.params, None, say, mp_context)
    parse_micro_batch_size(target.params.engine.micro_batch_size)
    if target.params.engine.optimizer == "adamw8bit":
        check_quantized_training("optimizer=adamw8bit", ctx.device)
    ctx.purpose = "resume" if target.prior else "dry-run" if dry_run else "train"
    if should_stop is not None:
        ctx.should_stop = should_stop
    return ctx


def _preparation(target: _Target, prepared: PreparedTask | None, ctx: RunContext, say: _Said) -> tuple[PreparedTask, bool]:
    """The data check's preparation when it still fits, else a new one; (preparation, reused)."""
    label_names = target.prior["label_names"] if target.prior else None
    reused = False
    if prepared is not None:
        fingerprint = data_fingerprint(target.data)
        why = prepared.mismatch(
            task_id=target.task_id, data=target.data, fingerprint=fingerprint, params=target.params, purpose=ctx.purpose,
            label_names=label_names,
        )
        reused = not why
        if reused:
            say.events.extend(prepared.logs)
            say(f"using the data check's preparation of {prepared.data}", "debug")
        else:
            say(f"preparing the data again: {why}", "debug")
    if prepared is None or not reused:
        prepared = prepare(target.task_id, target.data, target.params, ctx, label_names=label_names)
    prepared.take()
    for warning in prepared.summary.warnings:
        say(warning, "warning")
    return prepared, reused


def _starting_record(target: _Target, run_id: str, prepared: PreparedTask, say: _Said) -> dict[str, Any]:
    """run.json as the run starts: a resumed run's own, else a new record."""
    fingerprint = prepared.fingerprint
    if target.prior is not None:
        record = copy.deepcopy(target.prior)
        if record.get("data", {}).get("fingerprint", {}).get("sha256") not in (None, fingerprint["sha256"]):
            say(f"the data at {target.data} changed since the run started; continuing on the new contents", "warning")
        return record
    plugin = target.entry.plugin
    return {
        "schema_version": RUN_SCHEMA_VERSION,
        "id": run_id,
        "name": "",
        "task": target.task_id,
        "plugin": {"name": plugin.name, "version": plugin.version, "distribution": plugin.distribution},
        "parameters": dict(target.params),
        "data": {"path": resolved_path(target.data), "fingerprint": fingerprint},
        "label_names": list(prepared.task.label_names),
        "data_summary": prepared.summary.to_json(),
        "status": "running",
        "error": "",
        "timings": {},
        "environment": {},
        "world_size": 1,
    }


def _steps_per_epoch(task: Task, target: _Target, record: dict[str, Any], say: _Said) -> int:
    """Optimizer steps per epoch, counted once from the batches the task will give the loop (in a
    group of processes, the group's batches: batch_size per rank); the group's size into ``record``."""
    engine = target.params.engine
    group = distributed.current()
    world = group.world_size if group is not None else 1
    with plugin_calls(task).call("batch_order"):
        batches = len(task.batch_order("train", 1, engine.batch_size * world, engine.seed))
    if group is not None:
        before = record.get("world_size", 1)
        record.update(group.record())
        if target.prior_dir is not None and before != world:
            say(f"resuming at world size {world} (the run had {before}): weights, optimizer and position carry over; "
                "the batch order and random streams differ from an uninterrupted run", "warning")  # fmt: skip
    record["effective_batch"] = effective_batch(engine.batch_size, world, engine.grad_accum)
    return -(-batches // engine.grad_accum)


def _starting_position(target: _Target, record: dict[str, Any], steps_per_epoch: int, more_epochs: int) -> tuple[LoopPosition, list[Segment]]:
    """Where the loop starts and the schedule's segments: a checkpoint's (plus ``more_epochs``), or step 0."""
    source, engine = target.source, target.params.engine
    if source is not None and source.kind != "start":
        position, segments = _resume_position(source, record, steps_per_epoch, more_epochs, engine)
        if more_epochs:
            record.setdefault("segments", []).append(segments[-1].to_json())
    else:
        if source is not None:  # restarting from step 0: what the attempt before said no longer holds
            for key in ("best", "progress", "metrics"):
                record.pop(key, None)
        epochs = max(engine.epochs, -(-engine.min_steps // max(1, steps_per_epoch)))  # min_steps: more epochs on small data
        segments = [make_segment(0, steps_per_epoch * epochs, engine.schedule, engine.warmup_ratio)]
        position = LoopPosition(epochs_total=epochs)
        record["segments"] = [s.to_json() for s in segments]
    position.segments = [s.to_json() for s in segments]
    return position, segments


def _resume_target(request: RunRequest) -> tuple[RunDir | None, dict[str, Any] | None, ResumeSource | None]:
    """The run folder and record a resume continues, and from where; UsageError when it cannot be resumed."""
    if not request.resume:
        return None, None, None
    prior_dir = RunDir(request.resume)
    prior = prior_dir.read()
    for key, kind in (("task", str), ("parameters", dict), ("data", dict), ("label_names", list)):
        if not isinstance(prior.get(key), kind):
            raise RunFileError(prior_dir.run_json, f"has no usable {key!r}; the run cannot be resumed")
    if request.task and request.task != prior["task"]:
        raise UsageError(f"--resume {prior_dir.path}: that run is {prior['task']}, not {request.task}")
    completed = prior.get("status") == RunStatus.COMPLETED
    if completed and not request.more_epochs:
        raise UsageError(f"--resume {prior_dir.path}: the run is already completed; use --more-epochs N to train further")
    if prior.get("status") == RunStatus.RUNNING and _alive_elsewhere(prior):
        raise UsageError(f"--resume {prior_dir.path}: the run is still running in process {prior.get('pid')}")
    return prior_dir, prior, _resume_source(prior_dir, completed)


def _resume_source(prior_dir: RunDir, completed: bool) -> ResumeSource:
    """The checkpoint to continue from, verified before anything is prepared or written.

    A damaged ``last`` falls back to ``best`` (said as a warning); a run
    that never wrote a checkpoint restarts from step 0.  A completed run
    (``--more-epochs``) continues only from its ``last``: its best weights
    lie before steps that its schedule has already spent.
    """

    last, best = prior_dir.last_checkpoint, prior_dir.best_checkpoint
    if last.exists():
        try:
            verify_checkpoint(last)
            return ResumeSource("last", last)
        except DamagedCheckpoint as exc:
            damage = str(exc)
    elif completed:
        raise UsageError(f"--resume {prior_dir.path}: no checkpoint to continue from ({last} is missing)")
    else:
        return ResumeSource("start", None, "no checkpoint was written before the run stopped: restarting it from step 0 in the same folder")
    if completed:
        raise UsageError(f"{damage}; the run cannot be trained further from it")
    if not best.exists():
        raise UsageError(f"{damage}; no other checkpoint to resume from (move it aside to restart the run from step 0)")
    try:
        position = checkpoint_position(best)
    except DamagedCheckpoint as exc:
        raise UsageError(f"{damage}; the best checkpoint is unusable too ({exc}); move them aside to restart the run from step 0") from None
    return ResumeSource(
        "best",
        best,
        f"{damage}; continuing from the best checkpoint instead (step {position.get('step')}, "
        f"after epoch {position.get('best_epoch') or int(position.get('epoch', 1)) - 1}): its weights, with the optimizer's "
        "state started afresh, so the result will differ from an uninterrupted run's",
        "warning",
    )


def _resume_position(source: ResumeSource, record: dict[str, Any], steps_per_epoch: int, more_epochs: int, engine: EngineParams):
    """(position, segments) saved in the checkpoint, plus a segment for ``more_epochs``."""

    assert source.path is not None
    position = LoopPosition(**checkpoint_position(source.path, verify=False))  # verified in _resume_source
    segments = [Segment(**s) for s in position.segments]
    if not source.full and record.get("segments"):
        # best is from before the last checkpoint: the run's plan is the record's
        segments = [Segment(**s) for s in record["segments"]]
        end = max(s.start_step + s.steps for s in segments)
        position.epochs_total = max(position.epochs_total, -(-end // max(1, steps_per_epoch)))
    if more_epochs:
        segments.append(make_segment(position.step, steps_per_epoch * more_epochs, engine.schedule, engine.warmup_ratio))
        position.epochs_total += more_epochs
    return position, segments


def _check_writable(folder: Path, what: str, advice: str) -> None:
    problem = folder_write_problem(folder)
    if problem:
        raise UsageError(f"{what} ({problem}){advice}")


def _alive_elsewhere(record: dict[str, Any]) -> bool:
    pid = record.get("pid")
    if not pid or pid == os.getpid() or record.get("environment", {}).get("hostname") != socket.gethostname():
        return False
    try:
        import psutil

        return psutil.pid_exists(int(pid))
    except Exception:  # noqa: BLE001
        return False

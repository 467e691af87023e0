"""Executing a planned run: the run folder, the callbacks, the loop, the end.

``execute`` creates the run folder (a new run), writes what was said while
planning into metrics.jsonl, builds the model, trains through ``Trainer``,
evaluates and exports on completion, and returns the ``RunOutcome`` built
from the run's ``Finished`` event.  A failure once the run has begun, bad
input found late and a full disk included, is an outcome
(``status="failed"``), recorded in run.json (or, when run.json itself cannot
be written, said on stderr and kept in the index and the outcome);
``execute`` raises only for a run that cannot begin (a folder that cannot be
made: UsageError; a run.json that cannot be written: RunFailed) and for
KeyboardInterrupt (a second Ctrl-C), after recording it.

Before the first epoch's work the disk is checked for the space the run's
checkpoints and export will take (``checkpoint.run_space_needed``), and
before the export for the export's, so that a full disk ends a run early
with a reason rather than half-way through writing a file.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from pathlib import Path
from typing import Any, Iterable

from trainlab.api.callbacks import Callback, CallbackList, IsolatedCallback, RunControl, RunState
from trainlab.api.errors import RunFailed, UsageError
from trainlab.api.events import Finished, Log, Progress, Started
from trainlab.engine import distributed
from trainlab.engine.checkpoint import checkpoint_step, require_free_space, run_space_needed, tensor_bytes
from trainlab.engine.context import class_weights
from trainlab.engine.experiment_logs import experiment_loggers
from trainlab.engine.fitted import save_fitted_state
from trainlab.engine.gpu_leases import hold_device_lease
from trainlab.engine.outcome import EvaluationStopped, RunOutcome
from trainlab.engine.plan import RunPlan
from trainlab.engine.plugin_calls import attributed, plugin_calls
from trainlab.engine.recorder import MetricsFileCallback, RunRecorder, open_store
from trainlab.pluginhost.host import registry
from trainlab.runfolder.index import RunDir, RunStore
from trainlab.runfolder.status import RunStatus
from trainlab.system.fileio import (
    atomic_write_folder,
    atomic_write_json,
    disk_full_message,
    folder_write_problem,
    is_disk_full,
    is_out_of_room,
    newest_file,
    out_of_room_line,
    remove_stale_temporaries,
)
from trainlab.system.signals import signals_deferred
from trainlab.system import paths
from trainlab.telemetry import TelemetryCallback


def execute(
    plan: RunPlan,
    *,
    callbacks: Iterable[Callback] = (),
    control: RunControl | None = None,
    store: RunStore | None = None,
) -> RunOutcome:
    """Run ``plan`` to its end; the outcome says how it ended.

    ``callbacks`` see the run from its folder's creation on; what was said
    while planning reaches them only through ``plan_run``'s ``log``.
    """
    paths.keep_library_caches_here()
    callbacks = [hold_device_lease(plan.ctx.device), *callbacks]  # the GPU's machine-wide lease, held until the run ends
    control = control or RunControl()
    run_dir = plan.run_dir
    group = distributed.current()
    writer = group is None or group.writer  # in a group, rank 0 alone writes the folder and the index
    state: RunState | None = None

    def warn(message: str) -> None:
        assert state is not None
        state.emit(Log(step=state.step, epoch=state.epoch, level="warning", message=message))

    # report_to's copies of the run (rank 0's): a store that cannot be opened stops the run before its folder is made
    loggers = experiment_loggers(run_dir.path, plan.params, task_id=plan.task_id, record=plan.record, resumed=plan.resumed,
                                 step=plan.position.step, warn=warn) if writer else []  # fmt: skip
    if not plan.resumed and writer:
        if run_dir.exists():  # made since the plan was (two runs given one --out)
            raise UsageError(f"--out {run_dir.path}: already holds a run (run.json); use --resume or another folder")
        try:
            run_dir.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            reason = folder_write_problem(run_dir.path) or exc.strerror or str(exc)
            raise UsageError(f"--out {run_dir.path}: cannot create ({reason})") from None
    elif writer:
        remove_stale_temporaries(run_dir.path)  # a killed write's leftovers: the folder is this run's alone now
    recorder_type = RunRecorder if writer else distributed.SilentRecorder
    if not writer:
        store = None  # the index is rank 0's too
    elif store is None:
        store = open_store()
    recorder = recorder_type(run_dir, plan.record, store)
    engine_callbacks: list[Callback] = [recorder]
    if writer:
        try:
            metrics_file = MetricsFileCallback(run_dir)
        except OSError as exc:
            raise RunFailed(_write_failure(exc, run_dir.path, f"opening {run_dir.metrics_jsonl}")) from None
        # in a group, rank 0's samples carry every rank's figures (RankGroup.gather_telemetry)
        ranks = (lambda: group.telemetry_records) if group is not None else None
        engine_callbacks = [metrics_file, recorder, TelemetryCallback(plan.engine.telemetry_every, ranks=ranks), *loggers]
    engine_callbacks += [
        IsolatedCallback(cb, owner=name, log=warn) for name, cb in registry().run_callbacks_by_plugin(plan.task_id, plan.params)
    ]
    cblist = CallbackList([*engine_callbacks, *callbacks])
    state = RunState(task_id=plan.task_id, params=plan.params, run_dir=run_dir.path, control=control, emit_to=cblist.emit)
    ctx = plan.ctx
    ctx.run_dir = run_dir.path
    ctx.log = lambda message: state.emit(Log(step=state.step, epoch=state.epoch, message=str(message)))
    ctx.should_stop = lambda: control.stop_requested
    try:
        recorder.begin(resumed=plan.resumed)
    except OSError as exc:
        metrics_file.writer.close()
        raise RunFailed(_write_failure(exc, run_dir.path, f"writing {run_dir.run_json}")) from None
    said_while_planning = CallbackList(engine_callbacks)
    with contextlib.suppress(OSError):  # a full disk: the run's first write in the loop fails it, recorded
        for event in plan.early_events:
            said_while_planning.emit(event)
    return _train(plan, state, cblist, recorder)


def _train(plan: RunPlan, state: RunState, cblist: CallbackList, recorder: RunRecorder) -> RunOutcome:
    from trainlab.engine.loop import StopRun, Trainer

    task, ctx, control = plan.task, plan.ctx, state.control
    position = plan.position.copy()
    status, error, tb, usage_error = RunStatus.FAILED, "", "", False
    calls, failure = plugin_calls(task), None
    trainer: Trainer | None = None
    interrupt: BaseException | None = None
    session_seconds = 0.0
    try:
        if distributed.current() is not None:  # once rank 0 has written run.json
            distributed.current().barrier()
            distributed.current().check_everywhere(distributed.folder_problem(plan.run_dir))
        if plan.random_state is not None:
            plan.random_state.restore()  # as preparation left them, however long ago that was
        if plan.engine.class_weighting:
            ctx.class_weights = class_weights(task, ctx)
        model = task.prepare_model(task.build_model(ctx), ctx)
        trainer = Trainer(
            task, model, ctx, state, cblist, position=position, segments=list(plan.segments), total_steps=plan.total_steps,
            plugin=str(plan.plugin.get("name") or ""),
        )
        source = plan.resume_from
        if source is not None and source.path is not None:
            trainer.restore(source.path, full=source.full)
        _check_space_for_the_run(plan, trainer)
        state.best_metric, state.best_step = position.best_metric, position.best_step
        state.step, state.samples_seen = position.step, position.samples_seen
        state.total_steps, state.epochs = plan.total_steps, position.epochs_total
        state.emit(
            Started(
                step=position.step,
                epoch=position.epoch,
                run_dir=str(plan.run_dir.path),
                task=plan.task_id,
                total_steps=plan.total_steps,
                epochs=position.epochs_total,
                device=str(ctx.device),
                precision=ctx.precision,
                resumed=plan.resumed,
            )
        )
        if distributed.current() is not None:  # every rank: the first sample then already holds them all
            distributed.current().start_telemetry(plan.engine.telemetry_every)
        cblist.call("on_run_start", state)
        started = time.perf_counter()
        try:
            trainer.fit()
            # trainer.control: in a group, the stop the ranks agreed on (every rank ends the same way)
            status = RunStatus.CANCELLED if trainer.control.stop_requested and not trainer.early_stopped else RunStatus.COMPLETED
        except StopRun:
            status = RunStatus.CANCELLED
        wall = time.perf_counter() - started
        session_seconds = trainer.train_seconds or wall
        recorder.add_train_seconds(wall)
        if status == RunStatus.COMPLETED:
            try:
                _finish_completed(plan, trainer, state)
            except EvaluationStopped:  # the last checkpoint holds every step: --resume evaluates and exports
                status, error = RunStatus.CANCELLED, FINAL_EVALUATION_STOPPED
        elif status == RunStatus.CANCELLED:
            error = control.stop_reason or "stopped"
    except (KeyboardInterrupt, SystemExit) as exc:
        status, error = RunStatus.CANCELLED, _abort_error(plan, position)
        interrupt = exc
        raise
    except BaseException as exc:  # noqa: BLE001 - reported in run.json and the Finished event
        exc, failure = attributed(calls, exc)  # the plugin and its method, when the task's code raised it
        status = RunStatus.FAILED
        if is_out_of_room(exc) and not isinstance(exc, RunFailed):
            error = _write_failure(exc, plan.run_dir.path, "")
        else:
            error = str(exc) if isinstance(exc, (RunFailed, UsageError)) else f"{type(exc).__name__}: {exc}"
        tb = traceback.format_exc()
        usage_error = isinstance(exc, UsageError)  # bad input found once the run had begun: still exit 2
        cblist.call("on_exception", state, exc)
    finally:
        # A second Ctrl-C in here would leave run.json saying "running": the
        # end is written first, and a signal that came meanwhile acts after.
        # The outcome rides on the KeyboardInterrupt of an abort, so that the
        # CLI still prints the whole object (run_dir, status, steps).
        outcome = None
        try:
            with signals_deferred():
                if trainer is not None:
                    trainer.close()
                outcome = _finish(plan, state, cblist, recorder, trainer, position, session_seconds, status, error, tb, usage_error, failure)
        except KeyboardInterrupt as late:  # the second Ctrl-C, held while the end was written
            late.outcome = outcome  # type: ignore[attr-defined]
            raise
        if interrupt is not None:
            interrupt.outcome = outcome  # type: ignore[attr-defined]
    return outcome


FINAL_EVALUATION_STOPPED = "stopped during the final evaluation: --resume runs it and the export"


def _abort_error(plan: RunPlan, position: Any) -> str:
    """What run.json says of a run aborted (a second Ctrl-C) between checkpoints, and what --resume will do."""
    saved = checkpoint_step(plan.run_dir.last_checkpoint)
    if saved is None:
        return "aborted before a checkpoint was written: --resume restarts the run from step 0"
    if saved < position.step:
        return f"aborted before the checkpoint of step {position.step} was written: --resume continues from the last one (step {saved})"
    return f"aborted after the checkpoint of step {saved}: --resume continues from it"


def _write_failure(exc: BaseException, folder: Path, what: str) -> str:
    """One line for a file the run could not write: a full disk names the folder and its free space."""
    filename = getattr(exc, "filename", None)
    if not what:
        line = out_of_room_line(exc, folder)
        if line is not None:
            return line
    what = what or (f"writing {Path(filename).name}" if filename else "")
    if is_disk_full(exc):
        return disk_full_message(folder, what)
    reason = getattr(exc, "strerror", None) or str(exc)
    return f"{what or 'writing the run folder'} failed: {reason}"


def _check_space_for_the_run(plan: RunPlan, trainer: Any) -> None:
    """Fail before the first epoch's work when the checkpoints and export cannot fit."""
    run_dir = plan.run_dir
    kept = {}
    for path in (run_dir.last_checkpoint, run_dir.best_checkpoint):
        with contextlib.suppress(OSError):
            kept[path.name] = path.stat().st_size
    need = run_space_needed(trainer.model, trainer.optimizer, kept)
    require_free_space(run_dir.path, need, "for this run's checkpoints and model")


def _finish_completed(plan: RunPlan, trainer: Any, state: RunState) -> None:
    """Final evaluation (eval.json), the exported model, checkpoint retention."""
    task, ctx, run_dir, params = plan.task, plan.ctx, plan.run_dir, plan.engine
    weights = "last"
    if params.final_weights == "best" and trainer.load_best_weights():
        weights = "best"
    state.emit(Progress(step=state.step, epoch=state.epoch, total_steps=state.total_steps, phase="eval"))
    # A stop (Ctrl-C, SIGTERM, the window's) now ends the run cancelled, its
    # last checkpoint holding every step; in a group the ranks evaluate
    # together, so there the evaluation is finished first.
    alone = distributed.current() is None
    # (early stopping asks for a stop too: the run has then completed)
    stop = (lambda: state.control.stop_requested and not trainer.early_stopped) if alone else None
    if alone:
        state.emit(Log(step=state.step, epoch=state.epoch, level="info", message="final evaluation (a stop now cancels the run; --resume runs it)"))
    if stop is not None and stop():
        raise EvaluationStopped()
    report: dict[str, Any] = {}
    if "val" in task.splits():
        accumulator = trainer.evaluator.accumulate("val", stop=stop)
        task.calibrate("val", accumulator)  # post-hoc fitting (multi-label thresholds), before the report
        report = accumulator.compute()
        report["split"] = "val"
    if "test" in task.splits():
        if stop is not None and stop():
            raise EvaluationStopped()
        report["test"] = trainer.evaluate("test")
        report["test"]["split"] = "test"
    if stop is not None and stop():  # before anything of the end is written
        raise EvaluationStopped()
    report["weights"] = weights
    report["step"] = state.step
    group = distributed.current()
    if group is not None and not group.writer:  # the evaluation above was collective; the writing is rank 0's
        state.metrics = headline_metrics(report)
        return
    atomic_write_json(run_dir.eval_json, report)
    state.metrics = headline_metrics(report)
    if "test" in report:
        state.metrics["test"] = headline_metrics(report["test"])
    state.emit(Progress(step=state.step, epoch=state.epoch, total_steps=state.total_steps, phase="save"))
    _export_model(task, trainer.model, run_dir, ctx)
    save_fitted_state(task, run_dir.path)
    keep = params.keep_checkpoints
    if keep in ("last", "none"):
        run_dir.best_checkpoint.unlink(missing_ok=True)
    if keep in ("best", "none"):
        run_dir.last_checkpoint.unlink(missing_ok=True)


def _export_model(task: Any, model: Any, run_dir: RunDir, ctx: Any) -> None:
    """The task's export (and its fitted state) into ``model/``, complete or not at all.

    The plugin writes into a new folder beside ``model/``, which is renamed into
    place once written and fsynced: a kill or a failure leaves the previous
    ``model/`` (or none), never a half-written one, and the folder it leaves is
    removed when the run resumes (``remove_stale_temporaries``).
    """
    model_dir = run_dir.model_dir
    in_plugin = False

    def write(folder: Path) -> None:
        nonlocal in_plugin
        # safetensors, torch.export and ONNX: up to three copies of the weights.
        # Checked first, because a writer that fails half-way may not fail cleanly.
        require_free_space(folder, 3 * tensor_bytes(model), "to export the model", shown=model_dir)
        began = time.time() - 1
        try:
            task.save_model(model, folder, ctx)
        except Exception as exc:
            # The disk filled, or a file-size limit was met, in the plugin's writer: a
            # native one (safetensors) names no file, the one it left last does.
            line = out_of_room_line(exc, run_dir.path, newest_file(folder, since=began))
            if line is None:
                in_plugin = True
                raise
            raise RunFailed(line.replace(folder.name, model_dir.name)) from exc
        save_fitted_state(task, folder)

    try:
        atomic_write_folder(model_dir, write)
    except OSError as exc:
        if in_plugin:
            raise
        # the folder's own writes (making it, the fitted state, the fsyncs, the renames):
        # named as model/, the temporary's name means nothing to the user
        raise RunFailed(_write_failure(exc, run_dir.path, f"writing {model_dir}")) from exc


def _finish(
    plan: RunPlan,
    state: RunState,
    cblist: CallbackList,
    recorder: RunRecorder,
    trainer: Any,
    position: Any,
    session_seconds: float,
    status: str,
    error: str,
    tb: str,
    usage_error: bool,
    failure: dict[str, Any] | None = None,
) -> RunOutcome:
    """run.json's end, the Finished event, ``on_run_end``; the outcome from that event."""
    epochs_done = position.epoch - 1
    steps = position.step
    # this session's samples over this session's time in training passes
    samples = state.samples_seen - plan.position.samples_seen
    rate = samples / session_seconds if session_seconds else 0.0
    skipped = trainer.task.skipped_during_training() if trainer is not None else None
    # what a killed write left, and what a failed one could not remove; rank 0's
    # alone in a group (another rank ending first would take its writes away)
    group = distributed.current()
    if group is None or group.writer:
        remove_stale_temporaries(plan.run_dir.path)
    best = recorder.finish(
        state, status=status, error=error, traceback=tb, epochs=epochs_done, steps=steps, samples_per_second=rate, skipped=skipped,
        failure=failure,
    )
    error = recorder.error  # with a note when run.json itself could not be written
    state.status, state.error = status, error
    finished = Finished(
        step=steps,
        epoch=epochs_done,
        status=status,
        error=error,
        traceback=tb,
        metrics=dict(state.metrics),
        epochs=epochs_done,
        samples_per_second=rate,
        run_dir=str(plan.run_dir.path),
        task=plan.task_id,
        best=best,
        usage_error=usage_error,
        failure=failure or {},
    )
    state.emit(finished)
    cblist.call("on_run_end", state)
    return RunOutcome.from_finished(finished)


def headline_metrics(report: dict[str, Any]) -> dict[str, Any]:
    """What ``train --json``, ``run.json`` and the Finished event carry of an
    evaluation: the task's declared metrics and the loss (and top-5 accuracy,
    which classification reports beside them, as before plugin API 2); no ``loss`` when the
    evaluation measured none (object detection)."""
    metrics = {k: v for k, v in report.get("metrics", {}).items()}
    if "top5_accuracy" in report:
        metrics["top5_accuracy"] = report["top5_accuracy"]
    if report.get("loss") is not None:
        metrics["loss"] = report["loss"]
    return metrics

"""Executing a planned run: the run folder, the callbacks, the loop, the end.

``execute`` creates the run folder (a new run), writes what was said while
planning into metrics.jsonl, builds the model, trains through ``Trainer``,
evaluates and exports on completion, and returns the ``RunOutcome`` built
from the run's ``Finished`` event.  A failure once the folder exists, bad
input found late included, is an outcome (``status="failed"``), recorded in
run.json; ``execute`` raises only for a folder that cannot be made and for
KeyboardInterrupt.
"""

from __future__ import annotations

import time
import traceback
from typing import Any, Iterable

from trainlab.api import RunFailed, UsageError
from trainlab.engine import distributed
from trainlab.engine.callbacks import Callback, CallbackList, IsolatedCallback, RunControl, RunState
from trainlab.engine.context import class_weights
from trainlab.engine.fitted import save_fitted_state
from trainlab.engine.outcome import RunOutcome
from trainlab.engine.plan import RunPlan
from trainlab.engine.plugin_calls import attributed, plugin_calls
from trainlab.engine.records import MetricsFileCallback, RunRecorder, open_store
from trainlab.events import Finished, Log, Progress, Started
from trainlab.fileio import atomic_write_json
from trainlab.pluginhost import registry
from trainlab.runs import RunStore
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
    control = control or RunControl()
    run_dir = plan.run_dir
    group = distributed.current()
    writer = group is None or group.writer  # in a group, rank 0 alone writes the folder and the index
    if not plan.resumed and writer:
        if run_dir.exists():  # made since the plan was (two runs given one --out)
            raise UsageError(f"--out {run_dir.path}: already holds a run (run.json); use --resume or another folder")
        run_dir.path.mkdir(parents=True, exist_ok=True)
    recorder_type = RunRecorder if writer else distributed.SilentRecorder
    if not writer:
        store = None  # the index is rank 0's too
    elif store is None:
        store = open_store()
    recorder = recorder_type(run_dir, plan.record, store)
    state: RunState | None = None

    def plugin_failed(message: str) -> None:
        assert state is not None
        state.emit(Log(step=state.step, epoch=state.epoch, level="warning", message=message))

    engine_callbacks: list[Callback] = [recorder]
    if writer:
        engine_callbacks = [MetricsFileCallback(run_dir), recorder, TelemetryCallback(float(plan.params.get("telemetry_every", 5.0)))]
    engine_callbacks += [
        IsolatedCallback(cb, owner=name, log=plugin_failed) for name, cb in registry().run_callbacks_by_plugin(plan.task_id, plan.params)
    ]
    cblist = CallbackList([*engine_callbacks, *callbacks])
    state = RunState(task_id=plan.task_id, params=plan.params, run_dir=run_dir.path, control=control, emit_to=cblist.emit)
    ctx = plan.ctx
    ctx.run_dir = run_dir.path
    ctx.log = lambda message: state.emit(Log(step=state.step, epoch=state.epoch, message=str(message)))
    ctx.should_stop = lambda: control.stop_requested
    recorder.begin(resumed=plan.resumed)
    said_while_planning = CallbackList(engine_callbacks)
    for event in plan.early_events:
        said_while_planning.emit(event)
    return _train(plan, state, cblist, recorder)


def _train(plan: RunPlan, state: RunState, cblist: CallbackList, recorder: RunRecorder) -> RunOutcome:
    from trainlab.engine.loop import StopRun, Trainer

    task, ctx, control = plan.task, plan.ctx, state.control
    position = plan.position.copy()
    status, error, tb, usage_error = "failed", "", "", False
    calls, failure = plugin_calls(task), None
    trainer: Trainer | None = None
    session_seconds = 0.0
    try:
        if distributed.current() is not None:  # once rank 0 has written run.json
            distributed.current().barrier()
            distributed.current().check_everywhere(distributed.folder_problem(plan.run_dir))
        if plan.random_state is not None:
            plan.random_state.restore()  # as preparation left them, however long ago that was
        if plan.params["class_weighting"]:
            ctx.class_weights = class_weights(task, ctx)
        model = task.prepare_model(task.build_model(ctx), ctx)
        trainer = Trainer(
            task, model, ctx, state, cblist, position=position, segments=list(plan.segments), total_steps=plan.total_steps
        )
        if plan.resumed:
            trainer.restore(plan.run_dir.last_checkpoint)
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
        cblist.call("on_run_start", state)
        started = time.perf_counter()
        try:
            trainer.fit()
            # trainer.control: in a group, the stop the ranks agreed on (every rank ends the same way)
            status = "cancelled" if trainer.control.stop_requested and not trainer.early_stopped else "completed"
        except StopRun:
            status = "cancelled"
        wall = time.perf_counter() - started
        session_seconds = trainer.train_seconds or wall
        recorder.add_train_seconds(wall)
        if status == "completed":
            _finish_completed(plan, trainer, state)
        elif status == "cancelled":
            error = control.stop_reason or "stopped"
    except (KeyboardInterrupt, SystemExit):
        status, error = "cancelled", "interrupted"
        raise
    except BaseException as exc:  # noqa: BLE001 - reported in run.json and the Finished event
        exc, failure = attributed(calls, exc)  # the plugin and its method, when the task's code raised it
        status = "failed"
        error = str(exc) if isinstance(exc, (RunFailed, UsageError)) else f"{type(exc).__name__}: {exc}"
        tb = traceback.format_exc()
        usage_error = isinstance(exc, UsageError)  # bad input found once the run had begun: still exit 2
        cblist.call("on_exception", state, exc)
    finally:
        if trainer is not None:
            trainer.close()
        outcome = _finish(plan, state, cblist, recorder, trainer, position, session_seconds, status, error, tb, usage_error, failure)
    return outcome


def _finish_completed(plan: RunPlan, trainer: Any, state: RunState) -> None:
    """Final evaluation (eval.json), the exported model, checkpoint retention."""
    task, ctx, run_dir, params = plan.task, plan.ctx, plan.run_dir, plan.params
    weights = "last"
    if params["final_weights"] == "best" and trainer.load_best_weights():
        weights = "best"
    state.emit(Progress(step=state.step, epoch=state.epoch, total_steps=state.total_steps, phase="eval"))
    report: dict[str, Any] = {}
    if "val" in task.splits():
        accumulator = trainer.evaluator.accumulate("val")
        task.calibrate("val", accumulator)  # post-hoc fitting (multi-label thresholds), before the report
        report = accumulator.compute()
        report["split"] = "val"
    if "test" in task.splits():
        report["test"] = trainer.evaluate("test")
        report["test"]["split"] = "test"
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
    model_dir = run_dir.model_dir
    model_dir.mkdir(parents=True, exist_ok=True)
    task.save_model(trainer.model, model_dir, ctx)
    save_fitted_state(task, run_dir.path, model_dir)
    keep = params["keep_checkpoints"]
    if keep in ("last", "none"):
        run_dir.best_checkpoint.unlink(missing_ok=True)
    if keep in ("best", "none"):
        run_dir.last_checkpoint.unlink(missing_ok=True)


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
    best = recorder.finish(
        state, status=status, error=error, traceback=tb, epochs=epochs_done, steps=steps, samples_per_second=rate, skipped=skipped,
        failure=failure,
    )
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
    which classification reports beside them, as before plugin API 2)."""
    metrics = {k: v for k, v in report.get("metrics", {}).items()}
    if "top5_accuracy" in report:
        metrics["top5_accuracy"] = report["top5_accuracy"]
    if "loss" in report:
        metrics["loss"] = report["loss"]
    return metrics

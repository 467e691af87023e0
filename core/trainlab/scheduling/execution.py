"""Running one queued request: in this process (``run_here``), or over k GPUs as a ``RunProcess`` group.

Shared by the queue's runner and the foreground sweep.  ``start_point``
decides, from what a run folder holds, whether a request starts a run, starts
it again in the same folder, or resumes it: the one rule that keeps a run from
being lost or repeated when a process dies.
"""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from trainlab.api.callbacks import Callback, RunControl
from trainlab.api.errors import StopRequested, UsageError
from trainlab.api.events import EvalResult
from trainlab.engine.outcome import RunOutcome
from trainlab.engine.plan import RunRequest
from trainlab.engine.run_process import RunProcess
from trainlab.runfolder.index import RunDir, new_run_id
from trainlab.runfolder.status import RunStatus
from trainlab.system import paths

# The reasons a queue gives a stopped run (run.json's ``error`` of a cancelled run).
PAUSED_REASON = "paused"
CANCELLED_REASON = "cancelled in the queue"
PRUNED_REASON = "pruned"


def request_from(data: Mapping[str, Any]) -> RunRequest:
    names = set(RunRequest.__dataclass_fields__)
    return RunRequest(**{k: v for k, v in data.items() if k in names})


def start_point(request: RunRequest, run_dir: str) -> tuple[RunRequest, str]:
    """(the request to run, its run folder) given the folder an earlier attempt used.

    No folder yet, or one without run.json (the attempt died while planning):
    start there.  A run with a checkpoint: resume it.  A run that died before
    its first checkpoint: start afresh in a new folder (the old one stays in
    the history as interrupted).  A completed run has nothing to redo: ask
    ``completed_outcome`` first.
    """
    if request.resume:
        return request, str(RunDir(request.resume).path)
    if not run_dir:
        out = request.out or str(_new_run_path(request.task))
        return replace(request, out=out), str(RunDir(out).path)
    folder = RunDir(run_dir)
    if not folder.exists():
        return replace(request, out=str(folder.path)), str(folder.path)
    if folder.last_checkpoint.exists():
        return replace(request, out=None, resume=str(folder.path)), str(folder.path)
    if request.out and RunDir(request.out).path == folder.path:
        raise UsageError(f"--out {folder.path}: the run there died before its first checkpoint; give another --out")
    out = str(_new_run_path(request.task))
    return replace(request, out=out), str(RunDir(out).path)


def completed_outcome(run_dir: str) -> RunOutcome | None:
    """The outcome of a run folder that already holds a completed run; None otherwise."""
    folder = RunDir(run_dir)
    if not folder.exists():
        return None
    record = folder.read()
    if record.get("status") != RunStatus.COMPLETED:
        return None
    progress = record.get("progress") or {}
    return RunOutcome(
        run_dir=str(folder.path),
        status="completed",
        task=str(record.get("task", "")),
        metrics=dict(record.get("metrics") or {}),
        epochs=int(progress.get("epochs_completed") or 0),
        steps=int(progress.get("steps") or 0),
        best=dict(record.get("best") or {}),
    )


def _new_run_path(task: str) -> Path:
    return paths.runs_dir() / new_run_id(task)


def execute_here(
    request: RunRequest,
    *,
    control: RunControl,
    callbacks: Iterable[Callback] = (),
    record_extra: Mapping[str, Any] | None = None,
) -> RunOutcome:
    """Run ``request`` in this process; ``record_extra`` joins run.json (``study``).

    Stopped while preparing: a cancelled outcome without a run folder.
    """
    from trainlab.engine.run_here import run_here

    try:
        return run_here(request, control=control, callbacks=callbacks, record_extra=record_extra)
    except StopRequested:
        return RunOutcome.not_started(task=request.task, status=RunStatus.CANCELLED, error=control.stop_reason or "stopped")


# -- several GPUs: trainlab train --gpus k, with the leased GPUs visible -----------


def visible_devices_env(uuids: Iterable[str], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a process that may use exactly ``uuids`` (none: the CPU only)."""
    env = dict(os.environ if base is None else base)
    env["CUDA_VISIBLE_DEVICES"] = ",".join(uuids)
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    return env


def execute_on_gpus(
    request: RunRequest,
    gpus: int,
    *,
    control: RunControl,
    on_eval: Callable[[EvalResult], None] | None = None,
    record_extra: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> RunOutcome:
    """Run ``request`` over ``gpus`` GPUs as a ``trainlab train --gpus`` group (``RunProcess``), following its run folder.

    ``control``'s stop reaches the group as a stop request (the run stops
    after the same step on every rank, checkpoint kept); the reason and
    ``record_extra`` are written into run.json once rank 0 has finished with it.
    """
    process = RunProcess(request, launch_args=["--gpus", str(gpus)], env=dict(env or os.environ), echo_stderr=True)

    def on_event(event: Any) -> None:
        if isinstance(event, EvalResult) and on_eval is not None:
            on_eval(event)

    outcome = process.run(on_event=on_event, control=control)
    changes = dict(record_extra or {})
    if outcome.status == RunStatus.CANCELLED and control.stop_reason:  # the queue's reason (paused, cancelled, pruned)
        changes["error"] = control.stop_reason
        outcome = replace(outcome, error=control.stop_reason)
    folder = RunDir(process.run_dir)
    if changes and folder.exists():
        folder.update(**changes)
    return outcome


def watch(control: RunControl, poll: Callable[[], str], every: float = 0.5) -> threading.Event:
    """A thread asking ``poll`` for a stop reason every ``every`` seconds; set the returned event to end it."""
    done = threading.Event()

    def loop() -> None:
        while not done.wait(every):
            reason = poll()
            if reason:
                control.request_stop(reason)
                return

    threading.Thread(target=loop, name="trainlab-queue-watch", daemon=True).start()
    return done

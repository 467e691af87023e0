"""``python -m trainlab.scheduling.entry_process ENTRY TOKEN``: one queue entry's run, in a process of its own.

The scheduler starts it detached (a session of its own, output to
``queue/logs/ENTRY.log``), so that neither a closed window nor a killed
scheduler stops the run.  The runner leases its GPUs (or the queue's CPU
slot) for as long as it lives, then claims its entry (``QueueStore.claim``: a
withdrawn launch is not run), runs the request (in this process on one GPU or the CPU;
``trainlab train --gpus k`` for k), stops the run when the entry is paused or
cancelled, and writes the entry's end.  For a sweep's trial it also reports
each evaluation to the study, whose pruner may stop the run (reason
``pruned``), and tells the study the trial's result.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from typing import Any

from trainlab.api.callbacks import Callback, RunControl
from trainlab.api.errors import UsageError
from trainlab.engine.gpu_leases import LeaseTaken, acquire
from trainlab.engine.outcome import RunOutcome
from trainlab.runfolder.status import entry_state_of_finished
from trainlab.scheduling.execution import (
    CANCELLED_REASON,
    PAUSED_REASON,
    PRUNED_REASON,
    completed_outcome,
    execute_here,
    execute_on_gpus,
    request_from,
    start_point,
    visible_devices_env,
    watch,
)
from trainlab.scheduling.queue_store import CANCELLED, DONE, FAILED, PAUSED, TRIAL, QueueEntry, QueueStore, queue_dir
from trainlab.scheduling.sweep_study import SweepStudy, monitor_text
from trainlab.system.locks import FileLock
from trainlab.system.logs import setup_logging

REQUESTED_REASONS = {"pause": PAUSED_REASON, "cancel": CANCELLED_REASON}


def cpu_slot():
    """The queue's one CPU run at a time: a lock beside the queue (per queue, not machine-wide)."""
    return FileLock(queue_dir() / "cpu.lock")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    entry_id, token = int(argv[0]), argv[1]

    setup_logging(console=True)
    store = QueueStore()
    launched = store.get(entry_id)
    if launched is None or launched.token != token:
        print(f"queue entry {entry_id}: the launch was withdrawn; nothing to run", file=sys.stderr)
        return 0
    # the slot before the claim: a claimed entry always holds its GPUs, so the scheduler never sees them free
    release = _take_slot(store, launched, token)
    if release is None:
        return 0
    entry = store.claim(entry_id, token, os.getpid(), _process_start())
    if entry is None:
        release()
        print(f"queue entry {entry_id}: the launch was withdrawn; nothing to run", file=sys.stderr)
        return 0
    if entry.requested:
        settle(store, entry, token, RunOutcome.not_started(task=entry.task, status="cancelled", error=REQUESTED_REASONS[entry.requested]))
        release()
        return 0
    control = RunControl()
    for name in ("SIGTERM", "SIGINT"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), lambda *_: control.request_stop("terminated"))
    stop_watch = watch(control, lambda: _stop_reason(store, entry_id, token))
    try:
        outcome = run_entry(store, entry, token, control)
    except UsageError as exc:
        outcome = RunOutcome.not_started(task=entry.task, error=str(exc), usage_error=True, run_dir=entry.run_dir)
    except Exception as exc:  # noqa: BLE001 - reported in the entry, never lost
        outcome = RunOutcome.not_started(task=entry.task, error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
    finally:
        stop_watch.set()
    settle(store, store.get(entry_id) or entry, token, outcome)
    release()
    print(f"queue entry {entry_id}: {outcome.status} {outcome.error}".rstrip(), file=sys.stderr)
    return 0


def _process_start() -> float | None:
    try:
        import psutil

        return psutil.Process().create_time()
    except Exception:  # noqa: BLE001
        return None


def _take_slot(store: QueueStore, entry: QueueEntry, token: str):
    """Lease the entry's GPUs (or the CPU slot); back in line, and None, when another process got there first."""
    if entry.devices:
        try:
            lease = acquire(entry.devices, f"trainlab queue entry {entry.id} ({entry.task})")
        except LeaseTaken as exc:
            store.requeue(entry.id, token, f"its GPU was taken meanwhile ({exc})")
            return None
        return lease.release
    slot = cpu_slot()
    if not slot.try_acquire(f"trainlab queue entry {entry.id} ({entry.task})"):
        store.requeue(entry.id, token, "the CPU was taken meanwhile")
        return None
    return slot.release


def _stop_reason(store: QueueStore, entry_id: int, token: str) -> str:
    entry = store.get(entry_id)
    if entry is None or entry.token != token:
        return "withdrawn from the queue"
    return REQUESTED_REASONS.get(entry.requested, "")


def run_entry(store: QueueStore, entry: QueueEntry, token: str, control: RunControl) -> RunOutcome:
    done = completed_outcome(entry.run_dir) if entry.run_dir else None
    if done is not None:  # an earlier runner finished it and died before saying so
        return done
    request, run_dir = start_point(request_from(entry.request), entry.run_dir)
    store.set_run_dir(entry.id, token, run_dir)
    params = dict(request.params)
    params["device"] = "cuda" if entry.devices else "cpu"  # the leased GPUs are the only ones it sees
    request.params = params
    callbacks: list[Callback] = []
    extra: dict[str, Any] | None = None
    if entry.kind == TRIAL:
        study = SweepStudy.load(entry.study)
        study.note_run_dir(int(entry.trial), run_dir, ", ".join(entry.devices) or "cpu")
        callbacks.append(study.pruning(int(entry.trial)))
        extra = {"study": {"name": entry.study, "trial": entry.trial}}
    if entry.gpus > 1:
        pruning = callbacks[0] if callbacks else None
        return execute_on_gpus(
            request,
            entry.gpus,
            control=control,
            on_eval=(lambda event: pruning.observe(event, control)) if pruning else None,
            record_extra=extra,
            env=visible_devices_env(entry.devices),
        )
    return execute_here(request, control=control, callbacks=callbacks, record_extra=extra)


def settle(store: QueueStore, entry: QueueEntry, token: str, outcome: RunOutcome) -> None:
    """The entry's state from its run's outcome, and for a trial the study's verdict.

    A run stopped for any other reason than the queue's (SIGTERM at a
    shutdown, a lost parent) goes back in line, to resume from its checkpoint.
    """
    ended = entry_state_of_finished(outcome.status)
    if ended == DONE:
        state, reason = DONE, _best_text(outcome)
    elif ended == FAILED:
        state, reason = FAILED, outcome.error
    elif outcome.error == PAUSED_REASON:
        state, reason = PAUSED, PAUSED_REASON
    elif outcome.error in (CANCELLED_REASON, PRUNED_REASON):
        state, reason = CANCELLED, outcome.error
    else:
        store.requeue(entry.id, token, f"stopped ({outcome.error or 'no reason'}); back in line to resume")
        return
    if entry.kind == TRIAL and state != PAUSED:
        SweepStudy.load(entry.study).tell_outcome(int(entry.trial), outcome)
    store.finish(entry.id, token, state, reason)


def _best_text(outcome: RunOutcome) -> str:
    best = outcome.best or {}
    if best.get("metric") and best.get("value") is not None:
        return f"best {monitor_text(outcome.task, str(best['metric']), best['value'])}"  # as `train` and `runs` print it
    return "completed"


if __name__ == "__main__":
    sys.exit(main())

"""What a user does with the queue (the CLI's ``queue`` commands, the window's queue view).

Adding checks the request as ``trainlab train`` would before anything
runs (task, data, every parameter against the task's schema), without
loading torch, so a mistyped parameter is exit 2 now rather than a failed
entry at night.  Pausing, cancelling and continuing a sweep does the same
to each of its trials.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from trainlab.api.errors import UsageError
from trainlab.api.params import ENGINE_PARAMS, resolve
from trainlab.engine.outcome import RunOutcome
from trainlab.pluginhost.host import registry
from trainlab.runfolder.index import RunDir
from trainlab.runfolder.status import RunStatus
from trainlab.scheduling.queue_store import CANCELLED, PAUSED, QUEUED, RUN, RUNNING, SWEEP, WAITING, QueueEntry, QueueStore


def check_request(task: str, data: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The resolved parameters of a run of ``task`` on ``data``; UsageError naming what is wrong."""
    if not task:
        raise UsageError("which task? give TASK (see `trainlab tasks`)")
    if not data:
        raise UsageError("--data PATH is required")
    if not Path(data).expanduser().exists():
        raise UsageError(f"--data {data}: no such file or folder")
    return resolve(registry().task(task).spec, ENGINE_PARAMS, {}, dict(params))


def gpus_for(params: Mapping[str, Any], gpus: int | None) -> int:
    """How many GPUs a queued run asks: ``--gpus K`` (default 1), 0 with ``--device cpu``."""
    device = str(params.get("device", "")).strip().lower()
    if device and device not in ("auto", "cpu", "cuda"):
        raise UsageError(f"--device {device}: the queue chooses the GPU; give --gpus K (or --device cpu)")
    if gpus is not None and gpus < 0:
        raise UsageError("--gpus must be 0 or more")
    if device == "cpu":
        if gpus:
            raise UsageError("--device cpu with --gpus: choose one")
        return 0
    return 1 if gpus is None else gpus


def add_run(
    store: QueueStore,
    *,
    task: str = "",
    data: str = "",
    params: Mapping[str, Any] | None = None,
    out: str | None = None,
    resume: str | None = None,
    gpus: int | None = None,
) -> QueueEntry:
    params = dict(params or {})
    if resume:
        prior = RunDir(resume).read()
        task, data = task or str(prior.get("task", "")), data or str((prior.get("data") or {}).get("path", ""))
        resume = str(RunDir(resume).path)
    check_request(task, data, params)
    k = gpus_for(params, gpus)
    params.pop("device", None)  # the runner sets it from the GPUs it is given
    request = {
        "task": task,
        "data": str(Path(data).expanduser().resolve()),
        "params": params,
        "out": str(Path(out).expanduser().resolve()) if out else None,
        "resume": resume,
    }
    return store.add(RUN, request, k)


def add_sweep(store: QueueStore, *, study: str, spec: Any, trials: int) -> QueueEntry:
    request = {"task": spec.task, "data": spec.data, "params": dict(spec.params), "study": study, "trials": int(trials)}
    return store.add(SWEEP, request, int(spec.gpus_per_trial), study=study)


def pause(store: QueueStore, entry_id: int | str) -> QueueEntry:
    """A running run is checkpointed and stopped (its GPUs freed); a waiting one is held back."""
    entry = store.entry(entry_id)
    if entry.kind != SWEEP:
        return store.request_stop(entry.id, "pause")
    if entry.state not in (QUEUED, RUNNING):
        raise UsageError(f"queue pause {entry.id}: the sweep is {entry.state}")
    store.set_state(entry.id, PAUSED, "paused")
    for trial in store.trials_of(entry.id):
        if trial.state in (QUEUED, RUNNING):
            store.request_stop(trial.id, "pause")
    return store.entry(entry.id)


def cancel(store: QueueStore, entry_id: int | str) -> QueueEntry:
    """A waiting entry is dropped; a running run is stopped (checkpoint kept) and ends cancelled."""
    entry = store.entry(entry_id)
    if entry.kind != SWEEP:
        return store.request_stop(entry.id, "cancel")
    if entry.state not in (QUEUED, RUNNING, PAUSED):
        raise UsageError(f"queue cancel {entry.id}: the sweep is {entry.state}")
    waited = []
    for trial in store.trials_of(entry.id):
        if trial.state in (QUEUED, RUNNING, PAUSED):
            if trial.state in WAITING:
                waited.append(trial)
            store.request_stop(trial.id, "cancel")
    store.finish(entry.id, None, CANCELLED, "cancelled in the queue")
    if waited:  # a running trial's runner tells the study; these never ran to tell it
        from trainlab.scheduling.sweep_study import SweepStudy

        study = SweepStudy.load(entry.study)
        for trial in waited:
            study.tell_outcome(int(trial.trial), RunOutcome.not_started(task=trial.task, status=RunStatus.CANCELLED, error="cancelled in the queue"))
    return store.entry(entry.id)


def continue_(store: QueueStore, entry_id: int | str) -> QueueEntry:
    """A paused entry back in line, where it was; a paused run resumes from its checkpoint."""
    entry = store.entry(entry_id)
    if entry.kind != SWEEP:
        return store.continue_(entry.id)
    if entry.state != PAUSED:
        raise UsageError(f"queue continue {entry.id}: only a paused sweep continues (this one is {entry.state})")
    trials = store.trials_of(entry.id)
    store.set_state(entry.id, RUNNING if trials else QUEUED, "")
    for trial in trials:
        if trial.state == PAUSED:
            store.continue_(trial.id)
    return store.entry(entry.id)


def move(store: QueueStore, entry_id: int | str, position: int) -> QueueEntry:
    return store.move(entry_id, position)


def waiting(store: QueueStore) -> list[QueueEntry]:
    return [e for e in store.entries() if e.parent is None and e.state in WAITING]

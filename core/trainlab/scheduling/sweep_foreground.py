"""A sweep run by the ``trainlab sweep`` process itself, one trial after another.

The sweep leases its GPUs (the first free ones, ``--gpus-per-trial`` of
them) for as long as it runs, so that no queue or other run takes them
between two trials; each trial is an ordinary run on them (in this process
on one GPU or the CPU, through ``trainlab train --gpus k`` on k).  A crash or
Ctrl-C leaves the current trial running in the study, with its run folder;
the same command again resumes that run from its checkpoint and goes on
(``--trials N`` is the study's size, so a larger N extends it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from trainlab.api.callbacks import RunControl
from trainlab.api.errors import UsageError
from trainlab.engine.gpu_leases import acquire, gpu_states, read_gpus, torch_index
from trainlab.engine.plan import RunRequest
from trainlab.runfolder.status import RunStatus, TrialState
from trainlab.scheduling.execution import (
    PRUNED_REASON,
    completed_outcome,
    execute_here,
    execute_on_gpus,
    start_point,
    visible_devices_env,
)
from trainlab.scheduling.sweep_study import SweepStudy, monitor_text, params_text


@dataclass
class SweepControl:
    """Stops the sweep: the running trial's run stops (checkpoint kept) and no new trial starts."""

    stopped: bool = False
    trial: RunControl = field(default_factory=RunControl)

    def stop(self, reason: str = "interrupted") -> None:
        self.stopped = True
        self.trial.request_stop(reason)


@dataclass(frozen=True)
class Placement:
    """Where the trials run: a device for this process, or GPUs for ``trainlab train --gpus k``."""

    device: str
    uuids: tuple[str, ...] = ()

    def describe(self) -> str:
        return ", ".join(self.uuids) if self.uuids else self.device


def place(gpus_per_trial: int, device: str | None, nvml: Any = None):
    """(placement, lease or None): a free GPU set leased for the whole sweep, else the device asked or the CPU."""
    if device or gpus_per_trial == 0:
        return Placement(device or "cpu"), None
    gpus, _ = read_gpus(nvml)
    if not gpus:
        return Placement("auto"), None
    states = gpu_states(gpus)
    free = [s.gpu for s in states if s.free]
    if len(free) < gpus_per_trial:
        why = "; ".join(f"GPU {s.gpu.index}: {s.why_not()}" for s in states if not s.free)
        raise UsageError(
            f"sweep: {len(free)} free GPU(s) now, {gpus_per_trial} needed per trial ({why}); "
            "hand the sweep to the queue with --queue, which waits for free GPUs"
        )
    chosen = [g.uuid for g in free[:gpus_per_trial]]
    lease = acquire(chosen, "trainlab sweep (foreground)")
    if gpus_per_trial > 1:
        return Placement("cuda", tuple(chosen)), lease
    index = torch_index(chosen[0])
    return Placement(f"cuda:{index}" if index is not None else "cuda"), lease


def run_sweep(
    study: SweepStudy,
    trials: int,
    *,
    placement: Placement,
    control: SweepControl,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Run the study's unfinished trials, then new ones, until it has ``trials``; its summary."""
    lock = study.lock()
    if not lock.try_acquire("trainlab sweep (foreground)"):
        holder = lock.holder()
        raise UsageError(f"--study {study.name}: the study is being run by {holder.describe() if holder else 'another process'}")
    try:
        for trial in study.running():  # left by a sweep that crashed or was stopped
            if control.stopped:
                break
            say(f"trial {trial.number}: resuming")
            _run_trial(study, trial.number, dict(trial.params), str(trial.user_attrs.get("run_dir", "")), trials, placement, control, say)
        while not control.stopped and len(study.trials()) < trials:
            number, params = study.ask()
            _run_trial(study, number, params, "", trials, placement, control, say)
    finally:
        lock.release()
    return study.summary()


def _run_trial(
    study: SweepStudy,
    number: int,
    params: dict[str, Any],
    run_dir: str,
    trials: int,
    placement: Placement,
    control: SweepControl,
    say: Callable[[str], None],
) -> None:
    spec = study.spec
    request = RunRequest(task=spec.task, data=spec.data, params={**dict(spec.params), **params, "device": placement.device})
    outcome = completed_outcome(run_dir) if run_dir else None
    pruning = study.pruning(number)
    if outcome is None:
        request, run_dir = start_point(request, run_dir)
        study.note_run_dir(number, run_dir, placement.describe())
        control.trial = RunControl()
        if control.stopped:
            return
        extra = {"study": {"name": study.name, "trial": number}}
        if placement.uuids:
            trial_control = control.trial
            outcome = execute_on_gpus(
                request, len(placement.uuids), control=trial_control,
                on_eval=lambda event: pruning.observe(event, trial_control), record_extra=extra,
                env=visible_devices_env(placement.uuids),
            )
        else:
            outcome = execute_here(request, control=control.trial, callbacks=[pruning], record_extra=extra)
    if outcome.status == RunStatus.CANCELLED and outcome.error != PRUNED_REASON:
        say(f"trial {number}: stopped; run the same command again to resume it ({outcome.run_dir})")
        return  # still running in the study: resumed next time
    state = study.tell_outcome(number, outcome) or outcome.status
    if state == TrialState.PRUNED:
        result = f"pruned after epoch {pruning.pruned_at or outcome.epochs}"
    elif state == TrialState.COMPLETED:
        result = monitor_text(spec.task, spec.monitor, outcome.best.get("value", outcome.metrics.get(spec.monitor)))
    else:
        result = f"{state}: {outcome.error}"
    best = study.summary()["best"]
    # trials are numbered as the study and the queue number them (from 0); the count beside says how far the sweep is
    best_text = f"; best so far: trial {best['number']}, {monitor_text(spec.task, spec.monitor, best['value'])}" if best else ""
    say(f"trial {number} ({len(study.trials())} of {trials}) {params_text(params)}: {result}{best_text}; run folder {outcome.run_dir}")

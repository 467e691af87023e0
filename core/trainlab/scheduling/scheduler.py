"""The scheduler: starts queued runs on free GPUs (or the CPU), notices runs that died, drives sweeps.

Where it lives: in whichever process holds the scheduler lock
(``queue/scheduler.lock``), which is ``trainlab queue run``, started
detached by ``trainlab queue add`` / ``sweep --queue`` (and the window's "Add
to queue") when no process holds the lock.  It stops by itself once nothing
is queued or running, so no service lingers.  Runs are not its children in
any way that matters: each is a runner process in a session of its own
(``trainlab.scheduling.entry_process``) that holds its own GPU leases and writes its own
end into the queue, so a killed scheduler stops nothing; a restarted one
reads the queue and carries on (``tick``).

One pass (``tick``): reap finished runners; put back in line a launch whose
runner is gone before it claimed the entry, and a run whose runner died (it
resumes from its checkpoint, up to ``MAX_ATTEMPTS`` starts); then walk the
waiting entries in line order and start each that fits.  A run of k GPUs
needs k free GPUs (not leased by anyone on the machine, not busy with
memory used outside TrainLab); an entry that does not fit stops later
entries from overtaking it on the GPUs (``queue move`` reorders).  With no
NVIDIA GPU, and for entries asking none, runs go one at a time on the CPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any, Callable

from trainlab.engine.gpu_leases import Gpu, gpu_states, read_gpus
from trainlab.engine.outcome import RunOutcome
from trainlab.runfolder.status import run_status_of_entry
from trainlab.scheduling.execution import completed_outcome, visible_devices_env
from trainlab.scheduling.queue_store import (
    CANCELLED,
    DONE,
    FAILED,
    PAUSED,
    QUEUED,
    RUNNING,
    SWEEP,
    TRIAL,
    QueueEntry,
    QueueStore,
    queue_dir,
)
from trainlab.system.locks import FileLock, Holder

MAX_ATTEMPTS = 3  # starts of one entry whose runner died, before it is failed (a crash loop)
POLL_SECONDS = 0.5

Launch = Callable[[QueueEntry, str, list[str]], int]


def scheduler_lock() -> FileLock:
    return FileLock(queue_dir() / "scheduler.lock")


def scheduler_holder() -> Holder | None:
    """The process running the scheduler now, or None."""
    return scheduler_lock().holder()


def pid_alive(pid: int | None, start: float | None = None) -> bool:
    """Whether process ``pid`` runs (and is the one started at ``start``, not a reused pid)."""
    if not pid:
        return False
    try:
        import psutil

        process = psutil.Process(int(pid))
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return start is None or abs(process.create_time() - float(start)) < 1.0
    except Exception:  # noqa: BLE001 - gone, or not ours to see
        return False


class _Resources:
    """What one pass can still hand out: free GPUs, the CPU slot, and which kind is blocked."""

    def __init__(self, free: list[Gpu], machine_gpus: int, cpu_free: bool):
        self.free, self.machine_gpus, self.cpu_free = free, machine_gpus, cpu_free
        self.gpu_blocked = self.cpu_blocked = False

    def needs(self, entry: QueueEntry) -> int:
        return entry.gpus if self.machine_gpus else 0

    def take(self, gpus: int) -> list[str] | None:
        """The devices for a run of ``gpus`` GPUs (``[]``: the CPU), or None when it must wait."""
        if gpus == 0:
            if self.cpu_blocked or not self.cpu_free:
                self.cpu_blocked = True
                return None
            self.cpu_free = False
            return []
        if self.gpu_blocked or len(self.free) < gpus:
            self.gpu_blocked = True
            return None
        taken, self.free = self.free[:gpus], self.free[gpus:]
        return [g.uuid for g in taken]


class Scheduler:
    """One queue's scheduler.  ``nvml`` replaces ``pynvml`` and ``launch`` the runner process (tests)."""

    def __init__(
        self,
        store: QueueStore | None = None,
        *,
        nvml: Any = None,
        launch: Launch | None = None,
        say: Callable[[str], None] | None = None,
    ):
        self.store = store or QueueStore()
        self.nvml = nvml
        self.launch = launch or self.spawn_runner
        self.say = say or (lambda text: print(f"queue: {text}", file=sys.stderr, flush=True))
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._study_locks: dict[str, FileLock] = {}
        self._waiting_said: set[str] = set()

    # -- one pass ----------------------------------------------------------------------
    def tick(self) -> bool:
        """One pass over the queue; whether anything is still queued or running."""
        self._reap()
        self._reconcile()
        self._start_what_fits()
        return self.store.has_work()

    def close(self) -> None:
        for lock in self._study_locks.values():
            lock.release()
        self._study_locks.clear()

    def _reap(self) -> None:
        for pid, child in list(self._children.items()):
            if child.poll() is not None:
                del self._children[pid]

    def _reconcile(self) -> None:
        for entry in self.store.in_state(RUNNING):
            if entry.kind == SWEEP:
                continue
            if not entry.claimed:
                if not pid_alive(entry.runner_pid):  # the launch never reached its runner
                    if self.store.requeue(entry.id, entry.token, "its runner did not start; back in line"):
                        self.say(f"{entry.id}: its runner did not start; back in line")
                continue
            if not pid_alive(entry.runner_pid, entry.runner_start):
                self._runner_died(entry)

    def _runner_died(self, entry: QueueEntry) -> None:
        from trainlab.scheduling.entry_process import settle

        child = self._children.pop(int(entry.runner_pid or 0), None)
        if child is not None:
            child.wait()  # a zombie would still count as "running" to the resumed run's check

        done = completed_outcome(entry.run_dir) if entry.run_dir else None
        if done is not None:  # it finished and died before writing so
            settle(self.store, entry, entry.token, done)
            self.say(f"{entry.id}: its runner died after the run completed; marked done")
            return
        if entry.attempts >= MAX_ATTEMPTS:
            reason = f"its process died {entry.attempts} times; last run folder {entry.run_dir or '-'}"
            settle(self.store, entry, entry.token, RunOutcome.not_started(task=entry.task, error=reason, run_dir=entry.run_dir))
            self.say(f"{entry.id}: failed: {reason}")
            return
        if self.store.requeue(entry.id, entry.token, "its process died; back in line to resume"):
            self.say(f"{entry.id}: its process died; back in line to resume from its checkpoint")

    def _start_what_fits(self) -> None:
        from trainlab.scheduling.entry_process import cpu_slot

        gpus, _why = read_gpus(self.nvml)
        entries = self.store.entries()
        # a launch whose runner has not leased its GPUs (or the CPU slot) yet still has them
        launched = [e for e in entries if e.state == RUNNING and e.kind != SWEEP and not e.claimed]
        promised = {d for e in launched for d in e.devices}
        free = [state.gpu for state in gpu_states(gpus) if state.free and state.gpu.uuid not in promised]
        cpu_free = cpu_slot().holder() is None and not any(not e.devices for e in launched)
        resources = _Resources(free, len(gpus), cpu_free)
        for entry in entries:
            if entry.kind == SWEEP:
                self._drive_sweep(entry, resources)  # its trials too, in line at its place
            elif entry.state == QUEUED and entry.parent is None:
                self._try_start(entry, resources)

    def _try_start(self, entry: QueueEntry, resources: _Resources) -> bool:
        need = resources.needs(entry)
        if need > resources.machine_gpus and resources.machine_gpus:
            reason = f"asks for {need} GPUs; this machine has {resources.machine_gpus}"
            self.store.finish(entry.id, None, FAILED, reason)
            self.say(f"{entry.id}: failed: {reason}")
            return False
        devices = resources.take(need)
        if devices is None:
            return False
        self._start(entry, devices)
        return True

    def _start(self, entry: QueueEntry, devices: list[str]) -> None:
        token = self.store.launch(entry.id, devices)
        pid = self.launch(entry, token, devices)
        self.store.set_runner(entry.id, token, pid)
        where = ", ".join(devices) if devices else "the CPU"
        what = f"trial {entry.trial} of {entry.study}" if entry.kind == TRIAL else entry.task
        self.say(f"started {entry.id} ({what}) on {where}")

    def spawn_runner(self, entry: QueueEntry, token: str, devices: list[str]) -> int:
        """The runner process, detached: its own session, no terminal, output to queue/logs."""
        logs = queue_dir() / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log = open(logs / f"{entry.id}.log", "ab")
        kwargs: dict[str, Any] = {}
        if os.name == "nt":  # pragma: no cover - Windows
            kwargs["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP
        else:
            kwargs["start_new_session"] = True
        try:
            child = subprocess.Popen(
                [sys.executable, "-m", "trainlab.scheduling.entry_process", str(entry.id), token],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=visible_devices_env(devices),
                close_fds=True,
                **kwargs,
            )
        finally:
            log.close()
        self._children[child.pid] = child
        return child.pid

    # -- sweeps ------------------------------------------------------------------------
    def _drive_sweep(self, sweep: QueueEntry, resources: _Resources) -> None:
        if sweep.state not in (QUEUED, RUNNING):
            self._release_study(sweep.study)
            return
        study = self._study(sweep)
        if study is None:
            return
        trials = self.store.trials_of(sweep.id)
        self._settle_trials(study, trials)
        known = {t.trial for t in trials}
        for orphan in study.running():  # asked, and then the scheduler died before queueing it
            if orphan.number not in known:
                self.store.add(
                    TRIAL, self._trial_request(sweep, dict(orphan.params)), sweep.gpus, parent=sweep.id,
                    study=sweep.study, trial=orphan.number, run_dir=str(orphan.user_attrs.get("run_dir", "")),
                )
                self.say(f"{sweep.id}: trial {orphan.number} of {sweep.study} back in line")
        for trial in self.store.trials_of(sweep.id):  # waiting trials before any new one
            if trial.state == QUEUED and not self._try_start(trial, resources):
                return
        target = int(sweep.request.get("trials", 0))
        while len(study.trials()) < target:
            devices = resources.take(resources.needs(sweep))
            if devices is None:
                return
            number, params = study.ask()
            trial = self.store.add(TRIAL, self._trial_request(sweep, params), sweep.gpus, parent=sweep.id, study=sweep.study, trial=number)
            if sweep.state == QUEUED:
                self.store.set_state(sweep.id, RUNNING)
            self._start(trial, devices)
        active = [t for t in self.store.trials_of(sweep.id) if t.state in (QUEUED, RUNNING, PAUSED)]
        if not active and not study.running() and len(study.trials()) >= target:
            from trainlab.scheduling.sweep_study import monitor_text

            best = study.summary()["best"]
            reason = f"best trial {best['number']}: {monitor_text(study.spec.task, study.spec.monitor, best['value'])}" if best else "no trial completed"
            self.store.finish(sweep.id, None, DONE if best else FAILED, reason)
            self._release_study(sweep.study)
            self.say(f"{sweep.id}: sweep {sweep.study} finished; {reason}")

    def _trial_request(self, sweep: QueueEntry, params: dict[str, Any]) -> dict[str, Any]:
        request = sweep.request
        return {"task": request["task"], "data": request["data"], "params": {**dict(request.get("params") or {}), **params}}

    def _settle_trials(self, study: Any, trials: list[QueueEntry]) -> None:
        """Tell the study about trials that ended without a run to tell it (cancelled while waiting, failed to start)."""
        running = {t.number for t in study.running()}
        for entry in trials:
            if entry.state in (FAILED, CANCELLED) and entry.trial in running:
                status = run_status_of_entry(entry.state)
                study.tell_outcome(int(entry.trial), RunOutcome.not_started(task=entry.task, status=status, error=entry.reason or status))

    def _study(self, sweep: QueueEntry) -> Any:
        """The sweep's study, once this scheduler holds its lock; None while another process drives it."""
        from trainlab.scheduling.sweep_study import SweepStudy

        lock = self._study_locks.get(sweep.study)
        if lock is None:
            study = SweepStudy.load(sweep.study)
            lock = study.lock()
            if not lock.try_acquire(f"trainlab queue scheduler, sweep {sweep.id}"):
                if sweep.study not in self._waiting_said:
                    self._waiting_said.add(sweep.study)
                    holder = lock.holder()
                    self.say(f"{sweep.id}: study {sweep.study} is being run by {holder.describe() if holder else 'another process'}; waiting")
                return None
            self._study_locks[sweep.study] = lock
            return study
        return SweepStudy.load(sweep.study)  # read afresh: runners told it about their trials

    def _release_study(self, name: str) -> None:
        lock = self._study_locks.pop(name, None)
        if lock is not None:
            lock.release()


def serve(scheduler: Scheduler | None = None, *, poll: float = POLL_SECONDS, stop: Callable[[], bool] | None = None) -> bool:
    """Run the scheduler in this process while the queue has work; False when another process holds the lock."""
    lock = scheduler_lock()
    if not lock.try_acquire("trainlab queue scheduler"):
        return False
    scheduler = scheduler or Scheduler()
    try:
        while not (stop is not None and stop()):
            if scheduler.tick():
                time.sleep(poll)
                continue
            # Idle: let go, then look again, so that an entry added while we let go
            # is either seen here or finds the lock free and starts a scheduler.
            lock.release()
            if not scheduler.store.has_work() or not lock.try_acquire("trainlab queue scheduler"):
                break
    finally:
        scheduler.close()
        lock.release()
    return True


def ensure_scheduler() -> int | None:
    """Start ``trainlab queue run`` detached unless a scheduler runs; its pid, or None."""
    if scheduler_holder() is not None:
        return None
    logs = queue_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    kwargs: dict[str, Any] = {}
    if os.name == "nt":  # pragma: no cover - Windows
        kwargs["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        kwargs["start_new_session"] = True
    with open(logs / "scheduler.log", "ab") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "trainlab", "queue", "run"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            close_fds=True,
            **kwargs,
        )
    return child.pid

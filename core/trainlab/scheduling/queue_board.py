"""The queue as the window's queue view sees it, with no Qt: ``QueueBoard``.

Rows in line order (a sweep's trials under it) with what a user can do to
each, the scheduler's whereabouts, and the user's actions, which are the
CLI's (``trainlab.scheduling.queue_actions``), so the window and ``trainlab queue``
cannot disagree.  Reading is one SQLite query; ``refresh`` says whether
anything changed so that the view redraws only then.  The queue is the
file, not the window: a window opened later reads the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from trainlab.engine.gpu_leases import read_gpus
from trainlab.scheduling import queue_actions as actions
from trainlab.scheduling.queue_store import FINISHED, PAUSED, QUEUED, RUNNING, SWEEP, TRIAL, WAITING, QueueEntry, QueueStore
from trainlab.scheduling.scheduler import ensure_scheduler, scheduler_holder


@dataclass(frozen=True)
class QueueRow:
    """One entry as a row of plain values."""

    id: int
    kind: str  # run, sweep, trial
    state: str
    what: str  # the task, "sweep NAME (N trials of TASK)", "trial N of NAME"
    task: str
    gpus: int  # asked; 0 is the CPU
    gpu: str  # what it was given (running), else what it asks
    position: int | None  # among the waiting entries, 1 starts next; None when not waiting or a trial
    run_dir: str
    reason: str
    requested: str  # pause or cancel asked of a running entry
    study: str
    parent: int | None

    @property
    def can_cancel(self) -> bool:
        return self.state in (QUEUED, RUNNING, PAUSED) and not self.requested

    @property
    def can_pause(self) -> bool:
        return self.state in (QUEUED, RUNNING) and not self.requested

    @property
    def can_continue(self) -> bool:
        return self.state == PAUSED

    @property
    def can_move(self) -> bool:
        return self.position is not None


def gpu_names(nvml: Any = None) -> dict[str, str]:
    """This machine's GPU UUIDs and their names in the views ("GPU 0"); empty without NVIDIA GPUs."""
    gpus, _why = read_gpus(nvml)
    return {g.uuid: f"GPU {g.index}" for g in gpus}


def row_of(entry: QueueEntry, position: int | None, names: Mapping[str, str] | None = None) -> QueueRow:
    """``names``: this machine's GPUs by UUID (``gpu_names``); with none, every run goes to the CPU, and says so."""
    if entry.kind == SWEEP:
        what = f"sweep {entry.study} ({entry.request.get('trials')} trials of {entry.task})"
    elif entry.kind == TRIAL:
        what = f"trial {entry.trial} of {entry.study}"
    else:
        what = entry.task
    asked = "CPU" if entry.gpus == 0 or names == {} else f"{entry.gpus} GPU" + ("s" if entry.gpus > 1 else "")
    if entry.state == RUNNING and entry.kind != SWEEP:
        gpu = ", ".join((names or {}).get(d) or _short(d) for d in entry.devices) or "CPU"
    elif entry.state in FINISHED:
        gpu = ""  # its GPUs were freed; the run folder says where it ran
    else:
        gpu = asked
    return QueueRow(
        id=entry.id, kind=entry.kind, state=entry.state, what=what, task=entry.task, gpus=entry.gpus, gpu=gpu,
        position=position, run_dir=entry.run_dir, reason=entry.reason, requested=entry.requested,
        study=entry.study, parent=entry.parent,
    )


def _short(uuid: str) -> str:
    return uuid if len(uuid) <= 16 else uuid[:15] + "\u2026"


class QueueBoard:
    """The queue's rows and actions.  ``start_scheduler=False`` leaves starting it to ``trainlab queue run``."""

    def __init__(self, store: QueueStore | None = None, *, start_scheduler: bool = True, nvml: Any = None):
        self.store = store or QueueStore()
        self.nvml = nvml
        self._gpu_names: dict[str, str] | None = None  # read once (NVML), at the first refresh
        self.start_scheduler = start_scheduler
        self.rows: list[QueueRow] = []
        self.scheduler = ""  # who runs the scheduler, in words ("" when nobody does)
        self._seen: tuple[Any, ...] = ()

    def refresh(self) -> bool:
        """Read the queue again; whether anything a view shows changed."""
        entries = self.store.entries()
        waiting = [e.id for e in entries if e.parent is None and e.state in WAITING]
        if self._gpu_names is None:
            self._gpu_names = gpu_names(self.nvml)
        self.rows = [row_of(e, waiting.index(e.id) + 1 if e.id in waiting else None, self._gpu_names) for e in entries]
        holder = scheduler_holder()
        self.scheduler = holder.describe() if holder else ""
        seen = (tuple(self.rows), self.scheduler)
        changed, self._seen = seen != self._seen, seen
        return changed

    def row(self, entry_id: int) -> QueueRow | None:
        return next((r for r in self.rows if r.id == entry_id), None)

    def has_work(self) -> bool:
        return any(r.state in (QUEUED, RUNNING) for r in self.rows)

    def scheduler_text(self) -> str:
        if self.scheduler:
            return f"Scheduler: {self.scheduler}. It stops by itself once the queue is empty; closing the window stops nothing."
        if self.has_work():
            return "Scheduler: not running. Entries wait until one starts (Start the scheduler, or `trainlab queue run`)."
        return "Scheduler: not running (nothing to do). Adding to the queue starts it."

    # -- what a user does ------------------------------------------------------------------
    def add_run(self, task: str, data: str, params: Mapping[str, Any] | None = None, *, gpus: int | None = None) -> QueueEntry:
        """Queue a run (checked as ``trainlab train`` checks it: UsageError naming what is wrong)."""
        entry = actions.add_run(self.store, task=task, data=data, params=params, gpus=gpus)
        self._started()
        return entry

    def cancel(self, entry_id: int) -> QueueEntry:
        return self._done(actions.cancel(self.store, entry_id))

    def pause(self, entry_id: int) -> QueueEntry:
        return self._done(actions.pause(self.store, entry_id))

    def continue_(self, entry_id: int) -> QueueEntry:
        entry = actions.continue_(self.store, entry_id)
        self._started()
        return self._done(entry)

    def move(self, entry_id: int, position: int) -> QueueEntry:
        return self._done(actions.move(self.store, entry_id, position))

    def move_by(self, entry_id: int, step: int) -> QueueEntry:
        """One place earlier (``step`` -1) or later (+1) among the waiting entries."""
        row = self.row(entry_id) or row_of(self.store.entry(entry_id), None)
        if row.position is None:
            return self.move(entry_id, 1)  # refused there, with the reason
        return self.move(entry_id, max(1, row.position + step))

    def ensure_scheduler(self) -> int | None:
        """Start the scheduler unless one runs; its pid, or None."""
        pid = ensure_scheduler()
        self.refresh()
        return pid

    def _started(self) -> None:
        if self.start_scheduler:
            self.ensure_scheduler()
        else:
            self.refresh()

    def _done(self, entry: QueueEntry) -> QueueEntry:
        self.refresh()
        return entry


def sweep_entries(board: QueueBoard) -> list[QueueRow]:
    return [r for r in board.rows if r.kind == SWEEP]

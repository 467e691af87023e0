"""The states a run goes through, one type per kind, and the mapping between them.

* ``RunStatus``: what ``run.json`` stores (CONTRACT.md "Run directory").
* ``SessionState``: the window's state of the run it shows (``trainlab.viewmodel
  .session``): a run's statuses and the four of its own controls (idle,
  preparing, paused, stopping).
* ``EntryState``: a queue entry's state (``trainlab.scheduling.queue_store``);
  ``done`` is what ``run.json`` calls ``completed``.
* ``TrialState``: a sweep trial's state as the study tells it
  (``trainlab.scheduling.sweep_study``).

Each is a ``StrEnum``: a member equals, prints and serializes as the word
stored on disk, so run folders, queue files and studies written before read
unchanged, and a word this version does not know (a newer TrainLab's) is
kept as the plain string.  Every translation from one kind to another is a
function here, and nowhere else.

What a person sees adds one state: *interrupted*, a run stored as ``failed``
because its process ended without finishing it (killed, power cut); the run
index marks those with ``INTERRUPTED_ERROR``.  A run the user stopped (the
Stop button, Ctrl-C) is ``cancelled`` and is shown as *stopped*.

The window translates these words (``trainlab_desktop.common.formatting
.status_title``); the command line prints ``status_word``.  No Qt here.
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """A run's status as ``run.json`` stores it."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class SessionState(StrEnum):
    """The window's state of the run it shows."""

    IDLE = "idle"
    PREPARING = "preparing"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPING = "stopping"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class EntryState(StrEnum):
    """A queue entry's state as the queue file stores it."""

    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


class TrialState(StrEnum):
    """A sweep trial's state, in the words the study's summary uses."""

    WAITING = "waiting"
    RUNNING = "running"
    COMPLETED = "completed"
    PRUNED = "pruned"
    FAILED = "failed"


RUNNING = RunStatus.RUNNING
COMPLETED = RunStatus.COMPLETED
FAILED = RunStatus.FAILED
CANCELLED = RunStatus.CANCELLED
STATUSES = tuple(RunStatus)
FINISHED = frozenset({COMPLETED, FAILED, CANCELLED})

# Shown, never stored: see the module docstring.
INTERRUPTED = "interrupted"
INTERRUPTED_ERROR = "interrupted: the training process ended without finishing the run"
# The run index's status of a run whose run.json changed after it was
# indexed and can no longer be read; its ``error`` names the file and why.
DAMAGED = "damaged"
UNKNOWN = "unknown"
_INTERRUPTED_PREFIX = "interrupted:"

# English words, the source strings of the window's translations too.
STATUS_WORDS = {
    RUNNING: "running",
    COMPLETED: "completed",
    FAILED: "failed",
    CANCELLED: "stopped",
    INTERRUPTED: "interrupted",
    DAMAGED: "damaged",
    UNKNOWN: "unknown",
}

SESSION_ACTIVE = frozenset({SessionState.PREPARING, SessionState.RUNNING, SessionState.PAUSED, SessionState.STOPPING})
SESSION_ENDED = frozenset({SessionState.COMPLETED, SessionState.FAILED, SessionState.CANCELLED})
ENTRY_FINISHED = frozenset({EntryState.DONE, EntryState.FAILED, EntryState.CANCELLED})
ENTRY_WAITING = frozenset({EntryState.QUEUED, EntryState.PAUSED})
TRIAL_OPEN = frozenset({TrialState.WAITING, TrialState.RUNNING})


def run_status(value: object) -> RunStatus | str:
    """``value`` read from ``run.json`` as a ``RunStatus``; a word this version
    does not know stays the string it was (a newer TrainLab's run)."""
    text = str(value or "")
    return RunStatus(text) if text in RunStatus._value2member_map_ else text


def entry_state(value: object) -> EntryState | str:
    """``value`` read from the queue file as an ``EntryState`` (an unknown word kept as stored)."""
    text = str(value or "")
    return EntryState(text) if text in EntryState._value2member_map_ else text


def session_state_of_ended(status: object) -> SessionState:
    """The window's state for a run that has ended with ``status`` (a run's
    outcome): its own word when it is an end, else ``failed``."""
    return SessionState(status) if status in FINISHED else SessionState.FAILED


def session_state_of_stored(status: object) -> SessionState:
    """The window's state for a run folder whose ``run.json`` says ``status``:
    running, one of the ends, or idle (none stored, or a word not known)."""
    if status == RunStatus.RUNNING:
        return SessionState.RUNNING
    return SessionState(status) if status in FINISHED else SessionState.IDLE


def entry_state_of_finished(status: object) -> EntryState | None:
    """A queue entry's state for its run's end: ``completed`` is ``done``;
    None for ``cancelled`` (stopped: why decides, the queue's caller knows)."""
    if status == RunStatus.COMPLETED:
        return EntryState.DONE
    if status == RunStatus.FAILED:
        return EntryState.FAILED
    return None


def run_status_of_entry(state: object) -> RunStatus | None:
    """The run status an entry's state stands for (``done`` is ``completed``); None
    for an entry whose run has not ended (queued, paused)."""
    return {
        EntryState.RUNNING: RunStatus.RUNNING,
        EntryState.DONE: RunStatus.COMPLETED,
        EntryState.FAILED: RunStatus.FAILED,
        EntryState.CANCELLED: RunStatus.CANCELLED,
    }.get(entry_state(state))


def trial_state_of_run(status: object, pruned: bool = False) -> TrialState:
    """A trial's state from its run's end: ``completed`` stays, a run stopped by
    the pruner is ``pruned``, any other end ``failed``."""
    if status == RunStatus.COMPLETED:
        return TrialState.COMPLETED
    if status == RunStatus.CANCELLED and pruned:
        return TrialState.PRUNED
    return TrialState.FAILED


def shown_status(status: str | None, error: str | None = "") -> RunStatus | str:
    """The state to show: one of ``STATUSES``, ``INTERRUPTED``, ``UNKNOWN`` (none
    stored), or a state this version does not know, as stored (a newer
    TrainLab's run)."""
    status = str(status or "").strip().lower()
    if status == FAILED and str(error or "").startswith(_INTERRUPTED_PREFIX):
        return INTERRUPTED
    return run_status(status) if status else UNKNOWN


def status_word(status: str | None, error: str | None = "") -> str:
    """The English word for a run's state (``cancelled`` reads "stopped")."""
    shown = shown_status(status, error)
    return STATUS_WORDS.get(shown, shown)

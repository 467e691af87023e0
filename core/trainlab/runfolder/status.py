"""The one vocabulary of run states, and how each is shown.

``run.json`` stores one of ``STATUSES`` (CONTRACT.md "Run directory").  What
a person sees adds one state: *interrupted*, a run stored as ``failed``
because its process ended without finishing it (killed, power cut); the run
index marks those with ``INTERRUPTED_ERROR``.  A run the user stopped (the
Stop button, Ctrl-C) is ``cancelled`` and is shown as *stopped*.

The window translates these words (``trainlab_desktop.common.formatting
.status_title``); the command line prints ``status_word``.  No Qt here.
"""

from __future__ import annotations

RUNNING = "running"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
STATUSES = (RUNNING, COMPLETED, FAILED, CANCELLED)
FINISHED = frozenset({COMPLETED, FAILED, CANCELLED})

# Shown, never stored: see the module docstring.
INTERRUPTED = "interrupted"
INTERRUPTED_ERROR = "interrupted: the training process ended without finishing the run"
UNKNOWN = "unknown"
_INTERRUPTED_PREFIX = "interrupted:"

# English words, the source strings of the window's translations too.
STATUS_WORDS = {
    RUNNING: "running",
    COMPLETED: "completed",
    FAILED: "failed",
    CANCELLED: "stopped",
    INTERRUPTED: "interrupted",
    UNKNOWN: "unknown",
}


def shown_status(status: str | None, error: str | None = "") -> str:
    """The state to show: one of ``STATUSES``, ``INTERRUPTED``, ``UNKNOWN`` (none
    stored), or a state this version does not know, as stored (a newer
    TrainLab's run)."""
    status = str(status or "").strip().lower()
    if status == FAILED and str(error or "").startswith(_INTERRUPTED_PREFIX):
        return INTERRUPTED
    return status or UNKNOWN


def status_word(status: str | None, error: str | None = "") -> str:
    """The English word for a run's state (``cancelled`` reads "stopped")."""
    shown = shown_status(status, error)
    return STATUS_WORDS.get(shown, shown)

"""Text the window shows for a run's values: the one place for each form.

Numbers read as ``trainlab.runfolder.display`` says (the command line shares it);
status words are ``trainlab.runfolder.status``'s vocabulary, translated here once for
every view (history, results, start page, status bar).
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication

from trainlab.runfolder.display import MISSING, format_duration, format_metric, format_offset, metric_kind
from trainlab.runfolder.status import CANCELLED, COMPLETED, FAILED, INTERRUPTED, RUNNING, UNKNOWN, shown_status

__all__ = ["MISSING", "format_duration", "format_metric", "format_offset", "metric_kind", "status_title"]


def status_title(status: str | None, error: str | None = "") -> str:
    """A run's state as the window shows it, in the window's language.

    ``error`` tells an interrupted run (its process vanished) from a failed
    one; a state this version does not know is shown as stored.
    """
    shown = shown_status(status, error)
    titles = {
        RUNNING: QCoreApplication.translate("RunStatus", "Running"),
        COMPLETED: QCoreApplication.translate("RunStatus", "Completed"),
        FAILED: QCoreApplication.translate("RunStatus", "Failed"),
        CANCELLED: QCoreApplication.translate("RunStatus", "Stopped"),
        INTERRUPTED: QCoreApplication.translate("RunStatus", "Interrupted"),
        UNKNOWN: QCoreApplication.translate("RunStatus", "Unknown"),
    }
    return titles.get(shown, shown)

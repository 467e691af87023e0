"""Text the window shows for a run's values: the one place for each form.

Numbers read as ``trainlab.runfolder.display`` says (the command line shares it);
status words are ``trainlab.runfolder.status``'s vocabulary, translated here once for
every view (history, results, start page, status bar).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication

from trainlab.runfolder.display import MISSING, format_duration, format_metric, format_offset, metric_kind
from trainlab.runfolder.status import CANCELLED, COMPLETED, FAILED, INTERRUPTED, RUNNING, UNKNOWN, shown_status

if TYPE_CHECKING:  # a type only: the descriptors stay out of the window's first paint
    from trainlab.api.descriptors import Metric

__all__ = ["MISSING", "format_duration", "format_metric", "format_offset", "metric_kind", "metric_title", "status_title"]


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


def metric_title(name: str, declared: Metric | None = None) -> str:
    """A metric's name for people: the window's translation for the built-in
    families' metrics, else the title its task declares, else its key."""
    titles = {
        "accuracy": QCoreApplication.translate("ResultsView", "Accuracy"),
        "macro_f1": QCoreApplication.translate("ResultsView", "Macro F1"),
        "micro_f1": QCoreApplication.translate("ResultsView", "Micro F1"),
        "top5_accuracy": QCoreApplication.translate("ResultsView", "Top-5 accuracy"),
        "r2": QCoreApplication.translate("ResultsView", "R\u00b2"),
        "mae": QCoreApplication.translate("ResultsView", "MAE"),
        "rmse": QCoreApplication.translate("ResultsView", "RMSE"),
        "labels_per_example": QCoreApplication.translate("ResultsView", "Labels per example"),
        "loss": QCoreApplication.translate("ResultsView", "Loss"),
    }
    if name in titles:
        return titles[name]
    return (declared.title if declared is not None else "") or name

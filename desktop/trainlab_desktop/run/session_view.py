"""What the window shows of its ``RunSession``: a subscriber, no state of its own.

Each change the session reports reaches the widgets that draw it: the run
controls (state, progress bar and line, the end), the live plots (a new
run's curves, live or not), the status bar, the window title, the GPU panel
(the samples of this window's own run) and the log panel, through the
``trainlab.run`` logger (the lines of a run seen as it goes, not those read
back from an opened run's history).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject

from trainlab.runfolder.display import format_metric
from trainlab.runfolder.status import RunStatus, SessionState
from trainlab.viewmodel.session import RunSession, SessionChange
from trainlab_desktop.common.formatting import metric_title

log = logging.getLogger("trainlab.desktop")
run_log = logging.getLogger("trainlab.run")

LOG_LEVELS = {"debug": logging.DEBUG, "warning": logging.WARNING, "error": logging.ERROR}


def describe_eval(event: Any, declared: Any = ()) -> str:
    """One evaluation as a log line: the loss and the task's metrics, each in its
    ``declared`` display and unit, as the command line writes them (``smape 2.8%``)."""
    specs = {m.name: m for m in declared}
    parts = [f"loss {format_metric('loss', event.loss)}"] if event.loss is not None else []  # None: no loss measured
    parts += [f"{name} {format_metric(name, value, specs.get(name))}" for name, value in event.metrics.items()]
    return f"epoch {event.epoch} {event.split}: " + ", ".join(parts) + (" (best so far)" if event.best else "")


class SessionView(QObject):
    """Subscribes to ``session`` and keeps the window's run widgets in step."""

    def __init__(self, session: RunSession, window: Any, controls: Any, plots: Any, status_label: Any):
        super().__init__(window)
        self.window = window
        self.controls = controls
        self.plots = plots
        self.status_label = status_label
        self.gpu_panel = None  # set once built; gets this window's own run's samples
        self.end_text = ""  # how the last run of this window ended, in words
        session.subscribe(self.changed)

    def changed(self, session: RunSession, change: SessionChange) -> None:
        own = session.source == "worker"
        if change.reset:
            self.plots.reset(session.curves)
            if session.live:
                self.plots.start_live()
            if own:
                self.controls.show_message("")
        if change.started and session.started is not None:
            info = session.started
            self.plots.show_run_metrics(info.run_dir, info.task)  # the metric plots follow the task's declarations
            self.window.setWindowTitle(f"TrainLab \u2014 {Path(info.run_dir).name}")
            if not change.replay:
                log.info("run %s started on %s (%s)", info.run_dir, info.device, info.precision)
        if own and (change.status or change.started) and session.active:
            self._show_state(session)
        # nothing to say before the run has started (its step count is known):
        # "step 0 of 0" flashed on the line when the worker's state arrived first
        if change.progress and session.status != SessionState.PREPARING and session.progress.total_steps:
            self.controls.show_progress(session.progress, session.status if own else SessionState.RUNNING)
        if not change.replay:
            for entry in change.logs:
                run_log.log(LOG_LEVELS.get(entry.level, logging.INFO), "%s", entry.message)
            for event in change.evals:
                run_log.info("%s", describe_eval(event, self.plots.metrics.shown))  # the run's declarations (show_run_metrics)
        if own and self.gpu_panel is not None:
            for sample in change.system:
                self.gpu_panel.add_sample(sample)
        if change.finished:
            self._show_end(session, change)

    def _show_state(self, session: RunSession) -> None:
        state = session.status
        self.controls.set_running(state)
        if state != SessionState.PREPARING and session.progress.total_steps:
            self.controls.show_progress(session.progress, state)
        text = {
            SessionState.PREPARING: self.tr("Preparing the run\u2026"),
            SessionState.RUNNING: self.tr("Training\u2026"),
            SessionState.PAUSED: self.tr("Paused"),
            SessionState.STOPPING: self.tr("Stopping\u2026"),
        }.get(state, state)
        self.status_label.setText(text)

    def _show_end(self, session: RunSession, change: SessionChange) -> None:
        self.plots.stop_live()
        self.window.setWindowTitle("TrainLab")
        if session.source != "worker":
            if not change.replay:  # seen ending, not read back
                self.status_label.setText(self.tr("The followed run has ended."))
            return
        outcome = session.result
        if outcome is None:
            return
        if outcome.status == RunStatus.COMPLETED:
            score = self.final_score(outcome.metrics)
            text = self.tr("Finished: %s") % (score or self.tr("completed"))
            self.controls.bar.setValue(1000)
        elif outcome.status == RunStatus.CANCELLED:
            text = self.tr("Stopped. The run kept its last checkpoint: Run \u203a Continue resumes it.")
        else:
            text = self.tr("Failed: %s") % (outcome.error or self.tr("see the log"))
        self.end_text = text
        self.controls.show_done(text)
        self.status_label.setText(text)

    def final_score(self, metrics: Any) -> str:
        """The run's headline metric, its number as the results page writes it ("accuracy 92.50%"):
        the monitored one, else the first the task declares; '' when there is none."""
        declared = {m.name: m for m in self.plots.metrics.shown}  # the run's declarations (show_run_metrics)
        monitor = self.plots.metrics.monitored
        names = [monitor] if monitor and monitor != "loss" else []
        names += list(declared) + [n for n in ("accuracy", "r2", "micro_f1") if n not in declared]
        for name in names:
            value = metrics.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                spec = declared.get(name)
                text = format_metric(name, value, spec, detail=True)
                return self.tr("accuracy %s") % text if name == "accuracy" else f"{metric_title(name, spec)} {text}"
        return ""

    def notify_end(self, status: str, elapsed: float) -> None:
        """A desktop notification of how this window's run ended, when it was long
        or the window is in the background."""
        from trainlab_desktop.common.notify import LONG_RUN_SECONDS, notify

        if elapsed < LONG_RUN_SECONDS and self.window.isActiveWindow():
            return
        title = {"completed": self.tr("Training finished"), "cancelled": self.tr("Training stopped")}.get(
            status, self.tr("Training failed"))
        from trainlab_desktop.dialogs.about import app_icon_path

        notify(title, self.end_text, self.window, app_icon_path(128))

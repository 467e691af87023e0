"""Start, Pause/Resume, Stop, "Train N more epochs", the memory estimate, and the progress line.

The buttons are views of QActions (the same actions sit in the Run menu with
their shortcuts), so enabling an action enables its button and menu entry
together.  ``show_progress`` draws a ``RunProgress`` (a ``RunSession``'s,
reduced from the run's events there) on the bar and the line under it: epoch
and step, ETA, samples per second.
"""

from __future__ import annotations

import math

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QKeySequence, QPainter
from PySide6.QtWidgets import (
    QComboBox,
    QLabel,
    QProgressBar,
    QSizePolicy,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from trainlab.api.events import Phase
from trainlab.runfolder.status import SessionState
from trainlab.viewmodel.session import RunProgress
from trainlab_desktop.common.flow_layout import FlowLayout, group
from trainlab_desktop.common.formatting import format_duration
from trainlab_desktop.run.estimate_view import EstimateView


def format_rate(value: float | None) -> str:
    if value is None or not math.isfinite(value) or value <= 0:
        return "\u2013"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}"


def _tool_button(action: QAction, parent: QWidget, name: str) -> QToolButton:
    button = QToolButton(parent)
    button.setDefaultAction(action)
    button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
    button.setObjectName(name)
    button.setMinimumWidth(84)
    return button


class ElidedLine(QLabel):
    """A one-line label that ends in "…" where its text is wider than it (the whole text in its tooltip),
    rather than showing the text cut off mid-letter at its right edge."""

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt override
        text = self.text()
        room = self.contentsRect().width()
        if not text or self.fontMetrics().horizontalAdvance(text) <= room:
            super().paintEvent(event)
            return
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        elided = self.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight, room)
        painter.drawText(self.contentsRect(), int(self.alignment() | Qt.AlignmentFlag.AlignVCenter), elided)

    def shown_text(self) -> str:
        """The text as drawn (what a test reads)."""
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, self.contentsRect().width())


class RunControls(QWidget):
    """Actions and widgets to start and steer a run; the window connects them."""

    moreEpochsRequested = Signal(int)
    modeChanged = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        style = self.style()
        from PySide6.QtWidgets import QStyle

        self.start_action = QAction(style.standardIcon(QStyle.StandardPixmap.SP_MediaPlay), self.tr("&Start"), self)
        self.start_action.setShortcut(QKeySequence("Ctrl+Return"))
        self.start_action.setToolTip(self.tr("Start training (Ctrl+Enter)"))
        self.pause_action = QAction(style.standardIcon(QStyle.StandardPixmap.SP_MediaPause), self.tr("&Pause"), self)
        self.pause_action.setShortcut(QKeySequence("Ctrl+P"))
        self.pause_action.setCheckable(True)
        self.pause_action.setToolTip(self.tr("Pause after the current step; press again to resume (Ctrl+P)"))
        self.stop_action = QAction(style.standardIcon(QStyle.StandardPixmap.SP_MediaStop), self.tr("S&top"), self)
        self.stop_action.setShortcut(QKeySequence("Ctrl+."))
        self.stop_action.setToolTip(
            self.tr("Stop after the current step; the run keeps its last checkpoint and can be continued (Ctrl+.)")
        )
        self.more_action = QAction(self.tr("Train &more"), self)
        self.more_action.setShortcut(QKeySequence("Ctrl+Shift+Return"))
        self.more_action.setToolTip(self.tr("Continue the finished run for more epochs (Ctrl+Shift+Enter)"))
        self.more_action.triggered.connect(lambda: self.moreEpochsRequested.emit(self.more_epochs.value()))

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        # One row in a wide window; the groups wrap onto a second row in a narrow one.
        row = FlowLayout(spacing=6)
        self._buttons = group(self, _tool_button(self.start_action, self, "start_button"))
        row.addWidget(self._buttons)
        row.addWidget(group(self, _tool_button(self.pause_action, self, "pause_button"), _tool_button(self.stop_action, self, "stop_button")))
        self.more_epochs = QSpinBox(self)
        self.more_epochs.setObjectName("more_epochs")
        self.more_epochs.setRange(1, 100_000)
        self.more_epochs.setValue(2)
        self.more_epochs.setSuffix(self.tr(" epochs"))
        self.more_epochs.setToolTip(self.tr("How many more epochs to train the finished run"))
        row.addWidget(group(self, _tool_button(self.more_action, self, "more_button"), self.more_epochs))
        self.mode = QComboBox(self)
        self.mode.setObjectName("run_mode")
        self.mode.addItem(self.tr("in this window"), "thread")
        self.mode.addItem(self.tr("in a separate process"), "process")
        self.mode.setToolTip(
            self.tr(
                "In this window: fastest start, the default.\n"
                "In a separate process: a crash of the training (a driver fault, say) cannot take the window down."
            )
        )
        self.mode.currentIndexChanged.connect(lambda _: self.modeChanged.emit(self.mode.currentData()))
        row.addWidget(group(self, QLabel(self.tr("Run:"), self), self.mode))
        layout.addLayout(row)
        # the memory estimate, and what a LoRA run writes, by Start (trainlab_desktop.run.estimate_view)
        self.estimate = EstimateView(self)
        layout.addWidget(self.estimate)

        self.bar = QProgressBar(self)
        self.bar.setObjectName("run_progress")
        self.bar.setRange(0, 1000)
        self.bar.setValue(0)
        self.bar.setTextVisible(True)
        self.bar.setFormat("")
        layout.addWidget(self.bar)
        self.line = ElidedLine(self)
        self.line.setObjectName("progress_line")
        self.line.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # The line changes several times a second while a run trains; were its
        # text to set the pane's minimum width, every change would resize the
        # plots beside it and repaint them whole.  It takes the width it is
        # given (the full text is its tooltip when it is cut).
        self.line.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.line.setMinimumWidth(1)
        layout.addWidget(self.line)
        self.message = QLabel(self)
        self.message.setObjectName("run_message")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.hide()
        layout.addWidget(self.message)
        self.set_idle(can_start=False, can_continue=False)

    def add_beside_start(self, widget: QWidget) -> None:
        """A button that belongs with Start ("Add to queue"): right after it, on the same row."""
        self._buttons.layout().addWidget(widget)

    # -- state -------------------------------------------------------------
    def mode_value(self) -> str:
        return str(self.mode.currentData())

    def set_mode(self, mode: str) -> None:
        index = self.mode.findData(mode)
        if index >= 0:
            self.mode.setCurrentIndex(index)

    def set_idle(self, can_start: bool, can_continue: bool) -> None:
        self.start_action.setEnabled(can_start)
        self.pause_action.setEnabled(False)
        self.pause_action.setChecked(False)
        self.pause_action.setText(self.tr("&Pause"))
        self.stop_action.setEnabled(False)
        self.more_action.setEnabled(can_continue)
        self.more_epochs.setEnabled(can_continue)
        self.mode.setEnabled(True)

    def set_running(self, state: str) -> None:
        """``state`` is the worker's: preparing, running, paused or stopping."""
        self.start_action.setEnabled(False)
        self.more_action.setEnabled(False)
        self.more_epochs.setEnabled(False)
        self.mode.setEnabled(False)
        stopping = state == SessionState.STOPPING
        self.stop_action.setEnabled(not stopping)
        self.pause_action.setEnabled(not stopping)
        paused = state == SessionState.PAUSED
        self.pause_action.setChecked(paused)
        self.pause_action.setText(self.tr("&Resume") if paused else self.tr("&Pause"))
        if state == SessionState.PREPARING:
            self.bar.setRange(0, 0)  # busy: checking data, loading torch, building the model
            self.line.setText(self.tr("Preparing: checking the data and building the model\u2026"))
        elif stopping:
            self.line.setText(self.tr("Stopping after the current step\u2026"))
        elif paused:
            self.line.setText(self.tr("Paused. Press Resume to continue."))

    def show_message(self, text: str, role: str = "error") -> None:
        self.message.setProperty("role", role)
        self.message.style().unpolish(self.message)
        self.message.style().polish(self.message)
        self.message.setText(text)
        self.message.setVisible(bool(text))

    def show_progress(self, progress: RunProgress, state: str = SessionState.RUNNING) -> None:
        if progress.total_steps:
            self.bar.setRange(0, 1000)
            self.bar.setValue(int(progress.fraction * 1000))
            self.bar.setFormat(f"{progress.fraction * 100:.0f}%")
        if state in (SessionState.PAUSED, SessionState.STOPPING, SessionState.PREPARING):
            return
        phase = {
            Phase.EVAL: self.tr("evaluating"),
            Phase.SAVE: self.tr("saving"),
            Phase.PAUSED: self.tr("paused"),
        }.get(progress.phase, "")
        parts = [
            self.tr("Epoch %1 of %2").replace("%1", str(max(progress.epoch, 1))).replace("%2", str(progress.epochs or "?")),
            self.tr("step %1 of %2").replace("%1", f"{progress.step:,}").replace("%2", f"{progress.total_steps:,}"),
            self.tr("ETA %s") % format_duration(progress.eta_seconds, missing="\u2013"),
            self.tr("%s samples/s") % format_rate(progress.samples_per_second),
        ]
        if progress.units_per_second and progress.unit == "tokens":
            parts.append(self.tr("%s tokens/s") % format_rate(progress.units_per_second))
        elif progress.units_per_second:
            parts.append(f"{format_rate(progress.units_per_second)} {progress.unit}/s")
        if phase:
            parts.append(phase)
        self._set_line(" \u00b7 ".join(parts))

    def _set_line(self, text: str) -> None:
        self.line.setText(text)
        self.line.setToolTip(text)

    def show_done(self, text: str) -> None:
        self.bar.setRange(0, 1000)
        self._set_line(text)

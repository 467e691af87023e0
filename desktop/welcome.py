"""The start view: try a bundled sample, start a new training, reopen a run.

"Try image classification" and "Try text classification" use the sample data
the task plugins ship inside ``trainlab.resources`` (``TaskSpec.sample_data``)
and start a short demo run: nothing to download, nothing to configure.  Recent
runs come from the run index (``trainlab.runs.RunStore``) on later starts.
"""

from __future__ import annotations

import time
from typing import Any

from PySide6 import QtCore
from PySide6.QtCore import QCoreApplication, QSize, Signal
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from trainlab.desktop.formatting import format_metric, status_title
from trainlab.records import run_title

SAMPLE_TASKS = ("image-classification", "text-classification")


def metric_title(name: str) -> str:
    """A monitored metric's name for people (the run index stores its key)."""
    titles = {
        "accuracy": QCoreApplication.translate("WelcomeView", "accuracy"),
        "macro_f1": QCoreApplication.translate("WelcomeView", "macro F1"),
        "top5_accuracy": QCoreApplication.translate("WelcomeView", "top-5 accuracy"),
        "loss": QCoreApplication.translate("WelcomeView", "validation loss"),
    }
    return titles.get(name, name)


def describe_run(row: dict[str, Any]) -> str:
    """One line for a run of the index: name or id, task, status, when, best."""
    started = row.get("started")
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if started else ""
    parts = [
        run_title(row.get("name"), row.get("id"), row.get("run_dir")),
        str(row.get("task") or ""),
        status_title(row.get("status"), row.get("error")),
    ]
    if when:
        parts.append(when)
    best, monitor = row.get("best_metric"), row.get("monitor")
    if best is not None and monitor:
        parts.append(f"{metric_title(str(monitor))} {format_metric(str(monitor), best)}")
    return "  \u00b7  ".join(p for p in parts if p)


class _Card(QFrame):
    def __init__(self, title: str, text: str, button: QPushButton, parent: QWidget):
        super().__init__(parent)
        self.setProperty("role", "card")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 14, 16, 14)
        heading = QLabel(title, self)
        heading.setProperty("role", "subheading")
        body = QLabel(text, self)
        body.setWordWrap(True)
        body.setProperty("role", "muted")
        body.setMinimumHeight(body.fontMetrics().lineSpacing() * 3)
        body.setProperty("align", "top")  # STYLE_SHEET: no Qt enum before the window shows
        layout.addWidget(heading)
        layout.addWidget(body, 1)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(button)
        layout.addLayout(row)
        self.button = button


class WelcomeView(QWidget):
    """The first thing the window shows."""

    sampleRequested = Signal(str)  # task id
    newTrainingRequested = Signal()
    runOpened = Signal(str)  # run dir
    historyRequested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(36, 28, 36, 24)
        outer.setSpacing(14)
        title = QLabel(self.tr("Welcome to TrainLab"), self)
        title.setProperty("role", "heading")
        subtitle = QLabel(
            self.tr("Train image and text classifiers on this machine: your data stays here, nothing is downloaded."),
            self,
        )
        subtitle.setWordWrap(True)
        subtitle.setProperty("role", "muted")
        outer.addWidget(title)
        outer.addWidget(subtitle)

        cards = QGridLayout()
        cards.setHorizontalSpacing(14)
        self.try_image = QPushButton(self.tr("Try image classification"), self)
        self.try_image.setObjectName("try_image")
        self.try_image.clicked.connect(lambda: self.sampleRequested.emit("image-classification"))
        self.try_text = QPushButton(self.tr("Try text classification"), self)
        self.try_text.setObjectName("try_text")
        self.try_text.clicked.connect(lambda: self.sampleRequested.emit("text-classification"))
        self.new_training = QPushButton(self.tr("New training\u2026"), self)
        self.new_training.setObjectName("new_training")
        self.new_training.setDefault(True)
        self.new_training.clicked.connect(self.newTrainingRequested.emit)
        self.image_card = _Card(
            self.tr("Image classification"),
            self.tr("A short demo run on the bundled sample photos, sorted into classes."),
            self.try_image,
            self,
        )
        self.text_card = _Card(
            self.tr("Text classification"),
            self.tr("A short demo run on the bundled sample sentences, labelled by topic."),
            self.try_text,
            self,
        )
        self.new_card = _Card(
            self.tr("Your own data"),
            self.tr("Choose a task, point it at a folder of class folders or a CSV file, check the data and train."),
            self.new_training,
            self,
        )
        cards.addWidget(self.image_card, 0, 0)
        cards.addWidget(self.text_card, 0, 1)
        cards.addWidget(self.new_card, 0, 2)
        for column in range(3):  # three equal cards across the width
            cards.setColumnStretch(column, 1)
        outer.addLayout(cards)

        recent_row = QHBoxLayout()
        recent_title = QLabel(self.tr("Recent runs"), self)
        recent_title.setProperty("role", "subheading")
        self.all_runs = QPushButton(self.tr("All runs\u2026"), self)
        self.all_runs.setFlat(True)
        self.all_runs.clicked.connect(self.historyRequested.emit)
        recent_row.addWidget(recent_title)
        recent_row.addStretch(1)
        recent_row.addWidget(self.all_runs)
        outer.addLayout(recent_row)
        self.recent = QListWidget(self)
        self.recent.setObjectName("recent_runs")
        self.recent.setAlternatingRowColors(True)
        self.recent.setUniformItemSizes(True)
        self.recent.setIconSize(QSize(16, 16))
        self.recent.itemActivated.connect(self._activated)
        self.recent.setMaximumHeight(self.recent.fontMetrics().lineSpacing() * 14)
        outer.addWidget(self.recent)
        self.recent_empty = QLabel(self.tr("No runs yet. Your runs will be listed here."), self)
        self.recent_empty.setProperty("role", "muted")
        outer.addWidget(self.recent_empty)
        outer.addStretch(1)
        self.set_recent_runs([])

    def set_samples(self, available: dict[str, str]) -> None:
        """``available`` maps a sample task id to '' (ready) or why it is not."""
        for task_id, button in (("image-classification", self.try_image), ("text-classification", self.try_text)):
            reason = available.get(task_id, self.tr("the task is not installed"))
            button.setEnabled(not reason)
            button.setToolTip(reason or self.tr("Start a short demo run on the bundled sample data"))

    def set_recent_runs(self, rows: list[dict[str, Any]], limit: int = 8) -> None:
        self.recent.clear()
        for row in rows[:limit]:
            item = QListWidgetItem(describe_run(row))
            item.setData(QtCore.Qt.ItemDataRole.UserRole, row.get("run_dir", ""))
            item.setToolTip(str(row.get("run_dir", "")))
            self.recent.addItem(item)
        has_runs = self.recent.count() > 0
        self.recent.setVisible(has_runs)
        self.recent_empty.setVisible(not has_runs)

    def _activated(self, item: QListWidgetItem) -> None:
        run_dir = item.data(QtCore.Qt.ItemDataRole.UserRole)
        if run_dir:
            self.runOpened.emit(str(run_dir))

"""The start view: try a sample, start a new training, reopen a run.

Every installed task whose sample data is here (``TaskSpec.sample_path()``:
a built-in's inside ``trainlab_resources``, a plugin's inside its own
package) gets a card titled by the task: "Try ..." starts a short demo run on
it, nothing to download, nothing to configure.  Which tasks those are comes
from the plugins (``sample_offers``), never from a list of task ids.  Recent
runs come from the run index (``trainlab.runfolder.index.RunStore``) on later starts.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

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
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from trainlab_desktop.common.formatting import format_metric, status_title

MAX_COLUMNS = 4


# A NamedTuple, and run_title imported where it is used: before the window is
# shown every import counts (bench/gui_latency.py's window_vs_bare), and these
# two (dataclasses, trainlab.runfolder.records with the plugin API under it) are
# not needed to draw a card.
class SampleOffer(NamedTuple):
    """An installed task with sample data here: what its card shows."""

    task_id: str
    title: str
    description: str
    path: str


def sample_offers(registry: Any) -> list[SampleOffer]:
    """Every task of ``registry`` whose sample data is here, in the registry's order."""
    offers = []
    for task_id, entry in (registry.tasks.items() if registry is not None else ()):
        path = sample_data_path(registry, task_id)
        if path:
            spec = entry.spec
            offers.append(SampleOffer(task_id, spec.title or task_id, spec.description or "", path))
    return offers


def sample_data_path(registry: Any, task_id: str) -> str:
    """The sample data of ``task_id`` ('' when it has none here, or is not installed)."""
    entry = registry.tasks.get(task_id) if registry is not None else None
    if entry is None:
        return ""
    try:
        path = entry.spec.sample_path()
    except Exception:  # noqa: BLE001 - a plugin's odd sample_data is never fatal: no card
        return ""
    return str(path) if path is not None else ""


def _in_sentence(title: str) -> str:
    """"Image classification" as it reads after "Try" (an acronym keeps its capitals)."""
    first = title.split(" ", 1)[0]
    if len(first) > 1 and first[1:].islower():
        return title[:1].lower() + title[1:]
    return title


def metric_title(name: str, declared: Any = None) -> str:
    """A monitored metric's name for people (the run index stores its key; a
    metric the task declares brings its own title)."""
    titles = {
        "accuracy": QCoreApplication.translate("WelcomeView", "accuracy"),
        "macro_f1": QCoreApplication.translate("WelcomeView", "macro F1"),
        "top5_accuracy": QCoreApplication.translate("WelcomeView", "top-5 accuracy"),
        "loss": QCoreApplication.translate("WelcomeView", "validation loss"),
    }
    if name in titles:
        return titles[name]
    return getattr(declared, "title", "") or name


def describe_run(row: dict[str, Any]) -> str:
    """One line for a run of the index: name or id, task, status, when, best."""
    from trainlab.runfolder.records import run_title

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
        from trainlab.viewmodel.history import run_metrics  # reads run.json: the run's declarations (display, unit)

        declared = run_metrics(row).metric(str(monitor))
        parts.append(f"{metric_title(str(monitor), declared)} {format_metric(str(monitor), best, declared)}")
    return "  \u00b7  ".join(p for p in parts if p)


# A button wider than this would widen its column past the others' (the cards
# share the width equally): a long task title is cut, whole in its tooltip.
BUTTON_MAX_WIDTH = 240


def _elide_long(button: QPushButton, short: str = "") -> None:
    """Fit the button in BUTTON_MAX_WIDTH: ``short`` when given and it fits (the
    card's heading names the task already), else the text cut with "..."."""
    text = button.text()
    metrics = button.fontMetrics()
    if metrics.horizontalAdvance(text) <= BUTTON_MAX_WIDTH:
        return
    if short and metrics.horizontalAdvance(short) <= BUTTON_MAX_WIDTH:
        button.setText(short)
        return
    button.setText(metrics.elidedText(text, QtCore.Qt.TextElideMode.ElideRight, BUTTON_MAX_WIDTH))
    button.setToolTip(f"{text}\n{button.toolTip()}")


class _Card(QFrame):
    def __init__(self, title: str, text: str, button: QPushButton, parent: QWidget):
        super().__init__(parent)
        self.setProperty("role", "card")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 14, 16, 14)
        heading = QLabel(title, self)
        heading.setProperty("role", "subheading")
        heading.setWordWrap(True)  # a long task title wraps rather than widening its column
        body = QLabel(text, self)
        body.setWordWrap(True)
        body.setProperty("role", "muted")
        body.setMinimumHeight(body.fontMetrics().lineSpacing() * 3)
        body.setProperty("align", "top")  # STYLE_SHEET: no Qt enum before the window shows
        layout.addWidget(heading)
        layout.addWidget(body, 1)
        self.heading, self.body = heading, body
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
        # The page scrolls rather than squeezing the cards: on a 1280x800 screen a
        # long task description was cut off mid-sentence at the bottom of its card.
        scroll = QScrollArea(self)
        scroll.setObjectName("welcome_scroll")
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        content = QWidget(scroll)
        content.setObjectName("welcome_content")
        scroll.setWidget(content)
        page = QVBoxLayout(self)
        page.setContentsMargins(0, 0, 0, 0)
        page.addWidget(scroll)
        self.scroll = scroll
        outer = self.content_layout = QVBoxLayout(content)
        outer.setContentsMargins(36, 28, 36, 24)
        outer.setSpacing(14)
        title = QLabel(self.tr("Welcome to TrainLab"), self)
        title.setProperty("role", "heading")
        subtitle = QLabel(
            self.tr("Train image and text models on this machine: your data stays here, nothing is downloaded."),
            self,
        )
        subtitle.setWordWrap(True)
        subtitle.setProperty("role", "muted")
        outer.addWidget(title)
        outer.addWidget(subtitle)

        self.cards = QGridLayout()
        self.cards.setHorizontalSpacing(14)
        self.cards.setVerticalSpacing(14)
        self.sample_cards: dict[str, _Card] = {}
        self.new_training = QPushButton(self.tr("New training\u2026"), self)
        self.new_training.setObjectName("new_training")
        self.new_training.setDefault(True)
        self.new_training.clicked.connect(self.newTrainingRequested.emit)
        self.new_card = _Card(
            self.tr("Your own data"),
            self.tr("Choose a task, point it at a folder of class folders or a CSV file, check the data and train."),
            self.new_training,
            self,
        )
        outer.addLayout(self.cards)
        self._lay_out_cards()

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
        # Until the index was read (in the background) the list is not known to
        # be empty: "No runs yet" for a moment would say what is not true.
        self.recent_empty = QLabel(self.tr("Reading the run history\u2026"), self)
        self.recent_empty.setObjectName("recent_runs_state")
        self.recent_empty.setProperty("role", "muted")
        self.recent_empty.setWordWrap(True)
        outer.addWidget(self.recent_empty)
        outer.addStretch(1)
        self.recent.setVisible(False)
        self.recent_loaded = False

    def set_samples(self, offers: list[SampleOffer]) -> None:
        """A card for each task with sample data (``sample_offers``), then "Your own data"."""
        for card in self.sample_cards.values():
            self.cards.removeWidget(card)
            card.deleteLater()
        self.sample_cards = {}
        for offer in offers:
            template = self.tr("Try {task}")
            # lower-casing a title mid-sentence is English grammar, not every language's
            title = _in_sentence(offer.title) if template == "Try {task}" else offer.title
            button = QPushButton(template.format(task=title), self)
            button.setObjectName(f"try_{offer.task_id}")
            button.setToolTip(
                self.tr("Start a short demo run on the sample data that comes with this task ({path})").format(path=offer.path)
            )
            button.clicked.connect(lambda _=False, task=offer.task_id: self.sampleRequested.emit(task))
            # "Try fine-tune a language model (chat ..." read as neither: a title too
            # long for the button gives way to a short label under the card's heading
            _elide_long(button, self.tr("Try the sample"))
            text = offer.description or self.tr("A short demo run on the sample data that comes with this task.")
            self.sample_cards[offer.task_id] = _Card(offer.title, text, button, self)
        self._lay_out_cards()

    def sample_button(self, task_id: str) -> QPushButton | None:
        """The "Try ..." button of ``task_id``'s card (None: no card for it)."""
        card = self.sample_cards.get(task_id)
        return card.button if card is not None else None

    def _fitting_columns(self, width: int) -> int:
        """How many cards side by side ``width`` pixels of the page hold, each at its least width."""
        cards = [*self.sample_cards.values(), self.new_card]
        least = max(card.minimumSizeHint().width() for card in cards)
        margins = self.content_layout.contentsMargins()
        room = width - margins.left() - margins.right() - self.scroll.verticalScrollBar().sizeHint().width()
        spacing = self.cards.horizontalSpacing()
        return max(1, min(MAX_COLUMNS, (room + spacing) // (least + spacing)))

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        if self._fitting_columns(event.size().width()) != self._fitting:
            self._lay_out_cards()

    def _lay_out_cards(self) -> None:
        cards = [*self.sample_cards.values(), self.new_card]
        total = len(cards)
        # one row for up to four cards; more wrap into rows of three or four; fewer in
        # a narrow window (side by side, the cards' least widths were wider than the page)
        columns = total if total <= MAX_COLUMNS else (3 if total <= 6 else MAX_COLUMNS)
        self._fitting = self._fitting_columns(self.width())
        columns = min(columns, self._fitting)
        for card in cards:
            self.cards.removeWidget(card)
        for index, card in enumerate(cards):
            self.cards.addWidget(card, index // columns, index % columns)
            card.show()  # now, not when the layout next gets round to it
        for column in range(MAX_COLUMNS):  # equal cards across the width
            self.cards.setColumnStretch(column, 1 if column < columns else 0)

    def set_recent_runs(self, rows: list[dict[str, Any]], limit: int = 8, note: str = "") -> None:
        """The newest runs of the index; ``note``: how they were read, when not from the index (a full disk)."""
        self.recent_loaded = True
        self.recent.clear()
        for row in rows[:limit]:
            item = QListWidgetItem(describe_run(row))
            item.setData(QtCore.Qt.ItemDataRole.UserRole, row.get("run_dir", ""))
            item.setToolTip(str(row.get("run_dir", "")))
            self.recent.addItem(item)
        has_runs = self.recent.count() > 0
        self.recent.setVisible(has_runs)
        if has_runs:
            self.recent_empty.setText(note)
        else:
            self.recent_empty.setText(self.tr("No runs yet. Your runs will be listed here.") + (f"\n{note}" if note else ""))
        self.recent_empty.setVisible(not has_runs or bool(note))

    def set_recent_runs_unavailable(self, reason: str) -> None:
        """The run index could not be read: say so, rather than "No runs yet"."""
        self.recent_loaded = True
        self.recent.clear()
        self.recent.setVisible(False)
        self.recent_empty.setText(self.tr("Cannot read the run index: {error}").format(error=reason))
        self.recent_empty.setVisible(True)

    def _activated(self, item: QListWidgetItem) -> None:
        run_dir = item.data(QtCore.Qt.ItemDataRole.UserRole)
        if run_dir:
            self.runOpened.emit(str(run_dir))

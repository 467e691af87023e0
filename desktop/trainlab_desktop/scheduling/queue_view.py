"""The Queue page: the run queue (state, GPU, task, place in line; pause, continue, cancel, move) and the sweeps.

A thin view of ``trainlab.scheduling.queue_board.QueueBoard``: the rows, what each
allows and every action are the board's (the same ones as ``trainlab
queue``).  The queue is a file, and its scheduler a detached ``trainlab
queue run`` that stops by itself when the queue is empty
(docs/queue-and-sweeps.md), so closing the window stops nothing queued and
a window opened later shows the same queue; the page reads it again every
``REFRESH_MS``.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from trainlab.api.errors import UsageError
from trainlab.runfolder.status import EntryState
from trainlab.scheduling.queue_board import QueueBoard, QueueRow

log = logging.getLogger("trainlab.desktop")

REFRESH_MS = 1000
COLUMNS = ("id", "place", "state", "what", "gpu", "folder")


class QueueView(QWidget):
    """The queue's table and its buttons."""

    changed = Signal()  # the rows were read again and something differs
    sweepRequested = Signal(str)  # show this study's trials

    def __init__(self, board: QueueBoard, parent: QWidget | None = None):
        super().__init__(parent)
        self.board = board
        self.setObjectName("queue_view")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 12, 12, 12)
        top = QHBoxLayout()
        self.scheduler_label = QLabel(self)
        self.scheduler_label.setObjectName("scheduler_label")
        self.scheduler_label.setWordWrap(True)
        self.scheduler_label.setProperty("role", "muted")
        top.addWidget(self.scheduler_label, 1)
        self.start_scheduler_button = QPushButton(self.tr("Start the scheduler"), self)
        self.start_scheduler_button.setObjectName("start_scheduler_button")
        self.start_scheduler_button.clicked.connect(self._start_scheduler)
        top.addWidget(self.start_scheduler_button)
        layout.addLayout(top)

        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setObjectName("queue_table")
        self.table.setHorizontalHeaderLabels(
            [self.tr("#"), self.tr("Place"), self.tr("State"), self.tr("Task"), self.tr("GPU"), self.tr("Run folder / reason")]
        )
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.table.itemDoubleClicked.connect(lambda _item: self._show_sweep())
        layout.addWidget(self.table, 1)

        buttons = QHBoxLayout()
        self.buttons: dict[str, QPushButton] = {}
        for key, text, slot in (
            ("pause", self.tr("Pause"), self.pause_selected),
            ("continue", self.tr("Continue"), self.continue_selected),
            ("cancel", self.tr("Cancel"), self.cancel_selected),
            ("up", self.tr("Move up"), lambda: self.move_selected(-1)),
            ("down", self.tr("Move down"), lambda: self.move_selected(1)),
            ("trials", self.tr("Show trials"), self._show_sweep),
        ):
            button = QPushButton(text, self)
            button.setObjectName(f"queue_{key}_button")
            button.clicked.connect(slot)
            buttons.addWidget(button)
            self.buttons[key] = button
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.message = QLabel(self)
        self.message.setObjectName("queue_message")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.message)

        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()
        self.refresh(force=True)

    # -- reading ---------------------------------------------------------------------------
    def refresh(self, force: bool = False) -> None:
        try:
            changed = self.board.refresh()
        except Exception as exc:  # noqa: BLE001 - a locked or unreadable queue file: say so, try again later
            self.message.setText(self.tr("The queue could not be read: %s") % exc)
            return
        if changed or force:
            self._fill()
            self.changed.emit()

    def _fill(self) -> None:
        selected = self.selected_id()
        self.table.setRowCount(len(self.board.rows))
        for r, row in enumerate(self.board.rows):
            state = self.state_text(row.state)
            if row.requested:
                state += " " + (self.tr("(pause asked)") if row.requested == "pause" else self.tr("(cancel asked)"))
            what = ("    " if row.parent is not None else "") + row.what
            folder = row.run_dir if row.state == EntryState.RUNNING or not row.reason else f"{row.reason}  {row.run_dir}".strip()
            texts = (str(row.id), str(row.position or ""), state, what, row.gpu, folder)
            for c, text in enumerate(texts):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, row.id)
                self.table.setItem(r, c, item)
            if row.id == selected:
                self.table.selectRow(r)
        self.scheduler_label.setText(self.board.scheduler_text())
        self.start_scheduler_button.setEnabled(not self.board.scheduler and self.board.has_work())
        self._update_buttons()

    def state_text(self, state: str) -> str:
        words = {EntryState.QUEUED: self.tr("queued"), EntryState.RUNNING: self.tr("running"), EntryState.PAUSED: self.tr("paused"),
                 EntryState.DONE: self.tr("done"), EntryState.FAILED: self.tr("failed"), EntryState.CANCELLED: self.tr("cancelled")}
        return words.get(state, state)

    def selected_id(self) -> int | None:
        items = self.table.selectedItems()
        return int(items[0].data(Qt.ItemDataRole.UserRole)) if items else None

    def selected_row(self) -> QueueRow | None:
        entry_id = self.selected_id()
        return self.board.row(entry_id) if entry_id is not None else None

    def select(self, entry_id: int) -> bool:
        for r in range(self.table.rowCount()):
            if int(self.table.item(r, 0).data(Qt.ItemDataRole.UserRole)) == entry_id:
                self.table.selectRow(r)
                return True
        return False

    def shown_rows(self) -> list[tuple[int, str, str]]:
        """(id, state, place) as the table shows them, top to bottom."""
        return [(int(self.table.item(r, 0).text()), self.table.item(r, 2).text(), self.table.item(r, 1).text())
                for r in range(self.table.rowCount())]

    def _update_buttons(self) -> None:
        row = self.selected_row()
        self.buttons["pause"].setEnabled(bool(row and row.can_pause))
        self.buttons["continue"].setEnabled(bool(row and row.can_continue))
        self.buttons["cancel"].setEnabled(bool(row and row.can_cancel))
        self.buttons["up"].setEnabled(bool(row and row.can_move and row.position > 1))
        waiting = sum(1 for r in self.board.rows if r.position is not None)
        self.buttons["down"].setEnabled(bool(row and row.can_move and row.position < waiting))
        self.buttons["trials"].setEnabled(bool(row and row.study))

    # -- acting ------------------------------------------------------------------------------
    def _act(self, what, *args) -> None:
        row = self.selected_row()
        if row is None:
            return
        try:
            entry = what(row.id, *args)
        except UsageError as exc:
            self.message.setText(str(exc))
            return
        self.message.setText("")
        self.refresh(force=True)
        self.select(entry.id)

    def pause_selected(self) -> None:
        self._act(self.board.pause)

    def continue_selected(self) -> None:
        self._act(self.board.continue_)

    def cancel_selected(self) -> None:
        self._act(self.board.cancel)

    def move_selected(self, step: int) -> None:
        self._act(self.board.move_by, step)

    def _start_scheduler(self) -> None:
        pid = self.board.ensure_scheduler()
        if pid is not None:
            self.message.setText(self.tr("Started the scheduler (process %s).") % pid)
        self.refresh(force=True)

    def _show_sweep(self) -> None:
        row = self.selected_row()
        if row is not None and row.study:
            self.sweepRequested.emit(row.study)

    def shutdown(self) -> None:
        self.timer.stop()


class QueuePage(QTabWidget):
    """The Queue page: the queue, and the sweeps' trials (built when first shown: pyqtgraph, optuna)."""

    def __init__(self, board: QueueBoard, theme: str = "light", parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("queue_page")
        self.theme = theme
        self.queue = QueueView(board, self)
        self.addTab(self.queue, self.tr("Queue"))
        self.sweeps = None  # SweepView
        self._sweeps_holder = QWidget(self)
        QVBoxLayout(self._sweeps_holder).setContentsMargins(0, 0, 0, 0)
        self.addTab(self._sweeps_holder, self.tr("Sweeps"))
        self.queue.sweepRequested.connect(self.show_study)
        self.currentChanged.connect(lambda index: index == 1 and self.sweep_view())

    def sweep_view(self):
        if self.sweeps is None:
            from trainlab_desktop.scheduling.sweep_view import SweepView

            self.sweeps = SweepView(self.queue.board, self.theme, self._sweeps_holder)
            self.sweeps.bestQueued.connect(lambda entry_id: self.queue.refresh(force=True))
            self._sweeps_holder.layout().addWidget(self.sweeps)
        return self.sweeps

    def show_study(self, name: str) -> None:
        self.setCurrentIndex(1)
        self.sweep_view().show_study(name)

    def shutdown(self) -> None:
        self.queue.shutdown()
        if self.sweeps is not None:
            self.sweeps.shutdown()

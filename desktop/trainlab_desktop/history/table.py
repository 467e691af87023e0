"""The run history's table: the rows of the run index as a Qt item model.

``RunHistoryModel`` shows what ``trainlab.runfolder.index.RunStore.list`` returns (one
dict per run); its name column is editable and renames the run.  Every word
and number goes through the shared forms (``trainlab_desktop.common.formatting``,
``trainlab.runfolder.records.run_title``), so a run reads the same here as on the start
page and in its results.  ``RunFilterProxy`` narrows the rows to the words
typed in the filter box.
"""

from __future__ import annotations

import math
import time
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QDateTime,
    QLocale,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QGuiApplication, QPalette

from trainlab.api.errors import UsageError
from trainlab.runfolder.index import RunDir, RunStore
from trainlab.runfolder.records import run_title
from trainlab.runfolder.status import CANCELLED, COMPLETED, FAILED, INTERRUPTED, RUNNING, shown_status
from trainlab_desktop.common.formatting import MISSING, format_duration, format_metric, status_title

COLUMNS = ("status", "name", "task", "started", "duration", "best")
STATUS_DOTS = {
    RUNNING: "#2f6fde",
    COMPLETED: "#2e9d5b",
    FAILED: "#d64545",
    CANCELLED: "#d98a1c",
    INTERRUPTED: "#9c755f",
}

ModelIndex = QModelIndex | QPersistentModelIndex


def row_status(run: dict[str, Any]) -> str:
    """The state to show for an index row (interrupted told from failed)."""
    return shown_status(run.get("status"), run.get("error"))


def row_title(run: dict[str, Any]) -> str:
    return run_title(run.get("name"), run.get("id"), run.get("run_dir"))


class RunHistoryModel(QAbstractTableModel):
    """Rows of the run index; the name column is editable (renames the run)."""

    renameFailed = Signal(str)

    def __init__(self, store: RunStore, parent: Any = None) -> None:
        super().__init__(parent)
        self.store = store
        self.rows: list[dict[str, Any]] = []
        self.now = time.time()

    def headers(self) -> list[str]:
        return [self.tr("Status"), self.tr("Name"), self.tr("Task"), self.tr("Started"), self.tr("Duration"), self.tr("Best")]

    def set_rows(self, rows: list[dict[str, Any]]) -> None:
        """Replace the rows; an unchanged list of runs only repaints (keeps the selection)."""
        self.now = time.time()
        if [r["id"] for r in rows] == [r["id"] for r in self.rows]:
            self.rows = rows
            if rows:
                self.dataChanged.emit(self.index(0, 0), self.index(len(rows) - 1, len(COLUMNS) - 1))
            return
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def tick(self) -> None:
        """Repaint the running runs' durations."""
        self.now = time.time()
        column = COLUMNS.index("duration")
        for row, run in enumerate(self.rows):
            if run.get("status") == RUNNING:
                index = self.index(row, column)
                self.dataChanged.emit(index, index)

    def run_at(self, row: int) -> dict[str, Any]:
        return self.rows[row]

    def row_of(self, run_id: str) -> int:
        return next((i for i, r in enumerate(self.rows) if r["id"] == run_id), -1)

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        flags = super().flags(index)
        if index.isValid() and COLUMNS[index.column()] == "name":
            flags |= Qt.ItemFlag.ItemIsEditable
        return flags

    def _duration(self, run: dict[str, Any]) -> float | None:
        if run.get("status") == RUNNING and run.get("started"):
            return self.now - float(run["started"])
        return run.get("duration")

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        run = self.rows[index.row()]
        column = COLUMNS[index.column()]
        if role == Qt.ItemDataRole.UserRole:  # sort key
            return {
                "status": row_status(run),
                "name": row_title(run).lower(),
                "task": run.get("task") or "",
                "started": run.get("started") or 0.0,
                "duration": self._duration(run) or 0.0,
                "best": run.get("best_metric") if run.get("best_metric") is not None else -math.inf,
            }[column]
        if role == Qt.ItemDataRole.UserRole + 1:
            return run
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return self._text(run, column, role)
        if role == Qt.ItemDataRole.DecorationRole and column == "status":
            return status_icon_for(row_status(run))
        if role == Qt.ItemDataRole.TextAlignmentRole and column in ("duration", "best"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == "best" and run.get("monitor"):
                return self.tr("Best validation {metric}").format(metric=run["monitor"])
            if column == "name":
                return run["run_dir"]
            if column == "status" and row_status(run) in (FAILED, INTERRUPTED):
                return run_error(run["run_dir"]) or run.get("error") or None
        if role == Qt.ItemDataRole.ForegroundRole and column == "name" and not run.get("name"):
            # An unnamed run shows its id, dimmed, so named runs stand out.
            return QGuiApplication.palette().color(QPalette.ColorRole.PlaceholderText)
        return None

    def _text(self, run: dict[str, Any], column: str, role: int) -> str:
        if column == "status":
            return status_title(run.get("status"), run.get("error"))
        if column == "name":
            return run.get("name") or ("" if role == Qt.ItemDataRole.EditRole else row_title(run))
        if column == "task":
            return run.get("task") or ""
        if column == "started":
            started = run.get("started")
            if not started:
                return MISSING
            moment = QDateTime.fromMSecsSinceEpoch(int(float(started) * 1000))
            return QLocale().toString(moment, QLocale.FormatType.ShortFormat)
        if column == "duration":
            return format_duration(self._duration(run), missing=MISSING)
        return format_metric(run.get("monitor"), run.get("best_metric"))

    def setData(self, index: ModelIndex, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802
        if role != Qt.ItemDataRole.EditRole or COLUMNS[index.column()] != "name":
            return False
        run = self.rows[index.row()]
        name = str(value).strip()
        if name == (run.get("name") or ""):
            return False
        try:
            self.store.rename(run["id"], name)
        except (UsageError, OSError) as exc:
            self.renameFailed.emit(str(exc))
            return False
        run["name"] = name
        self.dataChanged.emit(index, index)
        return True

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.headers()[section]
        return None


def run_error(run_dir: str) -> str:
    """Why a run failed, from its run.json; a damaged run.json says what is wrong with it."""
    try:
        return RunDir(run_dir).read_record().error
    except UsageError as exc:
        return str(exc)


class RunFilterProxy(QSortFilterProxyModel):
    """Rows whose id, name, task, status or folder hold every typed word."""

    def filterAcceptsRow(self, source_row: int, source_parent: ModelIndex) -> bool:  # noqa: N802
        needle = self.filterRegularExpression().pattern().lower()
        if not needle:
            return True
        run = self.sourceModel().run_at(source_row)
        words = [str(run.get(k) or "") for k in ("id", "name", "task", "status", "run_dir")]
        words.append(status_title(run.get("status"), run.get("error")))  # what the user reads in the column
        haystack = " ".join(words).lower()
        return all(word in haystack for word in needle.split())


def status_icon_for(status: str):
    return _dot(STATUS_DOTS.get(status, "#8a8f98"))


_dots: dict[str, Any] = {}


def _dot(color: str):
    if color not in _dots:
        from PySide6.QtGui import QIcon, QPainter, QPixmap

        pixmap = QPixmap(12, 12)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(color))
        painter.drawEllipse(1, 1, 10, 10)
        painter.end()
        _dots[color] = QIcon(pixmap)
    return _dots[color]

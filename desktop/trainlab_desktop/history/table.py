"""The run history's table: the rows of the run index as a Qt item model.

``RunHistoryModel`` shows what ``trainlab.runfolder.index.RunStore.list`` returns (one
dict per run); its name column is editable and renames the run.  Every word
and number goes through the shared forms (``trainlab_desktop.common.formatting``,
``trainlab.runfolder.records.run_title``), so a run reads the same here as on the start
page and in its results.

Besides the fixed columns (``COLUMNS``; "Best" names the monitor, by the
title its own column has, and its best value: ``Accuracy 92.5%``), there is a column for every metric the listed
runs declare (``trainlab.viewmodel.history``): a run of another family leaves
it empty, and sorting by it puts the best value first whatever the metric's
direction.  ``RunFilterProxy`` narrows the rows to the words typed in the
filter box and to the conditions on metrics among them (``mae<3``,
``accuracy>=90%``).
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
from trainlab.viewmodel.history import RunMetrics, metric_columns, run_metrics, sort_key, split_filter
from trainlab_desktop.common.formatting import MISSING, format_duration, metric_title, status_title

COLUMNS = ("status", "name", "task", "started", "duration", "best")  # then one column per declared metric
METRIC_PREFIX = "metric:"
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
        self.metric_specs: dict[str, Any] = {}  # name -> Metric, one column each after COLUMNS
        self.columns: tuple[str, ...] = COLUMNS

    def headers(self) -> list[str]:
        fixed = [self.tr("Status"), self.tr("Name"), self.tr("Task"), self.tr("Started"), self.tr("Duration"), self.tr("Best")]
        return fixed + [metric_title(name, metric) for name, metric in self.metric_specs.items()]

    def metrics_of(self, run: dict[str, Any]) -> RunMetrics:
        """The run's declared metrics and values (read from its run.json once per change)."""
        return run_metrics(run)

    def column_of(self, key: str) -> int:
        """The column of ``key``: one of ``COLUMNS``, or a metric's name."""
        if key in self.columns:
            return self.columns.index(key)
        return self.columns.index(METRIC_PREFIX + key) if METRIC_PREFIX + key in self.columns else -1

    def set_rows(self, rows: list[dict[str, Any]]) -> None:
        """Replace the rows; an unchanged list of runs only repaints (keeps the selection)."""
        self.now = time.time()
        specs = {m.name: m for m in metric_columns([self.metrics_of(r) for r in rows])}
        columns = COLUMNS + tuple(METRIC_PREFIX + name for name in specs)
        if [r["id"] for r in rows] == [r["id"] for r in self.rows] and columns == self.columns:
            self.rows = rows
            self.metric_specs = specs
            if rows:
                self.dataChanged.emit(self.index(0, 0), self.index(len(rows) - 1, len(self.columns) - 1))
            return
        self.beginResetModel()
        self.rows = rows
        self.metric_specs = specs
        self.columns = columns
        self.endResetModel()

    def tick(self) -> None:
        """Repaint the running runs' durations."""
        self.now = time.time()
        column = self.columns.index("duration")
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
        return 0 if parent.isValid() else len(self.columns)

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        flags = super().flags(index)
        if index.isValid() and self.columns[index.column()] == "name":
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
        column = self.columns[index.column()]
        metric = column[len(METRIC_PREFIX):] if column.startswith(METRIC_PREFIX) else ""
        if role == Qt.ItemDataRole.UserRole:  # sort key
            if metric:  # a float (Qt compares numbers, not tuples): ascending puts the best first, runs without it last
                missing, key = sort_key(self.metrics_of(run), metric)
                return math.inf if missing else key
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
            if metric:
                metrics = self.metrics_of(run)
                return metrics.text(metric) if metrics.value(metric) is not None else ""
            return self._text(run, column, role)
        if role == Qt.ItemDataRole.DecorationRole and column == "status":
            return status_icon_for(row_status(run))
        if role == Qt.ItemDataRole.TextAlignmentRole and (column in ("duration", "best") or metric):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            if metric:
                return self._metric_tooltip(run, metric)
            if column == "best" and run.get("monitor"):
                monitor = str(run["monitor"])
                return self.tr("Best validation {metric}").format(metric=metric_title(monitor, self.metrics_of(run).metric(monitor)))
            if column == "name":
                return run["run_dir"]
            if column == "status" and row_status(run) in (FAILED, INTERRUPTED):
                return run_error(run["run_dir"]) or run.get("error") or None
        if role == Qt.ItemDataRole.ForegroundRole and column == "name" and not run.get("name"):
            # An unnamed run shows its id, dimmed, so named runs stand out.
            return QGuiApplication.palette().color(QPalette.ColorRole.PlaceholderText)
        return None

    def _metric_tooltip(self, run: dict[str, Any], name: str) -> str | None:
        metrics = self.metrics_of(run)
        declared = metrics.metric(name)
        if declared is None:
            return self.tr("Runs of {task} do not compute {metric}").format(task=run.get("task") or "?", metric=name)
        which = self.tr("best (the monitor)") if name == metrics.monitor else self.tr("last validation")
        direction = self.tr("higher is better") if declared.higher_is_better else self.tr("lower is better")
        return f"{metric_title(name, declared)}: {which}; {direction}" + (f"\n{declared.help}" if declared.help else "")

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
        metrics = self.metrics_of(run)  # the monitor by the title its column has: "Accuracy 92.5%", never a bare number
        monitor = metrics.monitor
        if run.get("best_metric") is None or not monitor or metrics.value(monitor) is None:
            return MISSING
        return f"{metric_title(monitor, metrics.metric(monitor))} {metrics.text(monitor)}"

    def setData(self, index: ModelIndex, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802
        if role != Qt.ItemDataRole.EditRole or self.columns[index.column()] != "name":
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
    """Rows whose id, name, task, status or folder hold every typed word, and
    whose metrics meet every typed condition (``mae<3``, ``accuracy>=90%``)."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.filter_text = ""  # as typed: a fixed-string filter would escape the < of "mae<3"

    def set_filter_text(self, text: str) -> None:
        if not hasattr(self, "beginFilterChange"):  # PySide6 before 6.10
            self.filter_text = text
            self.invalidateFilter()
            return
        self.beginFilterChange()
        self.filter_text = text
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, source_row: int, source_parent: ModelIndex) -> bool:  # noqa: N802
        needle = self.filter_text
        if not needle.strip():
            return True
        model = self.sourceModel()
        run = model.run_at(source_row)
        words, conditions = split_filter(needle)
        if conditions:
            metrics = model.metrics_of(run)
            if not all(condition.holds(metrics) for condition in conditions):
                return False
        fields = [str(run.get(k) or "") for k in ("id", "name", "task", "status", "run_dir")]
        fields.append(status_title(run.get("status"), run.get("error")))  # what the user reads in the column
        haystack = " ".join(fields).lower()
        return all(word in haystack for word in words)


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

"""Run history: every run in the SQLite index, its curves, and runs still training.

``RunHistoryView`` lists the index (``trainlab.runs.RunStore``), refreshed by
a timer while it is visible, so a run started from the command line shows up
and ticks along.  Selecting a run shows its curves from ``metrics.jsonl`` in
``RunCurvesView``; selecting several overlays them; a run that is still
training is followed by tailing its ``metrics.jsonl`` (``MetricsTail`` reads
only the bytes appended since the last look and holds back a half-written
last line).

pyqtgraph is imported when the curves are first shown, not when this module
is, so the window comes up without it.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any, Sequence

from PySide6.QtCore import (
    QAbstractTableModel,
    QDateTime,
    QLocale,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    QTimer,
    QUrl,
    Signal,
)
from PySide6.QtGui import QColor, QDesktopServices, QGuiApplication, QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from trainlab.api import UsageError
from trainlab.desktop.formatting import format_duration
from trainlab.events import Event, Finished, event_from_json
from trainlab.runs import RunStore

REFRESH_MS = 2000  # the index: cheap to read, and a new run within 2 s feels live
TAIL_MS = 500  # a followed run's metrics.jsonl
# Qualitative colours (Tableau 10) that read on light and dark backgrounds.
RUN_COLORS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")
STATUS_DOTS = {"running": "#2f6fde", "completed": "#2e9d5b", "failed": "#d64545", "cancelled": "#d98a1c"}

ModelIndex = QModelIndex | QPersistentModelIndex


# -- plain helpers (no Qt state) -------------------------------------------------------


class MetricsTail:
    """Reads the events appended to a ``metrics.jsonl`` since the last call.

    A writer may be mid-line: the unterminated tail is kept for the next call
    (the contract: readers tolerate a truncated last line).  A file that got
    shorter was replaced; ``restarted`` tells the caller to start over.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.offset = 0
        self._partial = b""
        self.restarted = False
        self.bad_lines = 0

    def read_new(self) -> list[Event]:
        self.restarted = False
        try:
            size = self.path.stat().st_size
        except OSError:
            return []
        if size < self.offset:
            self.offset, self._partial, self.restarted = 0, b"", True
        if size == self.offset and not self._partial:
            return []
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            chunk = handle.read(size - self.offset)
        self.offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        events = [e for e in (self._parse(line) for line in lines) if e is not None]
        if self._partial:
            # A complete object that only lacks its newline (the writer ended
            # without one) is taken now; a half-written one waits.
            try:
                event = event_from_json(self._partial.decode("utf-8"))
            except (ValueError, TypeError, UnicodeDecodeError):
                pass
            else:
                events.append(event)
                self._partial = b""
        return events

    def _parse(self, line: bytes) -> Event | None:
        if not line.strip():
            return None
        try:
            return event_from_json(line.decode("utf-8"))
        except (ValueError, TypeError, UnicodeDecodeError):
            self.bad_lines += 1  # an unknown event kind from a newer TrainLab, say
            return None


def format_metric(monitor: str | None, value: float | None) -> str:
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "\u2014"
    if monitor == "accuracy" or (monitor or "").endswith("accuracy"):
        return f"{value:.1%}"
    if monitor == "loss":
        return f"{value:.4g}"
    return f"{value:.3f}"


def run_title(run_dir: str) -> str:
    """A run's name, else its id, else its folder name."""
    try:
        data = json.loads((Path(run_dir) / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Path(run_dir).name
    return str(data.get("name") or data.get("id") or Path(run_dir).name)


# -- the table model -------------------------------------------------------------------

COLUMNS = ("status", "name", "task", "started", "duration", "best")


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

    def status_text(self, status: str) -> str:
        return {
            "running": self.tr("Running"),
            "completed": self.tr("Completed"),
            "failed": self.tr("Failed"),
            "cancelled": self.tr("Stopped"),
        }.get(status, status or "?")

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
            if run.get("status") == "running":
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
        if run.get("status") == "running" and run.get("started"):
            return self.now - float(run["started"])
        return run.get("duration")

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        run = self.rows[index.row()]
        column = COLUMNS[index.column()]
        if role == Qt.ItemDataRole.UserRole:  # sort key
            return {
                "status": run.get("status") or "",
                "name": (run.get("name") or run["id"]).lower(),
                "task": run.get("task") or "",
                "started": run.get("started") or 0.0,
                "duration": self._duration(run) or 0.0,
                "best": run.get("best_metric") if run.get("best_metric") is not None else -math.inf,
            }[column]
        if role == Qt.ItemDataRole.UserRole + 1:
            return run
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            if column == "status":
                return self.status_text(run.get("status") or "")
            if column == "name":
                return run.get("name") or ("" if role == Qt.ItemDataRole.EditRole else run["id"])
            if column == "task":
                return run.get("task") or ""
            if column == "started":
                started = run.get("started")
                if not started:
                    return "\u2014"
                moment = QDateTime.fromMSecsSinceEpoch(int(float(started) * 1000))
                return QLocale().toString(moment, QLocale.FormatType.ShortFormat)
            if column == "duration":
                return format_duration(self._duration(run))
            if column == "best":
                return format_metric(run.get("monitor"), run.get("best_metric"))
        if role == Qt.ItemDataRole.DecorationRole and column == "status":
            return status_icon_for(run.get("status") or "")
        if role == Qt.ItemDataRole.TextAlignmentRole and column in ("duration", "best"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == "best" and run.get("monitor"):
                return self.tr("Best validation {metric}").format(metric=run["monitor"])
            if column == "name":
                return run["run_dir"]
            if column == "status" and run.get("status") == "failed":
                return _run_error(run["run_dir"]) or None
        if role == Qt.ItemDataRole.ForegroundRole and column == "name" and not run.get("name"):
            # An unnamed run shows its id, dimmed, so named runs stand out.
            return QGuiApplication.palette().color(QPalette.ColorRole.PlaceholderText)
        return None

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


def _run_error(run_dir: str) -> str:
    try:
        data = json.loads((Path(run_dir) / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(data.get("error") or "")


class _FilterProxy(QSortFilterProxyModel):
    def filterAcceptsRow(self, source_row: int, source_parent: ModelIndex) -> bool:  # noqa: N802
        needle = self.filterRegularExpression().pattern().lower()
        if not needle:
            return True
        run = self.sourceModel().run_at(source_row)
        haystack = " ".join(str(run.get(k) or "") for k in ("id", "name", "task", "status", "run_dir")).lower()
        return all(word in haystack for word in needle.split())


# -- curves ------------------------------------------------------------------------------


class _RunTrace:
    """One run in the curves view: its data, its tail, its plot items."""

    def __init__(self, run_dir: str, color: str) -> None:
        from trainlab.desktop.curves import RunCurves

        self.run_dir = run_dir
        self.title = run_title(run_dir)
        self.color = color
        self.curves = RunCurves()
        self.tail = MetricsTail(Path(run_dir) / "metrics.jsonl")
        self.finished = False
        self.items: dict[str, Any] = {}
        self.seen: dict[str, int] = {}

    def poll(self) -> bool:
        """Read what was appended; True when there is something new to draw."""
        events = self.tail.read_new()
        if self.tail.restarted:
            self.curves.clear()
        if not events:
            return self.tail.restarted
        self.curves.add_events(events)
        if any(isinstance(e, Finished) for e in events):
            self.finished = True
        return True


class RunCurvesView(QWidget):
    """Curves of one run, or several overlaid (one colour per run).

    Plots: loss per step (training smoothed, validation dashed with a marker
    per evaluation), validation accuracy per epoch, and the learning rate.
    Runs that are still training are tailed every ``TAIL_MS``.
    """

    # emitted after new points were drawn (tests and status bars use it)
    updated = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.traces: list[_RunTrace] = []
        self._plots_built = False
        self.legend = QLabel()
        self.legend.setObjectName("curvesLegend")
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.log_scale = QCheckBox(self.tr("Log scale"))
        self.log_scale.setToolTip(self.tr("Show the loss on a logarithmic scale (runs whose losses differ a lot)"))
        self.log_scale.toggled.connect(self._log_scale_toggled)
        self.log_scale.setVisible(False)
        self.empty = QLabel(self.tr("Select a run to see its curves; select several to compare them."))
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        head.addWidget(self.legend, 1)
        head.addWidget(self.log_scale)
        self._layout.addLayout(head)
        self._layout.addWidget(self.empty, 1)
        self.timer = QTimer(self)
        self.timer.setInterval(TAIL_MS)
        self.timer.timeout.connect(self.poll)

    # -- plots (built lazily: pyqtgraph is not imported before the window shows) --
    def _build_plots(self) -> None:
        if self._plots_built:
            return
        import pyqtgraph as pg

        from trainlab.desktop.axes import EpochAxis, GridAxis

        self._pg = pg
        self.view = pg.GraphicsLayoutWidget()
        self.view.setObjectName("historyCurves")

        def axes(bottom=GridAxis):
            return {"left": GridAxis("left"), "bottom": bottom("bottom")}

        self.loss_plot = self.view.addPlot(row=0, col=0, title=self.tr("Loss"), axisItems=axes())
        self.accuracy_plot = self.view.addPlot(row=0, col=1, title=self.tr("Validation accuracy"), axisItems=axes(EpochAxis))
        self.lr_plot = self.view.addPlot(row=0, col=2, title=self.tr("Learning rate"), axisItems=axes())
        self.loss_plot.setLabel("bottom", self.tr("step"))
        self.accuracy_plot.setLabel("bottom", self.tr("epoch"))
        self.lr_plot.setLabel("bottom", self.tr("step"))
        self.accuracy_plot.setYRange(0, 1, padding=0.02)
        self.accuracy_plot.enableAutoRange(y=False)
        self._layout.addWidget(self.view, 1)
        self._plots_built = True
        self.loss_plot.setLogMode(y=self.log_scale.isChecked())
        self.apply_palette()

    def _log_scale_toggled(self, on: bool) -> None:
        if self._plots_built:
            self.loss_plot.setLogMode(y=on)
            self.loss_plot.enableAutoRange()

    def plots(self) -> list[Any]:
        return [self.loss_plot, self.accuracy_plot, self.lr_plot] if self._plots_built else []

    def apply_palette(self) -> None:
        if not self._plots_built:
            return
        from trainlab.desktop.axes import grid_below

        palette = self.palette()
        background = palette.color(QPalette.ColorRole.Base)
        foreground = palette.color(QPalette.ColorRole.Text)
        self.view.setBackground(background)
        for plot in self.plots():
            grid_below(plot, background, 0.2)
            for name in ("left", "bottom"):
                axis = plot.getAxis(name)
                axis.setPen(foreground)
                axis.setTextPen(foreground)
            plot.titleLabel.setText(plot.titleLabel.text, color=foreground.name())

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self.apply_palette()

    # -- runs ---------------------------------------------------------------------
    def show_runs(self, run_dirs: Sequence[str]) -> None:
        """Show these runs (one: its curves; several: overlaid); [] clears."""
        run_dirs = list(dict.fromkeys(str(d) for d in run_dirs))
        if [t.run_dir for t in self.traces] == run_dirs:
            self.poll()
            return
        for trace in self.traces:
            for item in trace.items.values():
                item.getViewBox() and item.getViewBox().removeItem(item)
        self.traces = [_RunTrace(d, RUN_COLORS[i % len(RUN_COLORS)]) for i, d in enumerate(run_dirs)]
        self.empty.setVisible(not self.traces)
        if not self.traces:
            self.legend.clear()
            self.log_scale.setVisible(False)
            if self._plots_built:
                self.view.setVisible(False)
            self.timer.stop()
            return
        self._build_plots()
        self.view.setVisible(True)
        self.log_scale.setVisible(True)
        single = len(self.traces) == 1
        pg = self._pg
        for trace in self.traces:
            color = QColor(trace.color)
            if single:
                faint = QColor(color)
                faint.setAlpha(70)
                trace.items["raw"] = self._curve(self.loss_plot, pg.mkPen(faint, width=1))
            trace.items["smooth"] = self._curve(self.loss_plot, pg.mkPen(color, width=2))
            trace.items["val_loss"] = self.loss_plot.plot(
                [], [], pen=pg.mkPen(color, width=2, style=Qt.PenStyle.DashLine), symbol="o", symbolSize=6,
                symbolBrush=color, symbolPen=color,
            )
            trace.items["accuracy"] = self.accuracy_plot.plot(
                [], [], pen=pg.mkPen(color, width=2), symbol="o", symbolSize=6, symbolBrush=color, symbolPen=color
            )
            trace.items["lr"] = self._curve(self.lr_plot, pg.mkPen(color, width=2))
        self._update_legend()
        self.poll(force=True)
        for plot in self.plots():
            plot.enableAutoRange(x=True)
        self.loss_plot.enableAutoRange()
        self.lr_plot.enableAutoRange()

    def _curve(self, plot, pen):
        item = plot.plot([], [], pen=pen)
        item.setDownsampling(auto=True, method="peak")
        item.setClipToView(True)
        return item

    def _update_legend(self) -> None:
        parts = []
        for trace in self.traces:
            state = "" if trace.finished else " " + self.tr("(live)")
            parts.append(
                f'<span style="color:{trace.color}; font-size:14pt">\u25a0</span>&nbsp;{_html(trace.title)}{state}'
            )
        if len(self.traces) == 1:
            parts.append(self.tr("solid: training loss (smoothed), dashed: validation loss"))
        self.legend.setText("&nbsp;&nbsp;&nbsp;".join(parts))

    def poll(self, force: bool = False) -> bool:
        """Read new events of every shown run; redraw the ones that changed."""
        drawn = False
        for trace in self.traces:
            if (trace.poll() or force) and self._plots_built:
                self._draw(trace)
                drawn = True
        live = any(not t.finished for t in self.traces)
        if live and not self.timer.isActive():
            self.timer.start()
        elif not live:
            self.timer.stop()
        if drawn:
            self._update_legend()
            self.updated.emit()
        return drawn

    def _draw(self, trace: _RunTrace) -> None:
        train, evals = trace.curves.train, trace.curves.evals
        if trace.seen.get("train") != train.version:
            trace.seen["train"] = train.version
            step = train.column("step")
            connect = "finite" if train.nonfinite else "all"
            if "raw" in trace.items:
                trace.items["raw"].setData(step, train.column("loss"), connect=connect)
            trace.items["smooth"].setData(step, train.column("smooth"), connect=connect)
            trace.items["lr"].setData(step, train.column("lr"), connect=connect)
        if trace.seen.get("evals") != evals.version:
            trace.seen["evals"] = evals.version
            trace.items["val_loss"].setData(evals.column("step"), evals.column("loss"), connect="finite")
            trace.items["accuracy"].setData(evals.column("epoch"), evals.column("accuracy"), connect="finite")

    def point_counts(self) -> dict[str, dict[str, int]]:
        """Points drawn per run and curve (what tests check)."""
        out = {}
        for trace in self.traces:
            out[trace.run_dir] = {
                name: (0 if item.xData is None else len(item.xData)) for name, item in trace.items.items()
            }
        return out

    def following(self) -> list[str]:
        return [t.run_dir for t in self.traces if not t.finished]


def _html(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# -- the view -------------------------------------------------------------------------------


class RunHistoryView(QWidget):
    """The run index as a table, with the curves of the selected runs below it.

    Signals: ``runOpened(run_dir)`` on double-click or Enter (the window shows
    its results), ``runsOverlaid(run_dirs)`` when several runs are compared.
    """

    runOpened = Signal(str)
    runsOverlaid = Signal(list)
    runsDeleted = Signal(list)

    def __init__(self, store: RunStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("RunHistoryView")
        self.store = store
        self.model = RunHistoryModel(store, self)
        self.model.renameFailed.connect(self._rename_failed)
        self.proxy = _FilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.proxy.setDynamicSortFilter(True)

        self.filter_edit = QLineEdit()
        self.filter_edit.setObjectName("historyFilter")
        self.filter_edit.setPlaceholderText(self.tr("Filter by name, task or status"))
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.textChanged.connect(self.proxy.setFilterFixedString)
        self.follow_box = QCheckBox(self.tr("Follow new runs"))
        self.follow_box.setToolTip(
            self.tr("Select a run as soon as it starts, also one started from the command line, and follow its curves")
        )
        self.follow_box.setChecked(True)
        self.open_button = QPushButton(self.tr("Open"))
        self.open_button.setToolTip(self.tr("Show the results of the selected run (Enter)"))
        self.open_button.clicked.connect(self.open_current)
        self.compare_button = QPushButton(self.tr("Compare"))
        self.compare_button.setToolTip(self.tr("Overlay the curves of the selected runs"))
        self.compare_button.clicked.connect(self.overlay_selected)
        self.rename_button = QPushButton(self.tr("Rename"))
        self.rename_button.setToolTip(self.tr("Rename the selected run (F2)"))
        self.rename_button.clicked.connect(self.rename_current)
        self.delete_button = QPushButton(self.tr("Delete"))
        self.delete_button.setToolTip(self.tr("Delete the selected runs and their folders (Delete)"))
        self.delete_button.clicked.connect(self.delete_selected)

        self.table = QTableView()
        self.table.setObjectName("historyTable")
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(COLUMNS.index("started"), Qt.SortOrder.DescendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed | QAbstractItemView.EditTrigger.SelectedClicked)
        self.table.setAlternatingRowColors(True)
        self.table.setShowGrid(False)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setHighlightSections(False)
        for column, name in enumerate(COLUMNS):
            mode = QHeaderView.ResizeMode.Stretch if name == "name" else QHeaderView.ResizeMode.ResizeToContents
            header.setSectionResizeMode(column, mode)
        self.table.doubleClicked.connect(lambda index: self._open_row(index.row()))
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)
        for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            shortcut = QShortcut(QKeySequence(key), self.table, context=Qt.ShortcutContext.WidgetShortcut)
            shortcut.activated.connect(self.open_current)
        QShortcut(QKeySequence.StandardKey.Delete, self.table, context=Qt.ShortcutContext.WidgetShortcut).activated.connect(
            self.delete_selected
        )
        QShortcut(QKeySequence(Qt.Key.Key_F2), self.table, context=Qt.ShortcutContext.WidgetShortcut).activated.connect(
            self.rename_current
        )

        self.curves = RunCurvesView()
        self.empty_label = QLabel(
            self.tr("No runs yet. Train a model here or with `trainlab train`; its runs appear in this list.")
        )
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)

        bar = QHBoxLayout()
        bar.addWidget(self.filter_edit, 1)
        bar.addWidget(self.follow_box)
        bar.addSpacing(8)
        for button in (self.open_button, self.compare_button, self.rename_button, self.delete_button):
            bar.addWidget(button)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addLayout(bar)
        top_layout.addWidget(self.table, 1)
        top_layout.addWidget(self.empty_label)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.addWidget(top)
        self.splitter.addWidget(self.curves)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setSizes([280, 420])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter)

        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self._known_ids: set[str] | None = None
        self.refresh()
        self._selection_changed()

    # -- data -----------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-read the index; select a newly started run when following."""
        if self.table.state() == QAbstractItemView.State.EditingState:
            return  # do not pull the row from under the user's editor
        try:
            rows = self.store.list()
        except Exception as exc:  # noqa: BLE001 - a locked or damaged index must not break the window
            self.empty_label.setText(self.tr("Cannot read the run index: {error}").format(error=str(exc)))
            self.empty_label.setVisible(True)
            return
        selected = self.selected_ids()
        self.model.set_rows(rows)
        self.select_ids(selected)
        ids = {r["id"] for r in rows}
        new = [] if self._known_ids is None else [r for r in rows if r["id"] not in self._known_ids]
        self._known_ids = ids
        self.empty_label.setVisible(not rows)
        self.table.setVisible(bool(rows))
        started = [r for r in new if r.get("status") == "running"]
        if started and self.follow_box.isChecked():
            self.select_ids([max(started, key=lambda r: r.get("started") or 0)["id"]])
        self.curves.poll()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        self.refresh()
        self.timer.start()

    def hideEvent(self, event) -> None:  # noqa: N802
        super().hideEvent(event)
        self.timer.stop()

    # -- selection --------------------------------------------------------------------
    def _source_rows(self) -> list[int]:
        rows = {self.proxy.mapToSource(i).row() for i in self.table.selectionModel().selectedRows()}
        return sorted(rows)

    def selected_runs(self) -> list[dict[str, Any]]:
        return [self.model.run_at(r) for r in self._source_rows()]

    def selected_ids(self) -> list[str]:
        return [r["id"] for r in self.selected_runs()]

    def selected_run_dirs(self) -> list[str]:
        return [r["run_dir"] for r in self.selected_runs()]

    def select_ids(self, ids: Sequence[str]) -> None:
        from PySide6.QtCore import QItemSelection, QItemSelectionModel

        selection = QItemSelection()
        first = None
        for run_id in ids:
            row = self.model.row_of(run_id)
            if row < 0:
                continue
            left = self.proxy.mapFromSource(self.model.index(row, 0))
            right = self.proxy.mapFromSource(self.model.index(row, len(COLUMNS) - 1))
            if left.isValid():
                selection.select(left, right)
                first = first or left
        model = self.table.selectionModel()
        if selection.indexes() == model.selection().indexes():
            return
        flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        model.select(selection, flags)
        if first is not None:
            model.setCurrentIndex(first, QItemSelectionModel.SelectionFlag.NoUpdate)
            self.table.scrollTo(first)

    def _selection_changed(self, *_args) -> None:
        runs = self.selected_runs()
        self.open_button.setEnabled(len(runs) == 1)
        self.compare_button.setEnabled(len(runs) >= 2)
        self.rename_button.setEnabled(len(runs) == 1)
        self.delete_button.setEnabled(bool(runs))
        self.curves.show_runs([r["run_dir"] for r in runs])

    # -- actions ---------------------------------------------------------------------------
    def _open_row(self, proxy_row: int) -> None:
        source = self.proxy.mapToSource(self.proxy.index(proxy_row, 0))
        if source.isValid():
            self.runOpened.emit(self.model.run_at(source.row())["run_dir"])

    def open_current(self) -> None:
        index = self.table.currentIndex()
        if index.isValid():
            self._open_row(index.row())

    def overlay_selected(self) -> None:
        dirs = self.selected_run_dirs()
        if len(dirs) >= 2:
            self.curves.show_runs(dirs)
            self.runsOverlaid.emit(dirs)

    def rename_current(self) -> None:
        runs = self.selected_runs()
        if len(runs) != 1:
            return
        row = self.model.row_of(runs[0]["id"])
        index = self.proxy.mapFromSource(self.model.index(row, COLUMNS.index("name")))
        self.table.setCurrentIndex(index)
        self.table.edit(index)

    def rename(self, run_id: str, name: str) -> None:
        """Rename without the editor (scripts, tests)."""
        row = self.model.row_of(run_id)
        if row < 0:
            raise KeyError(run_id)
        self.model.setData(self.model.index(row, COLUMNS.index("name")), name)

    def _rename_failed(self, message: str) -> None:
        QMessageBox.warning(self, self.tr("Rename"), self.tr("The run could not be renamed: {error}").format(error=message))

    def delete_selected(self) -> None:
        runs = self.selected_runs()
        if not runs:
            return
        if len(runs) == 1:
            run = runs[0]
            text = self.tr("Delete the run “{name}”?").format(name=run.get("name") or run["id"])
        else:
            text = self.tr("Delete {count} runs?").format(count=len(runs))
        folders = "\n".join(r["run_dir"] for r in runs[:5]) + ("\n\u2026" if len(runs) > 5 else "")
        box = QMessageBox(self)
        box.setObjectName("confirmDelete")
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle(self.tr("Delete Runs"))
        box.setText(text)
        box.setInformativeText(
            self.tr("Their folders, with checkpoints and trained models, are removed from disk. This cannot be undone.")
        )
        box.setDetailedText(folders)
        delete = box.addButton(self.tr("Delete"), QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        if box.clickedButton() is not delete:
            return
        deleted, errors = [], []
        for run in runs:
            try:
                self.store.delete(run["id"])
                deleted.append(run["run_dir"])
            except (UsageError, OSError) as exc:
                errors.append(str(exc))
        self.curves.show_runs([])
        self.refresh()
        if deleted:
            self.runsDeleted.emit(deleted)
        if errors:
            QMessageBox.warning(self, self.tr("Delete Runs"), "\n".join(errors))

    def _context_menu(self, position) -> None:
        runs = self.selected_runs()
        if not runs:
            return
        menu = QMenu(self)
        if len(runs) == 1:
            menu.addAction(self.tr("Open Results"), self.open_current)
        if len(runs) >= 2:
            menu.addAction(self.tr("Compare Curves"), self.overlay_selected)
        if len(runs) == 1:
            menu.addAction(self.tr("Rename…"), self.rename_current)
            folder = runs[0]["run_dir"]
            menu.addAction(self.tr("Show in Folder"), lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(folder)))
            menu.addAction(self.tr("Copy Folder Path"), lambda: QGuiApplication.clipboard().setText(folder))
        menu.addSeparator()
        menu.addAction(self.tr("Delete…"), self.delete_selected)
        menu.popup(self.table.viewport().mapToGlobal(position))

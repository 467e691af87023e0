"""A sweep's trials: the table, parallel coordinates, learning curves, importance, "train the best".

A thin view of ``trainlab.scheduling.sweep_board.SweepBoard``: sorting, the axes and
lines of the parallel-coordinates plot, the curves and which are dimmed
(pruned trials), the importance (Optuna's PED-ANOVA) and the request that
trains the best configuration are all the board's.  The study is read off
the GUI thread (optuna, the journal, each trial's run.json), again every
``REFRESH_MS`` while a trial is running.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from trainlab.api.errors import UsageError
from trainlab.api.params import ENGINE_PARAMS, resolve
from trainlab.pluginhost.host import registry
from trainlab.runfolder.status import TRIAL_OPEN, TrialState
from trainlab.scheduling.sweep_board import SweepBoard, TrialRow, study_names
from trainlab_desktop.common import background
from trainlab_desktop.plots.live_plots import plot_colors

log = logging.getLogger("trainlab.desktop")

REFRESH_MS = 2000
STATE_COLORS = {"completed": "#4e79a7", "pruned": "#bab0ac", "failed": "#e15759", "running": "#f28e2b", "waiting": "#76b7b2"}
DIM_ALPHA = 70  # a pruned trial's curve and line: there, but behind the others


def _number_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _duration_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


def _load(name: str):
    board = SweepBoard.load(name)
    return board, board.importance()


class SweepView(QWidget):
    """One study at a time, chosen from the studies under the TrainLab home."""

    loaded = Signal(str)  # a study was read and drawn
    bestQueued = Signal(int)  # the queue entry of "train the best configuration"

    def __init__(self, queue_board: Any = None, theme: str = "light", parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("sweep_view")
        self.queue_board = queue_board
        self.colors = plot_colors(theme)
        self.board: SweepBoard | None = None
        self.importance = None
        self.sort_column, self.sort_descending = "trial", False
        self.curve_items: dict[int, pg.PlotDataItem] = {}
        self.parallel_items: dict[int, pg.PlotDataItem] = {}
        self.importance_bars: pg.BarGraphItem | None = None
        self._loading = ""
        self._generation = 0
        self._colormap = pg.colormap.get("viridis")
        self._drawn_study = ""

        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 12, 12, 12)
        top = QHBoxLayout()
        top.addWidget(QLabel(self.tr("Study:"), self))
        self.study_combo = QComboBox(self)
        self.study_combo.setObjectName("study_combo")
        self.study_combo.setMinimumWidth(240)
        self.study_combo.activated.connect(lambda _i: self.show_study(self.study_combo.currentText()))
        top.addWidget(self.study_combo)
        self.refresh_button = QPushButton(self.tr("Refresh"), self)
        self.refresh_button.clicked.connect(self.reload)
        top.addWidget(self.refresh_button)
        self.summary = QLabel(self)
        self.summary.setObjectName("sweep_summary")
        self.summary.setWordWrap(True)
        top.addWidget(self.summary, 1)
        layout.addLayout(top)

        split = QSplitter(Qt.Orientation.Vertical, self)
        upper = QSplitter(Qt.Orientation.Horizontal, split)
        self.table = QTableWidget(0, 0, upper)
        self.table.setObjectName("trials_table")
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        header.setSectionsClickable(True)
        header.setSortIndicatorShown(True)
        header.sectionClicked.connect(self._header_clicked)
        upper.addWidget(self.table)
        side = QWidget(upper)
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        self.importance_plot = self._plot(side, self.tr("Parameter importance"))
        side_layout.addWidget(self.importance_plot, 1)
        self.importance_label = QLabel(side)
        self.importance_label.setObjectName("importance_label")
        self.importance_label.setWordWrap(True)
        self.importance_label.setProperty("role", "muted")
        side_layout.addWidget(self.importance_label)
        best_row = QHBoxLayout()
        self.train_best_button = QPushButton(self.tr("Train the best configuration"), side)
        self.train_best_button.setObjectName("train_best_button")
        self.train_best_button.setToolTip(self.tr("Queue a full run with the best trial's values"))
        self.train_best_button.clicked.connect(self.train_best)
        best_row.addWidget(self.train_best_button)
        self.best_epochs = QSpinBox(side)
        self.best_epochs.setObjectName("best_epochs")
        self.best_epochs.setRange(1, 100_000)
        self.best_epochs.setSuffix(self.tr(" epochs"))
        self.best_epochs.setToolTip(self.tr("Epochs of the full run (the sweep's own by default)"))
        best_row.addWidget(self.best_epochs)
        side_layout.addLayout(best_row)
        self.best_message = QLabel(side)
        self.best_message.setObjectName("best_message")
        self.best_message.setWordWrap(True)
        side_layout.addWidget(self.best_message)
        upper.addWidget(side)
        upper.setSizes([700, 360])
        lower = QWidget(split)
        grid = QGridLayout(lower)
        grid.setContentsMargins(0, 0, 0, 0)
        self.parallel_plot = self._plot(lower, self.tr("Parallel coordinates"))
        self.curves_plot = self._plot(lower, self.tr("Learning curves (pruned trials dimmed)"))
        self.curves_plot.setLabel("bottom", self.tr("epoch"))
        self.curves_plot.getAxis("left").enableAutoSIPrefix(False)
        grid.addWidget(self.parallel_plot, 0, 0)
        grid.addWidget(self.curves_plot, 0, 1)
        split.addWidget(upper)
        split.addWidget(lower)
        split.setSizes([380, 380])
        layout.addWidget(split, 1)

        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self._tick)
        self.timer.start()
        self.fill_studies()
        self._update_best()

    def _plot(self, parent: QWidget, title: str) -> pg.PlotWidget:
        plot = pg.PlotWidget(parent, background=self.colors.background)
        plot.setTitle(title, color=self.colors.foreground)
        plot.showGrid(x=False, y=True, alpha=self.colors.grid_alpha)
        plot.setMenuEnabled(False)
        plot.setMinimumHeight(200)
        return plot

    # -- choosing and loading ----------------------------------------------------------------
    def fill_studies(self) -> list[str]:
        names = study_names()
        current = self.study_combo.currentText()
        self.study_combo.blockSignals(True)
        self.study_combo.clear()
        self.study_combo.addItems(names)
        if current in names:
            self.study_combo.setCurrentText(current)
        self.study_combo.blockSignals(False)
        if not names:
            self.summary.setText(self.tr("No sweep yet: `trainlab sweep TASK --data PATH --space ...` starts one."))
        elif self.board is None and not self._loading:
            self.show_study(names[0])
        return names

    def show_study(self, name: str) -> None:
        if not name:
            return
        if self.study_combo.findText(name) < 0:
            self.fill_studies()
        self.study_combo.setCurrentText(name)
        self._generation += 1
        self._loading = name
        background.start(lambda: _load(name), self._loaded, self._failed, tag=(self._generation, name))

    def reload(self) -> None:
        self.fill_studies()
        if self.board is not None:
            self.show_study(self.board.name)

    def _tick(self) -> None:
        if self.isVisible() and not self._loading and self.board is not None and any(
            r.state in TRIAL_OPEN for r in self.board.rows
        ):
            self.show_study(self.board.name)

    def _loaded(self, tag, result) -> None:
        generation, name = tag
        if generation != self._generation:
            return
        self._loading = ""
        self.board, self.importance = result
        self._draw()
        self.loaded.emit(name)

    def _failed(self, tag, message: str, _tb: str) -> None:
        if tag[0] != self._generation:
            return
        self._loading = ""
        self.summary.setText(self.tr("The study %1 could not be read: %2").replace("%1", tag[1]).replace("%2", message))

    # -- drawing -------------------------------------------------------------------------------
    def _draw(self) -> None:
        board = self.board
        best = board.best()
        counts: dict[str, int] = {}
        for row in board.rows:
            counts[row.state] = counts.get(row.state, 0) + 1
        states = ", ".join(f"{n} {self.state_text(state)}" for state, n in counts.items())
        best_text = (self.tr("best: trial %1, %2 %3").replace("%1", str(best.number)).replace("%2", board.monitor)
                     .replace("%3", _number_text(best.value))) if best else self.tr("no trial completed yet")
        direction = self.tr("higher is better") if board.direction == "maximize" else self.tr("lower is better")
        self.summary.setText(f"{board.task} \u00b7 {board.monitor} ({direction}) \u00b7 {len(board.rows)} trials: {states} \u00b7 {best_text}")
        if board.name != self._drawn_study:  # a reload of the same study keeps what the user set
            self._drawn_study = board.name
            epochs = (board.summary.get("params") or {}).get("epochs")
            self.best_epochs.setValue(int(epochs) if epochs else self._task_epochs(board.task))
        self._fill_table()
        self._draw_parallel()
        self._draw_curves()
        self._draw_importance()
        self._update_best()

    def _fill_table(self) -> None:
        board = self.board
        columns = board.columns()
        self.table.setColumnCount(len(columns))
        headings = {"trial": self.tr("Trial"), "state": self.tr("State"), "gpu": self.tr("GPU"), "duration": self.tr("Duration")}
        self.table.setHorizontalHeaderLabels([headings.get(c, board.monitor if c == "value" else c) for c in columns])
        rows = board.sorted_rows(self.sort_column, self.sort_descending)
        self.table.setRowCount(len(rows))
        best = board.best()
        for r, row in enumerate(rows):
            for c, column in enumerate(columns):
                value = board.cell(row, column)
                if column == "duration":
                    text = _duration_text(value)
                elif column == "value" and value is None and row.last_value is not None:
                    text = self.tr("(%s at epoch %d)") % (_number_text(row.last_value), row.curve[-1][0])
                elif column == "state":
                    text = self.state_text(row.state)
                else:
                    text = _number_text(value)
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, row.number)
                if column == "state":
                    item.setForeground(QColor(STATE_COLORS.get(row.state, self.colors.foreground)))
                    if row.reason:
                        item.setToolTip(row.reason)
                if column == "trial" and row.run_dir:
                    item.setToolTip(row.run_dir)
                if best is not None and row.number == best.number:
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                self.table.setItem(r, c, item)
        index = columns.index(self.sort_column) if self.sort_column in columns else 0
        self.table.horizontalHeader().setSortIndicator(
            index, Qt.SortOrder.DescendingOrder if self.sort_descending else Qt.SortOrder.AscendingOrder
        )

    def state_text(self, state: str) -> str:
        words = {"completed": self.tr("completed"), "pruned": self.tr("pruned"), "failed": self.tr("failed"),
                 "running": self.tr("running"), "waiting": self.tr("waiting")}
        return words.get(state, state)

    def _header_clicked(self, index: int) -> None:
        if self.board is None:
            return
        column = self.board.columns()[index]
        if column == self.sort_column:
            self.sort_descending = not self.sort_descending
        else:
            # the metric starts best first; anything else in ascending order
            self.sort_column = column
            self.sort_descending = column == "value" and self.board.direction == "maximize"
        self._fill_table()

    def sort_by(self, column: str, descending: bool) -> None:
        self.sort_column, self.sort_descending = column, descending
        if self.board is not None:
            self._fill_table()

    def table_order(self) -> list[int]:
        """Trial numbers as the table shows them, top to bottom."""
        return [int(self.table.item(r, 0).data(Qt.ItemDataRole.UserRole)) for r in range(self.table.rowCount())]

    def cell_text(self, number: int, column: str) -> str:
        c = self.board.columns().index(column)
        r = self.table_order().index(number)
        return self.table.item(r, c).text()

    def _pen(self, row: TrialRow, best: TrialRow | None):
        if row.state in (TrialState.COMPLETED, TrialState.RUNNING):
            color = self._value_color(row)
        else:
            color = QColor(STATE_COLORS.get(row.state, self.colors.foreground))
        if row.state == TrialState.PRUNED:
            color.setAlpha(DIM_ALPHA)
        width = 3 if best is not None and row.number == best.number else 1.5
        return pg.mkPen(color, width=width)

    def _value_color(self, row: TrialRow) -> QColor:
        """From the worst value (dark) to the best (bright), so that good regions stand out."""
        values = [v for r in self.board.rows if (v := r.value if r.value is not None else r.last_value) is not None]
        value = row.value if row.value is not None else row.last_value
        if value is None or not values or max(values) == min(values):
            return QColor(STATE_COLORS["completed"])
        share = (value - min(values)) / (max(values) - min(values))
        if self.board.direction != "maximize":
            share = 1.0 - share
        return QColor(self._colormap.map(0.1 + 0.8 * share, mode="qcolor"))

    def _draw_parallel(self) -> None:
        plot = self.parallel_plot.getPlotItem()
        plot.clear()
        self.parallel_items.clear()
        board = self.board
        axes = board.parallel_axes()
        best = board.best()
        xs = list(range(len(axes)))
        for line in board.parallel_lines():
            row = next(r for r in board.rows if r.number == line.number)
            ys = [math.nan if p is None else p for p in line.points]
            item = plot.plot(xs, ys, pen=self._pen(row, best), connect="finite")
            self.parallel_items[line.number] = item
        for x, axis in enumerate(axes):
            plot.addItem(pg.InfiniteLine(pos=x, angle=90, pen=pg.mkPen(self.colors.foreground, width=1)))
            if axis.labels:
                ends = [(i / max(len(axis.labels) - 1, 1), text) for i, text in enumerate(axis.labels)]
                if len(axis.labels) == 1:
                    ends = [(0.5, axis.labels[0])]
            else:
                low, high = axis.low, axis.high
                ends = [(0.0, _axis_text(low, axis.log)), (1.0, _axis_text(high, axis.log))]
            for y, text in ends:
                label = pg.TextItem(text, color=self.colors.foreground, anchor=(0, 0.5))
                label.setPos(x, y)
                plot.addItem(label)
        plot.getAxis("bottom").setTicks([[(x, a.name) for x, a in enumerate(axes)]])
        plot.getAxis("left").setTicks([[(0, "low"), (1, "high")]])
        plot.setYRange(-0.05, 1.05)
        plot.setXRange(-0.2, len(axes) - 0.5)

    def _draw_curves(self) -> None:
        plot = self.curves_plot.getPlotItem()
        plot.clear()
        self.curve_items.clear()
        best = self.board.best()
        plot.setLabel("left", self.board.monitor)
        # pruned trials first, so that the others are drawn over them
        for row, dimmed in sorted(self.board.curves(), key=lambda pair: not pair[1]):
            epochs = [e for e, _ in row.curve]
            values = [v for _, v in row.curve]
            item = plot.plot(epochs, values, pen=self._pen(row, best), symbol="o", symbolSize=5,
                             symbolBrush=self._pen(row, best).color(), name=f"trial {row.number}")
            item.setZValue(-1 if dimmed else 1)
            self.curve_items[row.number] = item

    def curve_alpha(self, number: int) -> int:
        return self.curve_items[number].opts["pen"].color().alpha()

    def _draw_importance(self) -> None:
        plot = self.importance_plot.getPlotItem()
        plot.clear()
        self.importance_bars = None
        importance = self.importance
        if importance is None:
            return
        names = list(importance.values)
        if names:
            heights = [importance.values[n] for n in names]
            self.importance_bars = pg.BarGraphItem(x=list(range(len(names))), height=heights, width=0.6,
                                                   brush=STATE_COLORS["completed"])
            plot.addItem(self.importance_bars)
            plot.getAxis("bottom").setTicks([[(i, n) for i, n in enumerate(names)]])
            plot.setYRange(0, 1)
        text = self.tr("By %s, over the completed trials.") % importance.evaluator
        if importance.message:
            text += " " + importance.message
        self.importance_label.setText(text)

    def importance_shown(self) -> dict[str, float]:
        return dict(self.importance.values) if self.importance is not None else {}

    # -- train the best ------------------------------------------------------------------------
    def _update_best(self) -> None:
        best = self.board.best() if self.board is not None else None
        self.train_best_button.setEnabled(best is not None)
        if best is not None:
            values = ", ".join(f"{k}={_number_text(v)}" for k, v in best.params.items())
            self.train_best_button.setToolTip(self.tr("Queue a full run of trial %1: %2").replace("%1", str(best.number)).replace("%2", values))

    def train_best(self) -> int | None:
        """Queue the best trial's values as a full run; the queue entry's id."""
        if self.board is None:
            return None
        store = self.queue_board.store if self.queue_board is not None else None
        start = self.queue_board.start_scheduler if self.queue_board is not None else True
        try:
            entry = self.board.train_best(store, epochs=self.best_epochs.value(), start=start)
        except UsageError as exc:
            self.best_message.setText(str(exc))
            return None
        best = self.board.best()
        self.best_message.setText(self.tr("Queued %1: trial %2's values for %3 epochs.").replace("%1", str(entry.id))
                                  .replace("%2", str(best.number)).replace("%3", str(self.best_epochs.value())))
        self.bestQueued.emit(entry.id)
        return entry.id

    @staticmethod
    def _task_epochs(task: str) -> int:
        """The task's default epochs, for a sweep that left them at the default."""
        try:
            return int(resolve(registry().task(task).spec, ENGINE_PARAMS, {}, {})["epochs"])
        except Exception:  # noqa: BLE001 - a task no longer installed: any sensible number
            return 10

    def shutdown(self) -> None:
        self.timer.stop()


def _axis_text(value: float | None, log: bool) -> str:
    if value is None:
        return ""
    return f"{10 ** value:.3g}" if log else f"{value:.4g}"

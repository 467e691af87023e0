"""The results of a regression run: predicted against true, the residuals, the worst examples.

The scatter shows the sample of (true, predicted) pairs the report keeps,
with the line y = x where a perfect model's points would lie; the histogram
shows how the errors (predicted - true) spread.  The worst examples are the
ones with the largest errors, as the evaluation listed them; choosing one
marks its point in the scatter.  Image examples show their thumbnails.
"""

from __future__ import annotations

import os

import numpy as np
from PySide6.QtCore import QSize, Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QLabel, QWidget

from trainlab.runfolder.eval_report import RegressionExample
from trainlab.viewmodel.results import RunResults, SplitReport
from trainlab_desktop.common.formatting import MISSING, format_metric
from trainlab_desktop.results.charts import ACCENT, MUTED, WARM, PlotCanvas, brush, pen
from trainlab_desktop.results.widgets import (
    ROW_THUMBNAIL,
    NumberItem,
    ReportPage,
    TableThumbnails,
    metric_rows,
    score_table,
    section_label,
    stacked,
)


def value_text(value: float | None, signed: bool = False) -> str:
    """A value in the target's units: 4 significant digits (a sign for errors)."""
    text = format_metric(None, value)
    if signed and text != MISSING and value is not None and value > 0:
        return "+" + text
    return text


class RegressionPage(ReportPage):
    """Metrics, the scatter of predicted against true, the residual histogram, the worst examples."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("regressionResults")
        self.report: SplitReport | None = None
        self.listed: list[RegressionExample] = []

        self.worst_title = QLabel()
        self.worst_title.setWordWrap(True)
        self.worst_table = score_table("worstExamples", [self.tr("Example"), self.tr("True"), self.tr("Predicted"), self.tr("Error")], ())
        self.worst_table.setIconSize(QSize(ROW_THUMBNAIL, ROW_THUMBNAIL))
        self._thumbs = TableThumbnails(self.worst_table, self)
        self.worst_table.itemSelectionChanged.connect(self._mark_selected)
        self.worst_table.cellDoubleClicked.connect(self._open_example)

        self.canvas = PlotCanvas()
        self.canvas.setObjectName("regressionPlots")
        self.scatter_plot = self.canvas.add_plot(0, 0, self.tr("Predicted against true"), self.tr("true"), self.tr("predicted"))
        self.histogram_plot = self.canvas.add_plot(1, 0, self.tr("Residuals (predicted \u2212 true)"), self.tr("error"),
                                                   self.tr("examples"))
        self.points = self.scatter_plot.plot([], [], pen=None, symbol="o", symbolSize=6, symbolPen=None,
                                             symbolBrush=brush(ACCENT, 210))
        self.identity = self.scatter_plot.plot([], [], pen=pen(MUTED, 1.5, style=Qt.PenStyle.DashLine))
        self.marked = self.scatter_plot.plot([], [], pen=None, symbol="o", symbolSize=12, symbolPen=pen(WARM, 2),
                                             symbolBrush=None)
        self.bars = None
        self.zero_line = None

        left = stacked(section_label(self.tr("Metrics")), self._metrics, section_label(self.tr("Worst examples")), self.worst_title,
                      (self.worst_table, 1))
        self.set_body(left, self.canvas)

    def show_report(self, report: SplitReport, run: RunResults, titles: dict[str, str]) -> None:
        self.report = report
        rows = metric_rows(report, run, "regression")
        rows.append((self.tr("Examples"), format_metric("samples", report.example_count), False))
        target = report.target
        if target.get("mean") is not None:
            rows.append((self.tr("Target mean \u00b1 std"),
                         f"{value_text(target.get('mean'))} \u00b1 {value_text(target.get('std'))}", False))
        if target.get("min") is not None:
            rows.append((self.tr("Target range"),
                         f"{value_text(target.get('min'))} \u2013 {value_text(target.get('max'))}", False))
        self._metrics.set_rows(rows)
        self._draw_scatter(report)
        self._draw_histogram(report)
        self._list_worst(report)

    # -- plots ----------------------------------------------------------------------
    def _draw_scatter(self, report: SplitReport) -> None:
        pairs = np.asarray(report.scatter, dtype=float).reshape(-1, 2)
        pairs = pairs[np.isfinite(pairs).all(axis=1)]
        self.points.setData(pairs[:, 0], pairs[:, 1])
        self.marked.setData([], [])
        if len(pairs):
            low, high = float(pairs.min()), float(pairs.max())
            pad = (high - low) * 0.05 or 1.0
            self.identity.setData([low - pad, high + pad], [low - pad, high + pad])
        else:
            self.identity.setData([], [])
        self.scatter_plot.enableAutoRange()

    def _draw_histogram(self, report: SplitReport) -> None:
        import pyqtgraph as pg

        for item in (self.bars, self.zero_line):
            if item is not None:
                self.histogram_plot.removeItem(item)
        self.bars = self.zero_line = None
        histogram = report.residual_histogram
        if histogram is None or not histogram.counts:
            return
        edges = np.asarray(histogram.edges, dtype=float)
        self.bars = pg.BarGraphItem(x0=edges[:-1], x1=edges[1:], height=list(histogram.counts),
                                    brush=brush(ACCENT, 170), pen=pen(ACCENT, 1))
        self.histogram_plot.addItem(self.bars)
        self.zero_line = pg.InfiniteLine(pos=0.0, angle=90, pen=pen(MUTED, 1.5, style=Qt.PenStyle.DashLine))
        self.histogram_plot.addItem(self.zero_line)
        self.histogram_plot.enableAutoRange()

    def bar_counts(self) -> list[int]:
        """The histogram's bar heights as drawn."""
        return [] if self.bars is None else [int(h) for h in self.bars.opts["height"]]

    # -- worst examples -------------------------------------------------------------------
    def _list_worst(self, report: SplitReport) -> None:
        examples = list(report.worst_examples)
        paths = [e.example for e in examples]
        self.listed = examples
        table = self.worst_table
        table.setSortingEnabled(False)
        table.setRowCount(len(examples))
        self._thumbs.begin(paths)
        for row, example in enumerate(examples):
            item = self._thumbs.first_cell(example.example)
            item.setData(Qt.ItemDataRole.UserRole, row)
            table.setItem(row, 0, item)
            table.setItem(row, 1, NumberItem(value_text(example.true), example.true))
            table.setItem(row, 2, NumberItem(value_text(example.predicted), example.predicted))
            table.setItem(row, 3, NumberItem(value_text(example.error, signed=True), abs(example.error)))
        # Worst first, as the evaluation listed them, until the user sorts by a column.
        table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        table.setSortingEnabled(True)
        self._thumbs.finish(paths)
        if examples:
            shown = self.tr("the {count} largest errors, largest first.").format(count=len(examples))
        else:
            shown = self.tr("this evaluation does not list them.")
        self.worst_title.setText(shown)

    def thumbnails_pending(self) -> int:
        return self._thumbs.pending()

    def _example_at(self, row: int) -> RegressionExample | None:
        item = self.worst_table.item(row, 0)
        index = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        return self.listed[index] if isinstance(index, int) and 0 <= index < len(self.listed) else None

    def _mark_selected(self) -> None:
        rows = sorted({i.row() for i in self.worst_table.selectedIndexes()})
        chosen = [e for e in (self._example_at(r) for r in rows) if e is not None]
        self.marked.setData([e.true for e in chosen], [e.predicted for e in chosen])

    def _open_example(self, row: int, _column: int) -> None:
        example = self._example_at(row)
        if example is not None and os.path.isfile(example.example):
            QDesktopServices.openUrl(QUrl.fromLocalFile(example.example))

"""The results of a run of any other family: its metrics, per split and during training, and its details.

A plugin's own family (a segmentation, a ranking, a detection task) has no
page of its own here; what it declares is enough to show it: a table of each
metric on each evaluated split, one curve per metric over the run's
evaluations (``metrics.jsonl``), the monitored metric's with its best epoch
marked, and below them every typed detail the evaluation reported (tables,
the worst examples, series, figures: ``results.details``), in the order the
task declares them.  A number of the report that is not a declared metric
(a count of windows) is a detail, never listed as a metric.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from trainlab.viewmodel.results import EvalPoint, RunResults, SplitReport, eval_history
from trainlab_desktop.common.formatting import format_metric, metric_title
from trainlab_desktop.results.charts import ACCENT, WARM, PlotCanvas, pen
from trainlab_desktop.results.details import DetailsPanel
from trainlab_desktop.results.widgets import ReportPage, metric_rows, section_label, setup_table, split, stacked

PLOT_COLUMNS = 3


class MetricsPage(ReportPage):
    """The declared metrics of every split in a table, and their curves during training."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("metricsResults")
        self.split_table = QTableWidget(0, 1)
        self.split_table.setObjectName("splitMetrics")
        setup_table(self.split_table)
        self.split_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.split_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.curves_note = QLabel()
        self.curves_note.setWordWrap(True)
        self.curves_note.setProperty("role", "muted")
        self.canvas = PlotCanvas()
        self.canvas.setObjectName("metricCurves")
        self.curves: dict[str, object] = {}  # metric -> its curve
        self.best_markers: dict[str, object] = {}

        self.details = DetailsPanel()
        left = stacked(section_label(self.tr("Metrics")), self._metrics, section_label(self.tr("Every split")), (self.split_table, 1))
        right = stacked(section_label(self.tr("During training (validation)")), self.curves_note, (self.canvas, 1))
        overview = split(Qt.Orientation.Horizontal, left, right, (2, 3), (400, 700))
        self.sections = QSplitter(Qt.Orientation.Vertical)
        self.sections.addWidget(overview)
        self.sections.addWidget(self.details)
        self.sections.setChildrenCollapsible(False)
        self.sections.setStretchFactor(0, 2)
        self.sections.setStretchFactor(1, 3)
        self.sections.setSizes([360, 640])  # the details, where a family has them, get the most room
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.sections)

    def show_report(self, report: SplitReport, run: RunResults, titles: dict[str, str]) -> None:
        family = run.family_of(report)
        rows = metric_rows(report, run, family)
        rows.append((self.tr("Examples"), format_metric("samples", report.samples), False))
        self._metrics.set_rows(rows)
        names = list(dict.fromkeys(n for r in run.reports.values() for n in run.declared_metrics(r)))
        self._fill_splits(run, names, titles)
        self._draw_curves(run, family, names)
        declared = run.spec.detail_specs() if run.spec is not None else ()
        self.details.show_details(report.view_details(declared), run.run_dir)

    def thumbnails_pending(self) -> int:
        return self.details.thumbnails_pending()

    def _fill_splits(self, run: RunResults, names: list[str], titles: dict[str, str]) -> None:
        keys = list(run.reports)
        table = self.split_table
        table.setColumnCount(1 + len(keys))
        table.setHorizontalHeaderLabels([self.tr("Metric"), *(titles.get(k, k) for k in keys)])
        rows = [*names, "loss"] if any(r.loss is not None for r in run.reports.values()) else list(names)
        table.setRowCount(len(rows))
        for row, name in enumerate(rows):
            declared = run.metric_spec(name)
            title = QTableWidgetItem(metric_title(name, declared))
            if name == run.monitor:
                font = title.font()
                font.setBold(True)
                title.setFont(font)
            table.setItem(row, 0, title)
            for column, key in enumerate(keys, start=1):
                value = run.reports[key].value(name)
                item = QTableWidgetItem(format_metric(name, value, declared, detail=True))  # its display and unit
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                table.setItem(row, column, item)
        table.resizeRowsToContents()

    def _draw_curves(self, run: RunResults, family: str, names: list[str]) -> None:
        self.canvas.clear()
        self.curves.clear()
        self.best_markers.clear()
        points = eval_history(run.run_dir)
        if not points:
            self.curves_note.setText(self.tr("This run's metrics.jsonl holds no evaluation to draw."))
            self.curves_note.setVisible(True)
            return
        self.curves_note.setVisible(False)
        epochs = [p.epoch for p in points]
        by_epoch = all(epochs) and len(set(epochs)) == len(epochs)
        xs = epochs if by_epoch else [p.step for p in points]
        best = next((p for p in reversed(points) if p.best), None)
        measured = any(p.loss is not None for p in points)  # no loss plot for a task that measures none (object detection)
        for index, name in enumerate([*names, "loss"] if measured else names):
            declared = run.metric_spec(name, family)
            monitored = name == run.monitor
            title = metric_title(name, declared)
            if monitored:
                title = self.tr("{metric} (monitored)").format(metric=title)
            plot = self.canvas.add_plot(index // PLOT_COLUMNS, index % PLOT_COLUMNS, title,
                                        self.tr("epoch") if by_epoch else self.tr("step"), epochs=by_epoch)
            ys = [_point_value(p, name) for p in points]
            self.curves[name] = plot.plot(xs, ys, pen=pen(ACCENT, 3 if monitored else 1.5), symbol="o", symbolSize=5,
                                          symbolBrush=ACCENT, symbolPen=None, connect="finite")
            if monitored and best is not None:
                x = best.epoch if by_epoch else best.step
                y = best.loss if name == "loss" else best.metrics.get(name)
                if y is not None:
                    self.best_markers[name] = plot.plot([x], [y], pen=None, symbol="star", symbolSize=16,
                                                        symbolBrush=WARM, symbolPen=None)


def _point_value(point: EvalPoint, name: str) -> float:
    """``name``'s value at one evaluation; NaN (a gap in its curve) where it has none."""
    value = point.loss if name == "loss" else point.metrics.get(name)
    return float("nan") if value is None else value

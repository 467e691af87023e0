"""The results of a multi-label run: per-label scores and the examples whose label set is wrong.

Each label has its own precision, recall, F1, support and decision threshold
(a fixed one, or the one ``threshold=auto`` chose on the validation split).
The examples list the ones whose predicted set differs from the true one,
most wrong first, with what was missed and what was added and the top
scores; choosing a label keeps only the examples it is wrong on.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QSize, Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QWidget

from trainlab.runfolder.eval_report import LabelSetExample
from trainlab.viewmodel.results import RunResults, SplitReport
from trainlab_desktop.common.formatting import format_metric
from trainlab_desktop.results.widgets import (
    ROW_THUMBNAIL,
    NumberItem,
    ReportPage,
    TableThumbnails,
    metric_rows,
    score_table,
    section_label,
    setup_table,
    stacked,
)

SCORES_SHOWN = 3


def labels_text(labels: tuple[str, ...]) -> str:
    return ", ".join(labels) if labels else "\u2013"


class MultiLabelPage(ReportPage):
    """Metrics, the per-label table and the examples whose predicted labels are wrong."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("multilabelResults")
        self.report: SplitReport | None = None
        self.listed: list[LabelSetExample] = []

        self.label_table = score_table(
            "labelTable",
            [self.tr("Label"), self.tr("Precision"), self.tr("Recall"), self.tr("F1"), self.tr("Support"), self.tr("Threshold")],
            (1, 2, 3),
        )
        self.label_table.cellDoubleClicked.connect(self._label_row_activated)

        self.label_filter = QComboBox()
        self.label_filter.setObjectName("exampleLabelFilter")
        self.label_filter.setToolTip(self.tr("Only the examples this label is wrong on"))
        self.label_filter.currentIndexChanged.connect(lambda _: self._list_examples())
        self.examples_title = QLabel()
        self.examples_title.setObjectName("examplesTitle")
        self.examples_title.setWordWrap(True)
        self.example_table = QTableWidget(0, 5)
        self.example_table.setObjectName("exampleSets")
        self.example_table.setHorizontalHeaderLabels(
            [self.tr("Example"), self.tr("True"), self.tr("Predicted"), self.tr("Missed / added"), self.tr("Top scores")]
        )
        setup_table(self.example_table)
        self.example_table.setWordWrap(True)
        self.example_table.setIconSize(QSize(ROW_THUMBNAIL, ROW_THUMBNAIL))
        self._thumbs = TableThumbnails(self.example_table, self)
        example_header = self.example_table.horizontalHeader()
        example_header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for index in range(1, 5):
            example_header.setSectionResizeMode(index, QHeaderView.ResizeMode.ResizeToContents)
        self.example_table.cellDoubleClicked.connect(self._open_example)

        left = stacked(section_label(self.tr("Metrics")), self._metrics, section_label(self.tr("Per label")), (self.label_table, 1))
        head = QHBoxLayout()
        head.addWidget(section_label(self.tr("Examples with wrong labels")), 1)
        head.addWidget(self.label_filter)
        self.set_body(left, stacked(head, self.examples_title, (self.example_table, 1)))

    def show_report(self, report: SplitReport, run: RunResults, titles: dict[str, str]) -> None:
        self.report = report
        wrong = [e for e in report.misclassified if isinstance(e, LabelSetExample)]
        rows = metric_rows(report, run, "multilabel")
        rows.append((self.tr("Examples"), format_metric("samples", report.example_count), False))
        rows.append((self.tr("With wrong labels"), format_metric("samples", len(wrong)), False))
        rows.append((self.tr("Labels"), str(len(report.label_names) or len(report.per_label)), False))
        self._metrics.set_rows(rows)
        self._fill_labels(report)
        self.label_filter.blockSignals(True)
        self.label_filter.clear()
        self.label_filter.addItem(self.tr("All labels"), "")
        for name in report.label_names or [str(r.get("label", "")) for r in report.per_label]:
            self.label_filter.addItem(name, name)
        self.label_filter.blockSignals(False)
        self._list_examples()

    def _fill_labels(self, report: SplitReport) -> None:
        table = self.label_table
        table.setSortingEnabled(False)
        table.setRowCount(len(report.per_label))
        for row, entry in enumerate(report.per_label):
            table.setItem(row, 0, QTableWidgetItem(str(entry.get("label", ""))))
            for column, key in ((1, "precision"), (2, "recall"), (3, "f1"), (4, "support"), (5, "threshold")):
                value = entry.get(key)
                if value is None and key == "threshold" and row < len(report.thresholds):
                    value = report.thresholds[row]
                number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
                kind = "score" if key == "threshold" else None
                table.setItem(row, column, NumberItem(format_metric(key, number, kind), number))
        table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        table.setSortingEnabled(True)

    def _label_row_activated(self, row: int, _column: int) -> None:
        index = self.label_filter.findData(self.label_table.item(row, 0).text())
        if index >= 0:
            self.label_filter.setCurrentIndex(index)

    # -- examples ---------------------------------------------------------------
    def _list_examples(self) -> None:
        report = self.report
        if report is None:
            return
        label = self.label_filter.currentData() or ""
        wrong = [e for e in report.misclassified if isinstance(e, LabelSetExample)]
        if label:
            wrong = [e for e in wrong if label in e.missed or label in e.unexpected]
        self.listed = wrong
        paths = [e.example for e in wrong]
        table = self.example_table
        table.setRowCount(len(wrong))
        self._thumbs.begin(paths)
        for row, example in enumerate(wrong):
            table.setItem(row, 0, self._thumbs.first_cell(example.example))
            table.setItem(row, 1, QTableWidgetItem(labels_text(example.true)))
            table.setItem(row, 2, QTableWidgetItem(labels_text(example.predicted)))
            difference = [f"\u2212{name}" for name in example.missed] + [f"+{name}" for name in example.unexpected]
            changed = QTableWidgetItem(" ".join(difference))
            changed.setToolTip(
                self.tr("missed: {missed}\nadded: {added}").format(
                    missed=labels_text(example.missed), added=labels_text(example.unexpected)
                )
            )
            table.setItem(row, 3, changed)
            scores = ", ".join(f"{name} {p:.0%}" for name, p in example.scores[:SCORES_SHOWN])
            table.setItem(row, 4, QTableWidgetItem(scores))
        self._thumbs.finish(paths)
        if label:
            head = self.tr("{count} examples where “{label}” is wrong, most wrong first.").format(count=len(wrong), label=label)
        elif wrong:
            head = self.tr("{count} examples whose predicted labels differ from the true ones, most wrong first.").format(
                count=len(wrong)
            )
        else:
            head = self.tr("No listed example has wrong labels.")
        self.examples_title.setText(head)

    def thumbnails_pending(self) -> int:
        return self._thumbs.pending()

    def _open_example(self, row: int, _column: int) -> None:
        if 0 <= row < len(self.listed) and os.path.isfile(self.listed[row].example):
            QDesktopServices.openUrl(QUrl.fromLocalFile(self.listed[row].example))

"""The results of a classification run: per-class table, confusion matrix, the examples behind a cell.

Clicking a cell of the confusion matrix lists the examples of that (true,
predicted) pair, most confident first: the confident mistakes are the ones
that teach something (a mislabelled image, a missing class, a shortcut the
model learned).
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QSize, Qt, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication, QIcon
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QListView,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from trainlab.viewmodel.results import EvalExample, RunResults, SplitReport, is_image_example
from trainlab_desktop.common.formatting import format_metric
from trainlab_desktop.results.confusion import ConfusionMatrixView
from trainlab_desktop.results.widgets import (
    THUMBNAIL_SIZE,
    NumberItem,
    ReportPage,
    ThumbnailLoader,
    metric_rows,
    placeholder_icon,
    score_table,
    section_label,
    setup_table,
    split,
    stacked,
)

MAX_LISTED = 500  # a cell with thousands of examples: the most confident are what matter


class ClassificationPage(ReportPage):
    """Metrics, per-class scores, the confusion matrix and its examples."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("classificationResults")
        self.report: SplitReport | None = None
        self.listed: list[EvalExample] = []
        self._thumbs = ThumbnailLoader(THUMBNAIL_SIZE, self)
        self._thumbs.ready.connect(self._thumbnail_ready)
        self._thumb_items: dict[str, list[QListWidgetItem]] = {}

        self.class_table = score_table(
            "classTable", [self.tr("Class"), self.tr("Precision"), self.tr("Recall"), self.tr("F1"), self.tr("Support")], (1, 2, 3)
        )
        self.class_table.cellDoubleClicked.connect(self._class_row_activated)

        self.confusion = ConfusionMatrixView()
        self.confusion.cellActivated.connect(self.show_cell)

        self.examples_title = QLabel(self.tr("Click a cell of the confusion matrix to see its examples."))
        self.examples_title.setObjectName("examplesTitle")
        self.examples_title.setWordWrap(True)
        self.image_list = QListWidget()
        self.image_list.setObjectName("exampleImages")
        self.image_list.setViewMode(QListView.ViewMode.IconMode)
        self.image_list.setIconSize(QSize(THUMBNAIL_SIZE, THUMBNAIL_SIZE))
        self.image_list.setGridSize(QSize(THUMBNAIL_SIZE + 28, THUMBNAIL_SIZE + 40))
        self.image_list.setResizeMode(QListView.ResizeMode.Adjust)
        self.image_list.setMovement(QListView.Movement.Static)
        self.image_list.setUniformItemSizes(True)
        self.image_list.setWordWrap(True)
        self.image_list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.image_list.itemActivated.connect(self._open_example)
        self.image_list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.image_list.customContextMenuRequested.connect(self._example_menu)
        self.text_table = QTableWidget(0, 3)
        self.text_table.setObjectName("exampleTexts")
        self.text_table.setHorizontalHeaderLabels([self.tr("Confidence"), self.tr("Predicted"), self.tr("Text")])
        setup_table(self.text_table)
        self.text_table.setWordWrap(True)
        self.text_table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        text_header = self.text_table.horizontalHeader()
        text_header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        text_header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        text_header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.text_table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.text_table.customContextMenuRequested.connect(self._example_menu)
        self.examples_stack = QStackedWidget()
        self.examples_stack.addWidget(self.image_list)
        self.examples_stack.addWidget(self.text_table)

        left = stacked(section_label(self.tr("Metrics")), self._metrics, section_label(self.tr("Per class")), (self.class_table, 1))
        matrix_box = stacked(section_label(self.tr("Confusion matrix")), (self.confusion, 1))
        examples_box = stacked(self.examples_title, (self.examples_stack, 1))
        right = split(Qt.Orientation.Vertical, matrix_box, examples_box, (3, 2), (460, 300))
        self.set_body(left, right, sizes=None)

    def show_report(self, report: SplitReport, run: RunResults, titles: dict[str, str]) -> None:
        self.report = report
        rows = metric_rows(report, run, "classification")
        rows.append((self.tr("Examples"), format_metric("samples", report.example_count), False))
        rows.append((self.tr("Misclassified"), format_metric("samples", report.misclassified_count), False))
        rows.append((self.tr("Classes"), str(len(report.label_names)), False))
        self._metrics.set_rows(rows)
        self._fill_classes(report)
        self.confusion.set_matrix(report.confusion_matrix, report.label_names)
        self.clear_examples()
        # Start on the largest mistake: the first thing worth a look.
        worst = max(
            ((v, i, j) for i, row in enumerate(report.confusion_matrix) for j, v in enumerate(row) if i != j and v),
            default=None,
        )
        if worst is not None:
            self.confusion.select_cell(worst[1], worst[2])

    def _fill_classes(self, report: SplitReport) -> None:
        self.class_table.setSortingEnabled(False)
        self.class_table.setRowCount(len(report.per_class))
        for row, entry in enumerate(report.per_class):
            self.class_table.setItem(row, 0, QTableWidgetItem(str(entry.get("label", ""))))
            for column, key in ((1, "precision"), (2, "recall"), (3, "f1"), (4, "support")):
                value = entry.get(key)
                number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
                self.class_table.setItem(row, column, NumberItem(format_metric(key, number), number))
        # Label order (the order of eval.json) until the user sorts by a column.
        self.class_table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.class_table.setSortingEnabled(True)

    def _class_row_activated(self, row: int, _column: int) -> None:
        label = self.class_table.item(row, 0).text()
        if self.report and label in self.report.label_names:
            index = self.report.label_names.index(label)
            self.confusion.select_cell(index, index)

    # -- examples ---------------------------------------------------------------
    def clear_examples(self) -> None:
        self.listed = []
        self._thumbs.cancel()
        self._thumb_items.clear()
        self.image_list.clear()
        self.text_table.setRowCount(0)
        self.examples_title.setText(self.tr("Click a cell of the confusion matrix to see its examples."))

    def show_cell(self, true_index: int, predicted_index: int) -> None:
        """List the examples behind one confusion-matrix cell, most confident first."""
        report = self.report
        if report is None:
            return
        true_label = report.label_names[true_index]
        predicted = report.label_names[predicted_index]
        examples = report.examples_for(true_label, predicted)
        count = report.cell_count(true_label, predicted)
        self.clear_examples()
        self.listed = examples[:MAX_LISTED]
        # a cell of one example has its own sentence: "{count} examples" said "1 examples"
        if true_index == predicted_index:
            template = self.tr("“{true}” predicted correctly: 1 example") if count == 1 else self.tr(
                "“{true}” predicted correctly: {count} examples"
            )
        else:
            template = self.tr("“{true}” predicted as “{predicted}”: 1 example") if count == 1 else self.tr(
                "“{true}” predicted as “{predicted}”: {count} examples"
            )
        head = template.format(true=true_label, predicted=predicted, count=count)
        if not count:
            note = ""
        elif not examples and true_index == predicted_index and not report.has_correct_list:
            note = self.tr("this evaluation does not list correctly predicted examples.")
        elif not examples:
            note = self.tr("this evaluation does not list them.")
        elif len(self.listed) < count:
            note = self.tr("the {shown} most confident are shown.").format(shown=len(self.listed))
        else:
            note = self.tr("most confident first.")
        self.examples_title.setText(head + (" \u2014 " + note if note else ""))
        images = bool(self.listed) and all(is_image_example(e.example) for e in self.listed[:20])
        if images:
            self._list_images(self.listed)
            self.examples_stack.setCurrentWidget(self.image_list)
        else:
            self._list_texts(self.listed)
            self.examples_stack.setCurrentWidget(self.text_table)

    def _list_images(self, examples: list[EvalExample]) -> None:
        placeholder = placeholder_icon(self.palette())
        for example in examples:
            caption = f"{example.predicted} \u00b7 {example.confidence:.0%}"
            item = QListWidgetItem(placeholder, caption)
            item.setToolTip(
                self.tr("{path}\ntrue: {true}, predicted: {predicted} ({confidence:.1%})").format(
                    path=example.example, true=example.true, predicted=example.predicted, confidence=example.confidence
                )
            )
            item.setData(Qt.ItemDataRole.UserRole, example.example)
            item.setTextAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
            self.image_list.addItem(item)
            self._thumb_items.setdefault(example.example, []).append(item)
        self._thumbs.request([e.example for e in examples])

    def _thumbnail_ready(self, path: str, icon: QIcon) -> None:
        for item in self._thumb_items.get(path, []):
            item.setIcon(icon)

    def thumbnails_pending(self) -> int:
        """How many listed images are still waiting for their thumbnail."""
        return self._thumbs.pending()

    def _list_texts(self, examples: list[EvalExample]) -> None:
        self.text_table.setRowCount(len(examples))
        for row, example in enumerate(examples):
            self.text_table.setItem(row, 0, NumberItem(f"{example.confidence:.1%}", example.confidence))
            self.text_table.setItem(row, 1, QTableWidgetItem(example.predicted))
            text = QTableWidgetItem(example.example)
            text.setToolTip(example.example)
            text.setData(Qt.ItemDataRole.UserRole, example.example)
            self.text_table.setItem(row, 2, text)
        self.text_table.resizeRowsToContents()

    def _open_example(self, item: QListWidgetItem) -> None:
        path = item.data(Qt.ItemDataRole.UserRole)
        if path and os.path.isfile(path):
            QDesktopServices.openUrl(QUrl.fromLocalFile(path))

    def _selected_examples(self) -> list[str]:
        if self.examples_stack.currentWidget() is self.image_list:
            return [i.data(Qt.ItemDataRole.UserRole) for i in self.image_list.selectedItems()]
        rows = sorted({i.row() for i in self.text_table.selectedIndexes()})
        return [self.text_table.item(r, 2).text() for r in rows]

    def _example_menu(self, position) -> None:
        chosen = self._selected_examples()
        if not chosen:
            return
        menu = QMenu(self)
        copy = menu.addAction(self.tr("Copy"))
        copy.triggered.connect(lambda: QGuiApplication.clipboard().setText("\n".join(chosen)))
        if self.examples_stack.currentWidget() is self.image_list:
            reveal = menu.addAction(self.tr("Show in Folder"))
            reveal.triggered.connect(
                lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(Path(chosen[0]).parent)))
            )
        widget = self.examples_stack.currentWidget()
        menu.popup(widget.viewport().mapToGlobal(position))

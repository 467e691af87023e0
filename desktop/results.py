"""Results of a run: metrics, per-class table, confusion matrix, the examples behind a cell.

The state is a plain ``RunResults`` (``results_model.load_results``): the
run's record and its evaluations, read through ``RunDir``; the widgets only
show it.  Clicking a cell of the confusion matrix lists the examples of that
(true, predicted) pair, most confident first: the confident mistakes are the
ones that teach something (a mislabelled image, a missing class, a shortcut
the model learned).
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QSize, Qt, QThreadPool, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication, QIcon, QImage, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListView,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from trainlab.desktop.confusion import ConfusionMatrixView
from trainlab.desktop.formatting import format_metric, status_title
from trainlab.desktop.results_model import EvalExample, ReportSource, RunResults, SplitReport, is_image_example, load_results
from trainlab.desktop.results_widgets import (
    THUMBNAIL_SIZE,
    NumberItem,
    ScoreBarDelegate,
    ThumbnailJob,
    ThumbnailSignals,
    placeholder_icon,
    section_label,
)

MAX_LISTED = 500  # a cell with thousands of examples: the most confident are what matter


class ResultsView(QWidget):
    """Metrics, per-class scores, the confusion matrix and its examples for one run."""

    # emitted after a run's eval.json was shown (its folder)
    loaded = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ResultsView")
        self.run_dir: str | None = None
        self.results: RunResults | None = None
        self.reports: dict[str, SplitReport] = {}
        self.report: SplitReport | None = None
        self.listed: list[EvalExample] = []
        self._thumb_generation = 0
        self._thumb_pool = QThreadPool(self)
        self._thumb_pool.setMaxThreadCount(1)
        self._thumb_signals = ThumbnailSignals(self)  # after the pool, which waits for its job first
        self._thumb_signals.loaded.connect(self._thumbnail_loaded)
        self._thumb_items: dict[str, list[QListWidgetItem]] = {}
        self._thumb_pending: set[str] = set()

        self.title = QLabel()
        self.title.setObjectName("resultsTitle")
        title_font = self.title.font()
        title_font.setPointSizeF(title_font.pointSizeF() * 1.3)
        title_font.setBold(True)
        self.title.setFont(title_font)
        self.subtitle = QLabel()
        self.subtitle.setObjectName("resultsSubtitle")
        self.split_box = QComboBox()
        self.split_box.setToolTip(self.tr("Which evaluation to show"))
        self.split_box.currentIndexChanged.connect(self._split_chosen)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        # A file of the run that could not be read, named, above what could be.
        self.notice = QLabel()
        self.notice.setObjectName("resultsNotice")
        self.notice.setWordWrap(True)
        self.notice.setProperty("role", "warning")
        self.notice.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notice.setVisible(False)

        self.metrics_table = QTableWidget(0, 2)
        self.metrics_table.setObjectName("metricsTable")
        self.metrics_table.setHorizontalHeaderLabels([self.tr("Metric"), self.tr("Value")])
        self._setup_table(self.metrics_table)
        self.metrics_table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.metrics_table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.metrics_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.metrics_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)

        self.class_table = QTableWidget(0, 5)
        self.class_table.setObjectName("classTable")
        self.class_table.setHorizontalHeaderLabels(
            [self.tr("Class"), self.tr("Precision"), self.tr("Recall"), self.tr("F1"), self.tr("Support")]
        )
        self._setup_table(self.class_table)
        self.class_table.setSortingEnabled(True)
        header = self.class_table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in range(1, 5):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        bars = ScoreBarDelegate(self.class_table)
        for column in (1, 2, 3):
            self.class_table.setItemDelegateForColumn(column, bars)
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
        self._setup_table(self.text_table)
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

        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(section_label(self.tr("Metrics")))
        left_layout.addWidget(self.metrics_table)
        left_layout.addWidget(section_label(self.tr("Per class")))
        left_layout.addWidget(self.class_table, 1)

        matrix_box = QWidget()
        matrix_layout = QVBoxLayout(matrix_box)
        matrix_layout.setContentsMargins(0, 0, 0, 0)
        matrix_layout.addWidget(section_label(self.tr("Confusion matrix")))
        matrix_layout.addWidget(self.confusion, 1)
        examples_box = QWidget()
        examples_layout = QVBoxLayout(examples_box)
        examples_layout.setContentsMargins(0, 0, 0, 0)
        examples_layout.addWidget(self.examples_title)
        examples_layout.addWidget(self.examples_stack, 1)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(matrix_box)
        right.addWidget(examples_box)
        right.setStretchFactor(0, 3)
        right.setStretchFactor(1, 2)
        right.setSizes([460, 300])
        right.setChildrenCollapsible(False)

        self.body = QSplitter(Qt.Orientation.Horizontal)
        self.body.addWidget(left)
        self.body.addWidget(right)
        self.body.setStretchFactor(0, 2)
        self.body.setStretchFactor(1, 3)
        self.body.setChildrenCollapsible(False)

        head = QHBoxLayout()
        titles = QVBoxLayout()
        titles.setSpacing(0)
        titles.addWidget(self.title)
        titles.addWidget(self.subtitle)
        head.addLayout(titles, 1)
        self.split_label = QLabel(self.tr("Split:"))
        head.addWidget(self.split_label)
        head.addWidget(self.split_box)

        layout = QVBoxLayout(self)
        layout.addLayout(head)
        layout.addWidget(self.notice)
        layout.addWidget(self.message)
        layout.addWidget(self.body, 1)
        self._show_message(self.tr("No run selected."))

    @staticmethod
    def _setup_table(table: QTableWidget) -> None:
        table.verticalHeader().setVisible(False)
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.setAlternatingRowColors(True)
        table.setShowGrid(False)

    # -- loading ------------------------------------------------------------------
    def load_run(self, run_dir: str) -> bool:
        """Show a run's evaluations; False (with a message in the view) if it has none.

        A damaged run.json or eval.json never raises: the view says which file
        is unreadable and why, and shows whatever else could be read.
        """
        self.run_dir = str(run_dir)
        results = load_results(run_dir)
        self.results = results
        self.title.setText(results.title)
        details = [results.task]
        if results.status and (results.task or not results.problems):
            details.append(status_title(results.status, results.error))
        self.subtitle.setText(" \u00b7 ".join(d for d in details if d))
        problems = "\n".join(self.tr("Cannot read {problem}").format(problem=p) for p in results.problems)
        self.notice.setText(problems)
        self.notice.setVisible(bool(problems))
        self.reports = dict(results.reports)
        if not self.reports:
            if problems and results.has_eval_files:
                self._show_message(problems)
            elif results.running:
                self._show_message(self.tr("This run is still training; results appear when its first evaluation is written."))
            elif results.has_eval_files:
                self._show_message(self.tr("This run's eval.json holds no evaluation of a split."))
            else:
                self._show_message(self.tr("This run has no evaluation (no eval.json)."))
            return False
        self.split_box.blockSignals(True)
        self.split_box.clear()
        for key, source in results.sources.items():
            self.split_box.addItem(self._source_title(source), key)
            if source.data:
                self.split_box.setItemData(self.split_box.count() - 1, source.data, Qt.ItemDataRole.ToolTipRole)
        self.split_box.blockSignals(False)
        several = len(self.reports) > 1
        self.split_box.setVisible(several)
        self.split_label.setVisible(several)
        self.show_split(next(iter(self.reports)))
        self.loaded.emit(self.run_dir)
        return True

    def _split_title(self, split: str) -> str:
        return {"val": self.tr("Validation"), "test": self.tr("Test"), "train": self.tr("Training")}.get(split, split)

    def _source_title(self, source: ReportSource) -> str:
        if source.own:
            return self._split_title(source.split)
        when = source.evaluated_at
        stamp = when.strftime("%Y-%m-%d %H:%M") if when else source.file
        return self.tr("{split}, evaluated {when}").format(split=self._split_title(source.split), when=stamp)

    def _show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(True)
        self.body.setVisible(False)
        self.split_box.setVisible(False)
        self.split_label.setVisible(False)
        self.report = None

    def _split_chosen(self, index: int) -> None:
        split = self.split_box.itemData(index)
        if split:
            self.show_split(split)

    def show_split(self, split: str) -> None:
        report = self.reports[split]
        self.report = report
        self.message.setVisible(False)
        self.body.setVisible(True)
        index = self.split_box.findData(split)
        if index >= 0 and index != self.split_box.currentIndex():
            self.split_box.setCurrentIndex(index)
        self._fill_metrics(report)
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

    def _metric_title(self, name: str) -> str:
        return {
            "accuracy": self.tr("Accuracy"),
            "macro_f1": self.tr("Macro F1"),
            "top5_accuracy": self.tr("Top-5 accuracy"),
            "loss": self.tr("Loss"),
        }.get(name, name)

    def _fill_metrics(self, report: SplitReport) -> None:
        known = ("accuracy", "macro_f1", "top5_accuracy")
        names = [n for n in known if n in report.metrics] + [n for n in report.metrics if n not in known]
        if report.loss is not None:
            names.append("loss")
        rows = [(self._metric_title(n), format_metric(n, report.value(n), detail=True)) for n in names]
        rows.append((self.tr("Examples"), format_metric("samples", report.example_count)))
        rows.append((self.tr("Misclassified"), format_metric("samples", report.misclassified_count)))
        rows.append((self.tr("Classes"), str(len(report.label_names))))
        self.metrics_table.setRowCount(len(rows))
        for row, (name, value) in enumerate(rows):
            self.metrics_table.setItem(row, 0, QTableWidgetItem(name))
            item = QTableWidgetItem(value)
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.metrics_table.setItem(row, 1, item)
        self.metrics_table.resizeRowsToContents()
        height = self.metrics_table.horizontalHeader().height() + sum(
            self.metrics_table.rowHeight(r) for r in range(len(rows))
        )
        self.metrics_table.setFixedHeight(height + 2 * self.metrics_table.frameWidth())

    def _fill_classes(self, report: SplitReport) -> None:
        self.class_table.setSortingEnabled(False)
        self.class_table.setRowCount(len(report.per_class))
        for row, entry in enumerate(report.per_class):
            label = QTableWidgetItem(str(entry.get("label", "")))
            self.class_table.setItem(row, 0, label)
            for column, key in ((1, "precision"), (2, "recall"), (3, "f1"), (4, "support")):
                value = entry.get(key)
                number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
                item = NumberItem(format_metric(key, number), number)
                self.class_table.setItem(row, column, item)
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
        self._thumb_generation += 1
        self._thumb_items.clear()
        self._thumb_pending = set()
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
        if true_index == predicted_index:
            head = self.tr("“{true}” predicted correctly: {count} examples").format(true=true_label, count=count)
        else:
            head = self.tr("“{true}” predicted as “{predicted}”: {count} examples").format(
                true=true_label, predicted=predicted, count=count
            )
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
        paths = []
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
            paths.append(example.example)
        self._thumb_pending = set(paths)
        if paths:
            job = ThumbnailJob(self._thumb_generation, list(dict.fromkeys(paths)), THUMBNAIL_SIZE, self._thumb_signals)
            self._thumb_pool.start(job)

    def _thumbnail_loaded(self, generation: int, path: str, image: QImage) -> None:
        if generation != self._thumb_generation:
            return
        self._thumb_pending.discard(path)
        if image.isNull():  # unreadable now: keep the placeholder, the tooltip names the file
            return
        icon = QIcon(QPixmap.fromImage(image))
        for item in self._thumb_items.get(path, []):
            item.setIcon(icon)

    def thumbnails_pending(self) -> int:
        """How many listed images are still waiting for their thumbnail."""
        return len(self._thumb_pending)

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


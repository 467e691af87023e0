"""Results of a run: metrics, per-class table, confusion matrix, the examples behind a cell.

The state is a plain ``EvalReport`` parsed from the run's ``eval.json``
(CONTRACT.md "Run directory"); the widgets only show it.  Clicking a cell of
the confusion matrix lists the examples of that (true, predicted) pair, most
confident first: the confident mistakes are the ones that teach something
(a mislabelled image, a missing class, a shortcut the model learned).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from PySide6.QtCore import QModelIndex, QObject, QRect, QRunnable, QSize, Qt, QThreadPool, QUrl, Signal
from PySide6.QtGui import QColor, QDesktopServices, QGuiApplication, QIcon, QImage, QImageReader, QPainter, QPalette, QPixmap
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
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from trainlab.desktop.confusion import ConfusionMatrixView

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff", ".ppm", ".pgm"}
THUMBNAIL_SIZE = 96
MAX_LISTED = 500  # a cell with thousands of examples: the most confident are what matter


# -- the plain model -------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    """One evaluated example as eval.json lists it."""

    key: Any
    example: str  # an image path or a text
    true: str
    predicted: str
    confidence: float

    @property
    def correct(self) -> bool:
        return self.true == self.predicted


@dataclass
class EvalReport:
    """One split's evaluation, from eval.json."""

    split: str
    label_names: list[str]
    metrics: dict[str, float]
    per_class: list[dict[str, Any]]
    confusion_matrix: list[list[int]]
    misclassified: list[Example] = field(default_factory=list)
    correct_examples: list[Example] = field(default_factory=list)
    has_correct_list: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any], split: str = "val") -> "EvalReport":
        labels = [str(x) for x in data.get("label_names") or []]
        matrix = [[int(v) for v in row] for row in data.get("confusion_matrix") or []]
        per_class_raw = data.get("per_class") or []
        if isinstance(per_class_raw, Mapping):  # {label: {...}} also accepted
            per_class_raw = [{"label": k, **dict(v)} for k, v in per_class_raw.items()]
        per_class = [dict(row) for row in per_class_raw]
        metrics = {}
        for key in ("accuracy", "macro_f1", "top5_accuracy", "loss", "samples"):
            value = data.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                metrics[key] = float(value)
        correct_key = next((k for k in ("correct_examples", "correct") if k in data), None)
        return cls(
            split=str(data.get("split") or split),
            label_names=labels,
            metrics=metrics,
            per_class=per_class,
            confusion_matrix=matrix,
            misclassified=_examples(data.get("misclassified")),
            correct_examples=_examples(data.get(correct_key)) if correct_key else [],
            has_correct_list=correct_key is not None,
        )

    def examples_for(self, true_label: str, predicted_label: str) -> list[Example]:
        """The listed examples of one confusion-matrix cell, most confident first."""
        source = self.correct_examples if true_label == predicted_label else self.misclassified
        found = [e for e in source if e.true == true_label and e.predicted == predicted_label]
        return sorted(found, key=lambda e: -e.confidence)

    def cell_count(self, true_label: str, predicted_label: str) -> int:
        try:
            return self.confusion_matrix[self.label_names.index(true_label)][self.label_names.index(predicted_label)]
        except (ValueError, IndexError):
            return 0

    @property
    def misclassified_count(self) -> int:
        if self.confusion_matrix:
            return sum(v for i, row in enumerate(self.confusion_matrix) for j, v in enumerate(row) if i != j)
        return len(self.misclassified)


def _examples(items: Any) -> list[Example]:
    out = []
    for item in items or []:
        try:
            confidence = float(item.get("confidence", 0.0))
        except (TypeError, ValueError):
            confidence = 0.0
        out.append(
            Example(
                key=item.get("key"),
                example=str(item.get("example", item.get("key", ""))),
                true=str(item.get("true", "")),
                predicted=str(item.get("predicted", "")),
                confidence=confidence if math.isfinite(confidence) else 0.0,
            )
        )
    return out


def load_reports(eval_json: Path) -> dict[str, EvalReport]:
    """Every split in an eval.json: a flat report, or ``{split: report}``."""
    data = json.loads(Path(eval_json).read_text(encoding="utf-8"))
    if not isinstance(data, Mapping):
        raise ValueError(f"{eval_json}: expected a JSON object")
    if "confusion_matrix" in data or "label_names" in data:
        reports = {str(data.get("split") or "val"): EvalReport.from_json(data)}
        # A flat report may carry other splits beside it (e.g. "test": {...}).
        for key, value in data.items():
            if isinstance(value, Mapping) and "confusion_matrix" in value:
                reports[str(key)] = EvalReport.from_json(value, key)
        return reports
    nested = data.get("splits", data)
    reports = {
        str(key): EvalReport.from_json(value, key)
        for key, value in nested.items()
        if isinstance(value, Mapping) and ("confusion_matrix" in value or "accuracy" in value)
    }
    if not reports:
        raise ValueError(f"{eval_json}: no evaluation found (no confusion_matrix)")
    return reports


def is_image_example(text: str) -> bool:
    return Path(text).suffix.lower() in IMAGE_SUFFIXES and os.path.isfile(text)


# -- thumbnails off the GUI thread ------------------------------------------------


class _ThumbnailSignals(QObject):
    loaded = Signal(int, str, QImage)  # generation, path, image


class _ThumbnailJob(QRunnable):
    """Decode and scale images in a pool thread; QImage is safe there, QPixmap is not."""

    def __init__(self, generation: int, paths: list[str], size: int) -> None:
        super().__init__()
        self.generation = generation
        self.paths = paths
        self.size = size
        self.signals = _ThumbnailSignals()

    def run(self) -> None:
        for path in self.paths:
            reader = QImageReader(path)
            reader.setAutoTransform(True)
            original = reader.size()
            if original.isValid():
                # Let the decoder downscale (JPEG decodes at 1/2, 1/4 ... for free).
                reader.setScaledSize(original.scaled(self.size, self.size, Qt.AspectRatioMode.KeepAspectRatio))
            image = reader.read()
            try:
                self.signals.loaded.emit(self.generation, path, image)
            except RuntimeError:  # the view went away meanwhile
                return


# -- widgets --------------------------------------------------------------------------


class _BarDelegate(QStyledItemDelegate):
    """A 0..1 score with a thin bar under it: scanning a column for the weak class."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        value = index.data(Qt.ItemDataRole.UserRole)
        super().paint(painter, option, index)
        if not isinstance(value, (int, float)):
            return
        painter.save()
        rect = option.rect.adjusted(6, option.rect.height() - 5, -6, -2)
        track = option.palette.color(QPalette.ColorRole.Mid)
        track.setAlpha(60)
        painter.fillRect(rect, track)
        fill = QColor("#2f6fde") if value >= 0.5 else QColor("#e0493e")
        painter.fillRect(QRect(rect.left(), rect.top(), round(rect.width() * max(0.0, min(1.0, value))), rect.height()), fill)
        painter.restore()


class _NumberItem(QTableWidgetItem):
    """Sorts by its number, not its text."""

    def __init__(self, text: str, value: float) -> None:
        super().__init__(text)
        self.setData(Qt.ItemDataRole.UserRole, value)
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.data(Qt.ItemDataRole.UserRole), other.data(Qt.ItemDataRole.UserRole)
        if isinstance(mine, (int, float)) and isinstance(theirs, (int, float)):
            return mine < theirs
        return super().__lt__(other)


class ResultsView(QWidget):
    """Metrics, per-class scores, the confusion matrix and its examples for one run."""

    # emitted after a run's eval.json was shown (its folder)
    loaded = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ResultsView")
        self.run_dir: str | None = None
        self.reports: dict[str, EvalReport] = {}
        self.report: EvalReport | None = None
        self.listed: list[Example] = []
        self._thumb_generation = 0
        self._thumb_pool = QThreadPool(self)
        self._thumb_pool.setMaxThreadCount(1)
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
        bars = _BarDelegate(self.class_table)
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
        left_layout.addWidget(_section(self.tr("Metrics")))
        left_layout.addWidget(self.metrics_table)
        left_layout.addWidget(_section(self.tr("Per class")))
        left_layout.addWidget(self.class_table, 1)

        matrix_box = QWidget()
        matrix_layout = QVBoxLayout(matrix_box)
        matrix_layout.setContentsMargins(0, 0, 0, 0)
        matrix_layout.addWidget(_section(self.tr("Confusion matrix")))
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
        """Show a run's eval.json; False (with a message in the view) if it has none."""
        self.run_dir = str(run_dir)
        run_path = Path(run_dir)
        info = _read_run_json(run_path / "run.json")
        name = info.get("name") or info.get("id") or run_path.name
        self.title.setText(str(name))
        details = [str(info.get("task", ""))]
        status = info.get("status")
        if status:
            details.append(self._status_text(str(status)))
        self.subtitle.setText(" \u00b7 ".join(d for d in details if d))
        eval_json = run_path / "eval.json"
        if not eval_json.is_file():
            if status == "running":
                self._show_message(self.tr("This run is still training; results appear when its first evaluation is written."))
            else:
                self._show_message(self.tr("This run has no evaluation (no eval.json)."))
            return False
        try:
            self.reports = load_reports(eval_json)
        except (OSError, ValueError) as exc:
            self._show_message(self.tr("Cannot read {file}: {error}").format(file=str(eval_json), error=str(exc)))
            return False
        self.split_box.blockSignals(True)
        self.split_box.clear()
        for split in self.reports:
            self.split_box.addItem(self._split_title(split), split)
        self.split_box.blockSignals(False)
        several = len(self.reports) > 1
        self.split_box.setVisible(several)
        self.split_label.setVisible(several)
        self.show_split(next(iter(self.reports)))
        self.loaded.emit(self.run_dir)
        return True

    def _status_text(self, status: str) -> str:
        return {
            "running": self.tr("running"),
            "completed": self.tr("completed"),
            "failed": self.tr("failed"),
            "cancelled": self.tr("stopped"),
        }.get(status, status)

    def _split_title(self, split: str) -> str:
        return {"val": self.tr("Validation"), "test": self.tr("Test"), "train": self.tr("Training")}.get(split, split)

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

    def _fill_metrics(self, report: EvalReport) -> None:
        rows: list[tuple[str, str]] = []
        m = report.metrics
        if "accuracy" in m:
            rows.append((self.tr("Accuracy"), f"{m['accuracy']:.2%}"))
        if "macro_f1" in m:
            rows.append((self.tr("Macro F1"), f"{m['macro_f1']:.3f}"))
        if "top5_accuracy" in m:
            rows.append((self.tr("Top-5 accuracy"), f"{m['top5_accuracy']:.2%}"))
        if "loss" in m:
            rows.append((self.tr("Loss"), f"{m['loss']:.4g}"))
        samples = int(m["samples"]) if "samples" in m else sum(map(sum, report.confusion_matrix))
        rows.append((self.tr("Examples"), f"{samples:,}"))
        rows.append((self.tr("Misclassified"), f"{report.misclassified_count:,}"))
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

    def _fill_classes(self, report: EvalReport) -> None:
        self.class_table.setSortingEnabled(False)
        self.class_table.setRowCount(len(report.per_class))
        for row, entry in enumerate(report.per_class):
            label = QTableWidgetItem(str(entry.get("label", "")))
            self.class_table.setItem(row, 0, label)
            for column, key in ((1, "precision"), (2, "recall"), (3, "f1")):
                value = float(entry.get(key, 0.0) or 0.0)
                self.class_table.setItem(row, column, _NumberItem(f"{value:.3f}", value))
            support = int(entry.get("support", 0) or 0)
            self.class_table.setItem(row, 4, _NumberItem(f"{support:,}", support))
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

    def _list_images(self, examples: list[Example]) -> None:
        placeholder = _placeholder_icon(self.palette())
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
            job = _ThumbnailJob(self._thumb_generation, list(dict.fromkeys(paths)), THUMBNAIL_SIZE)
            job.signals.loaded.connect(self._thumbnail_loaded)
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

    def _list_texts(self, examples: list[Example]) -> None:
        self.text_table.setRowCount(len(examples))
        for row, example in enumerate(examples):
            self.text_table.setItem(row, 0, _NumberItem(f"{example.confidence:.1%}", example.confidence))
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


def _section(text: str) -> QLabel:
    label = QLabel(text)
    # Styled by the window's style sheet (desktop/style.py); bold without it.
    label.setProperty("role", "subheading")
    font = label.font()
    font.setBold(True)
    label.setFont(font)
    label.setContentsMargins(0, 6, 0, 2)
    return label


_placeholders: dict[int, QIcon] = {}


def _placeholder_icon(palette: QPalette) -> QIcon:
    color = palette.color(QPalette.ColorRole.Mid)
    key = color.rgba()
    if key not in _placeholders:
        pixmap = QPixmap(THUMBNAIL_SIZE, THUMBNAIL_SIZE)
        color.setAlpha(50)
        pixmap.fill(color)
        _placeholders[key] = QIcon(pixmap)
    return _placeholders[key]


def _read_run_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


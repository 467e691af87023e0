"""Pieces every page of the results view shares: metric rows, score bars,
sortable numbers, thumbnails, the page base class.

``ThumbnailJob`` decodes and scales the listed images in a pool thread
(QImage is safe there, QPixmap is not), so a cell with hundreds of images
never stalls the window.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QCoreApplication, QModelIndex, QObject, QRect, QRunnable, Qt, QThreadPool, Signal
from PySide6.QtGui import QColor, QIcon, QImage, QImageReader, QPainter, QPalette, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QLayout,
    QSplitter,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from trainlab.viewmodel.results import RunResults, SplitReport, is_image_example
from trainlab_desktop.common.formatting import format_metric, metric_title

THUMBNAIL_SIZE = 96


class ThumbnailSignals(QObject):
    loaded = Signal(int, str, QImage)  # generation, path, image


class ThumbnailJob(QRunnable):
    """Decode and scale images in a pool thread; QImage is safe there, QPixmap is not.

    It reports through the view's ``signals``: the job dies in the pool
    thread, and a QObject of the GUI thread must not die with it there.
    """

    def __init__(self, generation: int, paths: list[str], size: int, signals: ThumbnailSignals) -> None:
        super().__init__()
        self.generation = generation
        self.paths = paths
        self.size = size
        self.signals = signals

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


class ScoreBarDelegate(QStyledItemDelegate):
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


class NumberItem(QTableWidgetItem):
    """Sorts by its number, not its text."""

    def __init__(self, text: str, value: float | None) -> None:
        super().__init__(text)
        self.setData(Qt.ItemDataRole.UserRole, value)
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.data(Qt.ItemDataRole.UserRole), other.data(Qt.ItemDataRole.UserRole)
        if isinstance(mine, (int, float)) and isinstance(theirs, (int, float)):
            return mine < theirs
        return super().__lt__(other)


def section_label(text: str) -> QLabel:
    label = QLabel(text)
    # Styled by the window's style sheet (desktop/trainlab_desktop/common/style.py); bold without it.
    label.setProperty("role", "subheading")
    font = label.font()
    font.setBold(True)
    label.setFont(font)
    label.setContentsMargins(0, 6, 0, 2)
    return label


_placeholders: dict[int, QIcon] = {}


def placeholder_icon(palette: QPalette) -> QIcon:
    color = palette.color(QPalette.ColorRole.Mid)
    key = color.rgba()
    if key not in _placeholders:
        pixmap = QPixmap(THUMBNAIL_SIZE, THUMBNAIL_SIZE)
        color.setAlpha(50)
        pixmap.fill(color)
        _placeholders[key] = QIcon(pixmap)
    return _placeholders[key]



def setup_table(table: QTableWidget) -> None:
    """The look every table of the results view shares."""
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setAlternatingRowColors(True)
    table.setShowGrid(False)


def score_table(object_name: str, headers: list[str], bar_columns: tuple[int, ...]) -> QTableWidget:
    """A sortable table whose first column stretches, the others fit their
    contents, and ``bar_columns`` (scores in [0, 1]) draw as bars."""
    table = QTableWidget(0, len(headers))
    table.setObjectName(object_name)
    table.setHorizontalHeaderLabels(headers)
    setup_table(table)
    table.setSortingEnabled(True)
    header = table.horizontalHeader()
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    for column in range(1, len(headers)):
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
    bars = ScoreBarDelegate(table)
    for column in bar_columns:
        table.setItemDelegateForColumn(column, bars)
    return table


def stacked(*parts: QWidget | QLayout | tuple[QWidget, int]) -> QWidget:
    """A widget stacking ``parts`` top to bottom without margins; ``(widget,
    stretch)`` gives a part the spare height."""
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    for part in parts:
        if isinstance(part, tuple):
            layout.addWidget(part[0], part[1])
        elif isinstance(part, QLayout):
            layout.addLayout(part)
        else:
            layout.addWidget(part)
    return box


def split(orientation: Qt.Orientation, first: QWidget, second: QWidget, stretch: tuple[int, int], sizes: tuple[int, int] | None) -> QSplitter:
    """Two panes that cannot be collapsed, sharing the room as ``stretch`` says."""
    splitter = QSplitter(orientation)
    splitter.addWidget(first)
    splitter.addWidget(second)
    splitter.setStretchFactor(0, stretch[0])
    splitter.setStretchFactor(1, stretch[1])
    if sizes is not None:
        splitter.setSizes(list(sizes))
    splitter.setChildrenCollapsible(False)
    return splitter


def metric_rows(report: SplitReport, run: RunResults, family: str) -> list[tuple[str, str, bool]]:
    """(title, value, monitored) for each metric of ``report``, the task's
    declared ones first, then loss.  Another number the report holds is a
    metric of the classic families (top-5 accuracy) or of a report that names
    none; other families' other numbers are details (``other_numbers``)."""
    monitor = run.monitor
    rows = []
    declared = run.declared_metrics(report)
    others = [n for n in report.metrics if n not in declared and n not in report.other_numbers]
    for name in declared + others:
        declared = run.metric_spec(name, family)
        text = format_metric(name, report.value(name), declared, detail=True)  # its display and unit
        rows.append((metric_title(name, declared), text, name == monitor))
    if report.loss is not None:
        rows.append((metric_title("loss"), format_metric("loss", report.loss, detail=True), monitor == "loss"))
    return rows


class MetricsTable(QTableWidget):
    """Two columns, metric and value, as tall as its rows; the monitored metric in bold."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, 2, parent)
        self.setObjectName("metricsTable")
        self.setHorizontalHeaderLabels(
            [QCoreApplication.translate("ResultsView", "Metric"), QCoreApplication.translate("ResultsView", "Value")]
        )
        setup_table(self)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)

    def set_rows(self, rows: list[tuple[str, str, bool]]) -> None:
        self.setRowCount(len(rows))
        for row, (name, value, strong) in enumerate(rows):
            items = (QTableWidgetItem(name), QTableWidgetItem(value))
            items[1].setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if strong:
                items[0].setToolTip(QCoreApplication.translate("ResultsView", "The metric this run's best weights were chosen by"))
            for column, item in enumerate(items):
                if strong:
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                self.setItem(row, column, item)
        self.resizeRowsToContents()
        height = self.horizontalHeader().height() + sum(self.rowHeight(r) for r in range(len(rows)))
        self.setFixedHeight(height + 2 * self.frameWidth())

    def value(self, title: str) -> str | None:
        """The shown value of the row titled ``title`` (None when there is none)."""
        for row in range(self.rowCount()):
            if self.item(row, 0).text() == title:
                return self.item(row, 1).text()
        return None


class ThumbnailLoader(QObject):
    """Thumbnails of example images, decoded one job at a time off the GUI thread.

    ``request(paths)`` drops what an earlier request still had pending (the
    view moved on) and emits ``ready(path, icon)`` for each image read; an
    unreadable one keeps its placeholder and is no longer pending.
    """

    ready = Signal(str, QIcon)

    def __init__(self, size: int, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.size = size
        self._generation = 0
        self._pending: set[str] = set()
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        # Made after the pool: children go in the order they came, so the pool
        # has waited for a running job before the signals it emits go.
        self._signals = ThumbnailSignals(self)
        self._signals.loaded.connect(self._loaded)

    def request(self, paths: list[str]) -> None:
        self.cancel()
        unique = list(dict.fromkeys(paths))
        self._pending = set(unique)
        if unique:
            self._pool.start(ThumbnailJob(self._generation, unique, self.size, self._signals))

    def cancel(self) -> None:
        self._generation += 1
        self._pending = set()

    def pending(self) -> int:
        return len(self._pending)

    def _loaded(self, generation: int, path: str, image: QImage) -> None:
        if generation != self._generation:
            return
        self._pending.discard(path)
        if not image.isNull():  # unreadable now: keep the placeholder, the tooltip names the file
            self.ready.emit(path, QIcon(QPixmap.fromImage(image)))


class ReportPage(QWidget):
    """The body of the results view for one family: shows one split's report.

    Every page has its metrics table (``metrics_table``) and a body of two
    panes side by side (``set_body``).
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._metrics = MetricsTable()

    def set_body(self, left: QWidget, right: QWidget, sizes: tuple[int, int] | None = (440, 660)) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split(Qt.Orientation.Horizontal, left, right, (2, 3), sizes))

    def show_report(self, report: SplitReport, run: RunResults, titles: dict[str, str]) -> None:
        """Show ``report`` of ``run``; ``titles`` names each of the run's reports (by key)."""
        raise NotImplementedError

    @property
    def metrics_table(self) -> MetricsTable:
        return self._metrics

    def thumbnails_pending(self) -> int:
        return 0


ROW_THUMBNAIL = 48  # pixels: an examples table's first column, when its examples are images


class TableThumbnails(QObject):
    """Thumbnails in the first column of an examples table (multi-label, regression).

    ``begin(paths)`` before filling the table, ``first_cell(path)`` for each
    row's first item (the file's name, its path as tooltip, a placeholder
    icon until the thumbnail is read), ``finish(paths)`` after: it sizes the
    rows and asks for the thumbnails, which land on the items by path.
    """

    def __init__(self, table: QTableWidget, parent: QWidget) -> None:
        super().__init__(parent)
        self.table = table
        self.images = False
        self._placeholder: QIcon | None = None
        self._palette_of = parent
        self._loader = ThumbnailLoader(ROW_THUMBNAIL, self)
        self._loader.ready.connect(self._ready)

    def begin(self, paths: list[str]) -> None:
        self._loader.cancel()
        # a listing of texts must not wait for a check of every row: the first ones tell
        self.images = bool(paths) and all(is_image_example(p) for p in paths[:20])
        self._placeholder = placeholder_icon(self._palette_of.palette()) if self.images else None

    def first_cell(self, path: str) -> QTableWidgetItem:
        item = QTableWidgetItem(os.path.basename(path) if self.images else path)
        item.setToolTip(path)
        if self._placeholder is not None:
            item.setIcon(self._placeholder)
        return item

    def finish(self, paths: list[str]) -> None:
        if self.images:
            self.table.verticalHeader().setDefaultSectionSize(ROW_THUMBNAIL + 6)
            self._loader.request(paths)
        else:
            self.table.resizeRowsToContents()

    def pending(self) -> int:
        return self._loader.pending()

    def _ready(self, path: str, icon: QIcon) -> None:
        for row in range(self.table.rowCount()):
            item = self.table.item(row, 0)
            if item is not None and item.toolTip() == path:
                item.setIcon(icon)

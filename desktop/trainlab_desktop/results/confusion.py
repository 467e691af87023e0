"""A confusion-matrix heatmap whose cells can be clicked.

A table view rather than a plot: every cell is a real item, so it gets
keyboard navigation, tooltips, accessibility and scrolling for many classes
for free.  Rows are true labels, columns predicted labels.  Correct
predictions (the diagonal) are shaded in blue, mistakes in red, each by the
share of its true class, so the errors worth a look stand out at a glance.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPalette, QPen
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionHeader,
    QStyleOptionViewItem,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

CORRECT_COLOR = QColor("#2f6fde")
ERROR_COLOR = QColor("#e0493e")
MAX_LABEL_CHARS = 24

ModelIndex = QModelIndex | QPersistentModelIndex


def _mix(base: QColor, accent: QColor, amount: float) -> QColor:
    amount = max(0.0, min(1.0, amount))
    return QColor(
        round(base.red() + (accent.red() - base.red()) * amount),
        round(base.green() + (accent.green() - base.green()) * amount),
        round(base.blue() + (accent.blue() - base.blue()) * amount),
    )


def _readable_on(color: QColor) -> QColor:
    # Relative luminance (sRGB weights) decides dark or light text.
    luminance = 0.2126 * color.redF() + 0.7152 * color.greenF() + 0.0722 * color.blueF()
    return QColor("#111111") if luminance > 0.55 else QColor("#ffffff")


class ConfusionMatrixModel(QAbstractTableModel):
    """Counts ``matrix[true][predicted]`` with label names; counts or row shares."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._matrix: list[list[int]] = []
        self._labels: list[str] = []
        self._row_totals: list[int] = []
        self.normalized = False
        self.base_color = QColor("#ffffff")

    def set_matrix(self, matrix: Sequence[Sequence[int]], labels: Sequence[str]) -> None:
        matrix = [[int(v) for v in row] for row in matrix]
        if len(matrix) != len(labels) or any(len(row) != len(labels) for row in matrix):
            raise ValueError(f"confusion matrix is not {len(labels)}x{len(labels)} like its label list")
        self.beginResetModel()
        self._matrix = matrix
        self._labels = [str(label) for label in labels]
        self._row_totals = [sum(row) for row in matrix]
        self.endResetModel()

    def set_normalized(self, normalized: bool) -> None:
        if normalized != self.normalized:
            self.normalized = normalized
            self._changed_all()

    def set_base_color(self, color: QColor) -> None:
        self.base_color = QColor(color)
        self._changed_all()

    def _changed_all(self) -> None:
        if self._matrix:
            n = len(self._matrix) - 1
            self.dataChanged.emit(self.index(0, 0), self.index(n, n))

    @property
    def labels(self) -> list[str]:
        return list(self._labels)

    def count(self, true_index: int, predicted_index: int) -> int:
        return self._matrix[true_index][predicted_index]

    def share(self, true_index: int, predicted_index: int) -> float:
        total = self._row_totals[true_index]
        return self._matrix[true_index][predicted_index] / total if total else 0.0

    # -- Qt model --------------------------------------------------------------
    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self._matrix)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self._matrix)

    def cell_color(self, row: int, column: int) -> QColor:
        share = self.share(row, column)
        if share <= 0:
            return QColor(self.base_color)
        # sqrt: a 2% error rate is still visible next to a 95% diagonal.
        amount = 0.12 + 0.88 * math.sqrt(share)
        return _mix(self.base_color, CORRECT_COLOR if row == column else ERROR_COLOR, amount)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, column = index.row(), index.column()
        count = self._matrix[row][column]
        if role == Qt.ItemDataRole.DisplayRole:
            if count == 0:
                return ""
            if self.normalized:
                share = self.share(row, column)
                return f"{share:.0%}" if share >= 0.01 else "<1%"
            return str(count)
        if role == Qt.ItemDataRole.UserRole:
            return count
        if role == Qt.ItemDataRole.BackgroundRole:
            return self.cell_color(row, column)
        if role == Qt.ItemDataRole.ForegroundRole:
            return _readable_on(self.cell_color(row, column))
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            true_label, predicted = self._labels[row], self._labels[column]
            share = self.share(row, column)
            if row == column:
                text = self.tr("{count} of {total} “{true}” examples predicted correctly ({share:.1%})")
            else:
                text = self.tr("{count} of {total} “{true}” examples predicted as “{predicted}” ({share:.1%})")
            return text.format(
                count=count, total=self._row_totals[row], true=true_label, predicted=predicted, share=share
            )
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if section >= len(self._labels):
            return None
        label = self._labels[section]
        if role == Qt.ItemDataRole.DisplayRole:
            return label if len(label) <= MAX_LABEL_CHARS else label[: MAX_LABEL_CHARS - 1] + "\u2026"
        if role == Qt.ItemDataRole.ToolTipRole:
            if orientation == Qt.Orientation.Vertical:
                return self.tr("True label: {label} ({count} examples)").format(
                    label=label, count=self._row_totals[section]
                )
            return self.tr("Predicted label: {label}").format(label=label)
        return None


class _CellDelegate(QStyledItemDelegate):
    """Paints the heat colour even on the selected cell, with a focus frame."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: ModelIndex) -> None:
        painter.save()
        rect = option.rect
        painter.fillRect(rect, index.data(Qt.ItemDataRole.BackgroundRole))
        painter.setPen(index.data(Qt.ItemDataRole.ForegroundRole))
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, index.data(Qt.ItemDataRole.DisplayRole) or "")
        if option.state & QStyle.StateFlag.State_Selected:
            pen = QPen(option.palette.color(QPalette.ColorRole.Highlight), 3)
            pen.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
            painter.setPen(pen)
            painter.drawRect(rect.adjusted(1, 1, -2, -2))
        painter.restore()


class _RotatedHeader(QHeaderView):
    """A horizontal header whose labels read bottom-to-top, so long names fit."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.setSectionsClickable(False)
        self.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)

    def sizeHint(self) -> QSize:  # noqa: N802
        hint = super().sizeHint()
        model = self.model()
        metrics = QFontMetrics(self.font())
        widest = 0
        if model is not None:
            for section in range(model.columnCount()):
                text = model.headerData(section, Qt.Orientation.Horizontal) or ""
                widest = max(widest, metrics.horizontalAdvance(str(text)))
        hint.setHeight(widest + 16)
        return hint

    def paintSection(self, painter: QPainter, rect: QRect, logical_index: int) -> None:  # noqa: N802
        option = QStyleOptionHeader()
        self.initStyleOption(option)
        option.rect = rect
        option.section = logical_index
        painter.save()
        # The section's frame and background only; the text is drawn turned.
        self.style().drawControl(QStyle.ControlElement.CE_HeaderSection, option, painter, self)
        painter.restore()
        model = self.model()
        if model is None:
            return
        text = str(model.headerData(logical_index, Qt.Orientation.Horizontal) or "")
        metrics = QFontMetrics(self.font())
        painter.save()
        painter.setPen(self.palette().color(QPalette.ColorRole.WindowText))
        painter.translate(rect.left() + (rect.width() + metrics.ascent() - metrics.descent()) / 2, rect.bottom() - 8)
        painter.rotate(-90)
        painter.drawText(0, 0, text)
        painter.restore()


def _is_cjk(text: str) -> bool:
    return any("\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" for ch in text)


class _VerticalLabel(QLabel):
    """A label read top to bottom beside the rows.

    Latin text is turned a quarter (read bottom to top); Chinese, Japanese and
    Korean characters are stacked upright, as vertical CJK text is written.
    """

    def _stacked(self) -> list[str] | None:
        text = self.text()
        if not _is_cjk(text):
            return None
        # The arrow says which way the rows run: down, below the characters.
        return [ch for ch in text.replace("\u2190", "").replace("\u2192", "") if not ch.isspace()] + ["\u2193"]

    def paintEvent(self, _event) -> None:  # noqa: N802
        painter = QPainter(self)
        painter.setPen(self.palette().color(QPalette.ColorRole.WindowText))
        stacked = self._stacked()
        if stacked is not None:
            metrics = QFontMetrics(self.font())
            line = metrics.height()
            top = max(0, (self.height() - line * len(stacked)) // 2)
            for index, ch in enumerate(stacked):
                painter.drawText(QRect(0, top + index * line, self.width(), line), Qt.AlignmentFlag.AlignCenter, ch)
            return
        painter.translate(0, self.height())
        painter.rotate(-90)
        painter.drawText(QRect(0, 0, self.height(), self.width()), Qt.AlignmentFlag.AlignCenter, self.text())

    def sizeHint(self) -> QSize:  # noqa: N802
        stacked = self._stacked()
        if stacked is not None:
            metrics = QFontMetrics(self.font())
            width = max(metrics.horizontalAdvance(ch) for ch in stacked) + 4
            return QSize(width, metrics.height() * len(stacked))
        hint = super().sizeHint()
        return QSize(hint.height(), hint.width())

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return self.sizeHint()


class ConfusionMatrixView(QWidget):
    """The heatmap with its axis titles and a counts / percentages switch.

    ``cellActivated(true_index, predicted_index)`` fires on a click, or on
    Enter for the current cell.
    """

    cellActivated = Signal(int, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = ConfusionMatrixModel(self)
        self.table = QTableView()
        self.table.setObjectName("confusionTable")
        self.table.setModel(self.model)
        self.table.setItemDelegate(_CellDelegate(self.table))
        self.table.setHorizontalHeader(_RotatedHeader(self.table))
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectItems)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setCornerButtonEnabled(False)
        self.table.setShowGrid(True)
        self.table.setSizeAdjustPolicy(QAbstractItemView.SizeAdjustPolicy.AdjustToContents)
        self.table.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        vertical = self.table.verticalHeader()
        vertical.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vertical.setDefaultAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.clicked.connect(self._activate)
        self.table.activated.connect(self._activate)

        self.predicted_title = QLabel(self.tr("Predicted label →"))
        self.predicted_title.setAlignment(Qt.AlignmentFlag.AlignLeft)
        self.true_title = _VerticalLabel(self.tr("← True label"))
        for title in (self.predicted_title, self.true_title):
            font = title.font()
            font.setBold(True)
            title.setFont(font)

        # A two-segment switch: which one is on reads clearly in both palettes.
        self.counts_button = QToolButton()
        self.counts_button.setText(self.tr("Counts"))
        self.percent_button = QToolButton()
        self.percent_button.setText(self.tr("% of true label"))
        self.percent_button.setToolTip(self.tr("Each row divided by the number of examples of its true label (recall on the diagonal)"))
        group = QButtonGroup(self)
        group.setExclusive(True)
        for button in (self.counts_button, self.percent_button):
            button.setObjectName("segment")
            button.setCheckable(True)
            button.setAutoRaise(False)
            button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
            group.addButton(button)
        self.counts_button.setChecked(True)
        # Fusion's checked tool button is barely darker in a dark palette.
        self.setStyleSheet(
            "QToolButton#segment { padding: 3px 10px; border: 1px solid palette(mid); background: palette(button); }"
            "QToolButton#segment:checked { background: palette(highlight); color: palette(highlighted-text);"
            " border-color: palette(highlight); }"
        )
        self.percent_button.toggled.connect(self.model.set_normalized)
        self.percent_button.toggled.connect(self.table.viewport().update)
        self.percent_button.toggled.connect(self._fit_cells)
        self.empty_label = QLabel(self.tr("No confusion matrix in this evaluation."))
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setVisible(False)

        switch = QHBoxLayout()
        switch.addWidget(self.predicted_title, 0, Qt.AlignmentFlag.AlignBottom)
        switch.addStretch(1)
        switch.setSpacing(0)
        switch.addWidget(self.counts_button)
        switch.addWidget(self.percent_button)

        grid = QHBoxLayout()
        grid.setSpacing(4)
        grid.addWidget(self.true_title)
        grid.addWidget(self.table, 0, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        grid.addStretch(1)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(switch)
        layout.addLayout(grid, 1)
        layout.addWidget(self.empty_label, 1)

    def set_matrix(self, matrix: Sequence[Sequence[int]], labels: Sequence[str]) -> None:
        self.model.set_base_color(self.palette().color(QPalette.ColorRole.Base))
        self.model.set_matrix(matrix, labels)
        n = len(labels)
        empty = n == 0
        for widget in (self.table, self.predicted_title, self.true_title, self.counts_button, self.percent_button):
            widget.setVisible(not empty)
        self.empty_label.setVisible(empty)
        if empty:
            return
        self._fit_cells()
        self.table.horizontalHeader().updateGeometry()
        self.table.clearSelection()

    def _fit_cells(self) -> None:
        """Square cells as large as the space allows (up to 64 px); scroll past the minimum."""
        n = self.model.rowCount()
        if not n:
            return
        metrics = QFontMetrics(self.table.font())
        largest = max((self.model.count(i, j) for i in range(n) for j in range(n)), default=0)
        widest = metrics.horizontalAdvance("100%" if self.model.normalized else str(largest))
        minimum = max(22, widest + 8)
        vertical, horizontal = self.table.verticalHeader(), self.table.horizontalHeader()
        frame = 2 * self.table.frameWidth()
        room_w = self.width() - self.true_title.sizeHint().width() - vertical.sizeHint().width() - frame - 12
        room_h = (
            self.height()
            - horizontal.sizeHint().height()
            - max(self.predicted_title.sizeHint().height(), self.counts_button.sizeHint().height())
            - frame
            - 16
        )
        side = int(max(minimum, min(64, room_w // n, room_h // n)))
        for header in (horizontal, vertical):
            header.setMinimumSectionSize(min(side, 20))
            header.setDefaultSectionSize(side)
        # Hug the cells (no empty grid area); scroll bars appear only past the room.
        width = vertical.sizeHint().width() + side * n + frame
        height = horizontal.sizeHint().height() + side * n + frame
        scroll = self.table.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        if height > room_h + 16:
            width += scroll
        if width > room_w + 12:
            height += scroll
        self.table.setMaximumSize(width, height)
        # The axis title sits over the columns it names.
        self.predicted_title.setContentsMargins(self.true_title.sizeHint().width() + 4 + vertical.sizeHint().width(), 0, 0, 0)

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._fit_cells()

    def labels(self) -> list[str]:
        return self.model.labels

    def select_cell(self, true_index: int, predicted_index: int) -> None:
        """Select a cell and report it, as a click would."""
        index = self.model.index(true_index, predicted_index)
        self.table.setCurrentIndex(index)
        self._activate(index)

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self.model.set_base_color(self.palette().color(QPalette.ColorRole.Base))

    def _activate(self, index: ModelIndex) -> None:
        if index.isValid():
            self.cellActivated.emit(index.row(), index.column())

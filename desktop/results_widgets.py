"""Small pieces of the results view: score bars, sortable numbers, thumbnails.

``ThumbnailJob`` decodes and scales the listed images in a pool thread
(QImage is safe there, QPixmap is not), so a cell with hundreds of images
never stalls the window.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QObject, QRect, QRunnable, Qt, Signal
from PySide6.QtGui import QColor, QIcon, QImage, QImageReader, QPainter, QPalette, QPixmap
from PySide6.QtWidgets import QLabel, QStyledItemDelegate, QStyleOptionViewItem, QTableWidgetItem

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
    # Styled by the window's style sheet (desktop/style.py); bold without it.
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


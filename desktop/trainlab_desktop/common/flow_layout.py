"""A layout that places its items left to right and wraps them onto more rows.

Rows of controls (Start, Pause, Stop...; the plots' bar) keep one line in a
wide window and wrap where the window is narrow (the 960-pixel minimum, a
laptop screen), instead of squeezing buttons over each other.  Qt ships no
such layout; this follows the shape of its "Flow Layout" example: items
keep their size hints, the layout answers ``heightForWidth`` so that the
parent grows taller as the rows wrap.
"""

from __future__ import annotations

from PySide6.QtCore import QMargins, QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QHBoxLayout, QLayout, QLayoutItem, QWidget


class FlowLayout(QLayout):
    """Items in reading order, wrapped to the width the layout gets."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 6):
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self.setSpacing(spacing)
        self.setContentsMargins(QMargins(0, 0, 0, 0))

    # -- QLayout's item protocol ----------------------------------------------
    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 - Qt override
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 - Qt override
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 - Qt override
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802 - Qt override
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt override
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt override
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802 - Qt override
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        """Every item on one row."""
        hints = [item.sizeHint() for item in self._visible()]
        width = sum(h.width() for h in hints) + self.spacing() * max(0, len(hints) - 1)
        height = max((h.height() for h in hints), default=0)
        m = self.contentsMargins()
        return QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    def minimumSize(self) -> QSize:  # noqa: N802 - Qt override
        """The widest single item: anything wider wraps."""
        size = QSize()
        for item in self._visible():
            size = size.expandedTo(item.minimumSize())
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    # -- placing --------------------------------------------------------------
    def _visible(self) -> list[QLayoutItem]:
        return [item for item in self._items if not item.isEmpty()]

    def _rows(self, width: int) -> list[list[QLayoutItem]]:
        rows: list[list[QLayoutItem]] = [[]]
        used = 0
        for item in self._visible():
            w = item.sizeHint().width()
            if rows[-1] and used + self.spacing() + w > width:
                rows.append([])
                used = 0
            used += (self.spacing() if rows[-1] else 0) + w
            rows[-1].append(item)
        return rows if rows[0] else []

    def _arrange(self, rect: QRect, *, move: bool) -> int:
        """Place the items in ``rect`` (when ``move``); the height they take."""
        m = self.contentsMargins()
        area = rect.marginsRemoved(m)
        y = area.y()
        for row in self._rows(area.width()):
            hints = [item.sizeHint() for item in row]
            height = max(h.height() for h in hints)
            x = area.x()
            for item, hint in zip(row, hints):
                width = min(hint.width(), area.width())  # an item wider than the row gets the row
                if move:
                    top = y + (height - hint.height()) // 2
                    item.setGeometry(QRect(QPoint(x, top), QSize(width, hint.height())))
                x += width + self.spacing()
            y += height + self.spacing()
        return max(0, y - self.spacing() - area.y()) + m.top() + m.bottom()


def group(parent: QWidget, *widgets: QWidget, spacing: int = 6) -> QWidget:
    """Widgets that stay together on one row of a FlowLayout (a label and its field)."""
    box = QWidget(parent)
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(spacing)
    for widget in widgets:
        row.addWidget(widget)
    return box

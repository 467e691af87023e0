"""The input side of try-it, one page per declared input kind (``TaskSpec.input``).

- ``image``: an image well that shows the chosen or dropped image;
- ``file``: the same well for a file of the declared suffixes, showing its name;
- ``text``: a text box (Ctrl+Enter predicts);
- ``row``: one table row, a line of comma-separated values, or one field per
  column when the spec names its columns (``InputSpec.columns``, plugin API
  2.1); Enter predicts.

What a page gives the predictor is one string: a path, a text, or the row as
a CSV line (the form ``trainlab predict`` takes on its command line).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal
from PySide6.QtGui import QImageReader, QPixmap
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from trainlab.api.descriptors import InputSpec

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff")
PREVIEW_SIZE = 280


def input_suffixes(spec: InputSpec) -> tuple[str, ...]:
    """The file suffixes an input of ``spec`` may have (images: the common ones
    unless the task names its own); empty: any file."""
    if spec.suffixes:
        return tuple(s.lower() for s in spec.suffixes)
    return IMAGE_SUFFIXES if spec.kind == "image" else ()


def accepts_file(spec: InputSpec, path: str) -> bool:
    suffixes = input_suffixes(spec)
    return bool(path) and (not suffixes or Path(path).suffix.lower() in suffixes)


def row_columns(spec: InputSpec) -> tuple[str, ...]:
    """The columns of a row input, where the spec names them (none: one CSV line)."""
    return tuple(str(c) for c in spec.columns)


def row_line(values: list[str]) -> str:
    """Field values as one CSV line (quoted where a value holds a comma or quote)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow(values)
    return buffer.getvalue()


class DropArea(QLabel):
    """The well of an image or file input: shows the chosen input, takes a dropped one."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("dropArea")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setWordWrap(True)
        self.setMinimumSize(QSize(PREVIEW_SIZE, PREVIEW_SIZE * 3 // 4))
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet("QLabel#dropArea { border: 2px dashed palette(mid); border-radius: 8px; }")

    def show_image(self, path: str) -> bool:
        reader = QImageReader(path)
        reader.setAutoTransform(True)
        size = reader.size()
        if size.isValid():
            reader.setScaledSize(size.scaled(PREVIEW_SIZE, PREVIEW_SIZE, Qt.AspectRatioMode.KeepAspectRatio))
        image = reader.read()
        self.setToolTip(path)
        if image.isNull():
            return False
        self.setPixmap(QPixmap.fromImage(image))
        return True


class RowEntry(QWidget):
    """One table row: a single line of comma-separated values, or a field per column."""

    entered = Signal()  # Enter in any field

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.fields: list[QLineEdit] = []
        self.columns: tuple[str, ...] = ()
        self._layout = QFormLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)

    def configure(self, spec: InputSpec, placeholder: str) -> None:
        while self._layout.rowCount():
            self._layout.removeRow(0)
        self.columns = row_columns(spec)
        self.fields = []
        for column in self.columns or ("",):
            edit = QLineEdit(self)
            edit.setObjectName("tryRowField")
            edit.returnPressed.connect(self.entered.emit)
            if column:
                self._layout.addRow(column, edit)
            else:
                edit.setPlaceholderText(placeholder)
                self._layout.addRow(edit)
            self.fields.append(edit)

    def value(self) -> str:
        if not self.columns:
            return self.fields[0].text().strip() if self.fields else ""
        values = [f.text().strip() for f in self.fields]
        return row_line(values) if any(values) else ""

    def set_value(self, line: str) -> None:
        if not self.columns:
            if self.fields:
                self.fields[0].setText(line)
            return
        values = next(csv.reader([line]), [])
        for edit, value in zip(self.fields, values + [""] * len(self.fields)):
            edit.setText(value)


class TextEntry(QPlainTextEdit):
    """The text box; Ctrl+Enter asks for a prediction."""

    entered = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("tryText")
        # An event filter, not a QShortcut: the text edit claims Ctrl+Return
        # for itself (ShortcutOverride), so a shortcut would never fire.
        self.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if (
            watched is self
            and event.type() == QEvent.Type.KeyPress
            and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
            and event.modifiers() & Qt.KeyboardModifier.ControlModifier
        ):
            self.entered.emit()
            return True
        return super().eventFilter(watched, event)


def page(widget: QWidget) -> QWidget:
    holder = QWidget()
    layout = QVBoxLayout(holder)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addWidget(widget, 1)
    return holder

"""The muted, centred line a page shows where it has nothing yet ("No run yet")."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget


def placeholder(text: str, parent: QWidget) -> QWidget:
    label = QLabel(text, parent)
    label.setProperty("align", "center")  # STYLE_SHEET: no Qt enum before the window shows
    label.setWordWrap(True)
    label.setProperty("role", "muted")
    return label

"""The log panel, and the log file in the user log dir that mirrors it.

Everything goes through Python ``logging`` (logger ``trainlab``): the window's
own messages, and each run's ``Log`` events.  ``trainlab.system.logs.setup_logging``
(called by the CLI and by ``run_app``) writes the same records to the rotating
``trainlab.log`` in ``trainlab.system.paths.log_dir()``; ``QtLogHandler`` hands
records to the panel through a queued signal, so logging from the worker or a
background check never touches a widget off the GUI thread.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QObject, QUrl, Signal
from PySide6.QtGui import QColor, QDesktopServices, QFontDatabase, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from trainlab.system.paths import log_dir

LOG_FILE_NAME = "trainlab.log"
MAX_LINES = 5000


class _Bridge(QObject):
    record = Signal(int, str)


class QtLogHandler(logging.Handler):
    """A logging handler that forwards formatted records to the GUI thread."""

    def __init__(self) -> None:
        super().__init__()
        self.bridge = _Bridge()
        self.setFormatter(logging.Formatter("%(asctime)s  %(levelname)s  %(message)s", "%H:%M:%S"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.bridge.record.emit(record.levelno, self.format(record))
        except RuntimeError:  # the panel is gone (shutdown)
            pass
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)


def log_file_path() -> Path:
    """The file ``trainlab.system.logs.setup_logging`` writes (the panel's twin)."""
    return log_dir() / LOG_FILE_NAME


class LogPanel(QWidget):
    """Read-only view of the log with a level filter."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 4)
        bar = QHBoxLayout()
        bar.addWidget(QLabel(self.tr("Show:"), self))
        self.level = QComboBox(self)
        self.level.addItem(self.tr("Everything"), logging.DEBUG)
        self.level.addItem(self.tr("Information"), logging.INFO)
        self.level.addItem(self.tr("Warnings and errors"), logging.WARNING)
        self.level.setCurrentIndex(1)
        self.level.currentIndexChanged.connect(lambda _: self._rerender())
        bar.addWidget(self.level)
        bar.addStretch(1)
        self.open_button = QPushButton(self.tr("Open log folder"), self)
        self.open_button.clicked.connect(self.open_folder)
        self.clear_button = QPushButton(self.tr("Clear"), self)
        self.clear_button.clicked.connect(self.clear)
        bar.addWidget(self.open_button)
        bar.addWidget(self.clear_button)
        layout.addLayout(bar)
        self.text = QPlainTextEdit(self)
        self.text.setObjectName("log_text")
        self.text.setReadOnly(True)
        self.text.setMaximumBlockCount(MAX_LINES)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        layout.addWidget(self.text)
        self.handler = QtLogHandler()
        self.handler.setLevel(logging.DEBUG)
        # direct from the GUI thread, queued from any other (the bridge lives here)
        self.handler.bridge.record.connect(self.append)
        self.lines: list[tuple[int, str]] = []

    def attach(self, logger_name: str = "trainlab") -> None:
        logger = logging.getLogger(logger_name)
        if logger.getEffectiveLevel() > logging.INFO:
            # without trainlab.system.logs.setup_logging (tests, embedding) the
            # logger would drop the information the panel is for
            logger.setLevel(logging.INFO)
        logger.addHandler(self.handler)

    def detach(self, logger_name: str = "trainlab") -> None:
        logging.getLogger(logger_name).removeHandler(self.handler)

    def append(self, level: int, line: str) -> None:
        self.lines.append((level, line))
        if len(self.lines) > MAX_LINES:
            del self.lines[: len(self.lines) - MAX_LINES]
        if level < int(self.level.currentData()):
            return
        cursor = self.text.textCursor()
        at_end = self.text.verticalScrollBar().value() >= self.text.verticalScrollBar().maximum() - 2
        fmt = QTextCharFormat()
        if level >= logging.ERROR:
            fmt.setForeground(QColor("#e5534b"))
        elif level >= logging.WARNING:
            fmt.setForeground(QColor("#c98a00"))
        cursor.movePosition(QTextCursor.MoveOperation.End)
        if not self.text.document().isEmpty():
            cursor.insertBlock()
        cursor.insertText(line, fmt)
        if at_end:
            self.text.verticalScrollBar().setValue(self.text.verticalScrollBar().maximum())

    def _rerender(self) -> None:
        lines = list(self.lines)
        self.text.clear()
        self.lines.clear()
        for level, line in lines:
            self.append(level, line)

    def clear(self) -> None:
        self.lines.clear()
        self.text.clear()

    def plain_text(self) -> str:
        return self.text.toPlainText()

    def open_folder(self) -> None:
        folder = log_dir()
        folder.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))

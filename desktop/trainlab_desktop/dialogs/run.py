"""The two questions a run makes the window ask: why it failed, and whether to stop it to quit.

Both are window-modal or modeless boxes opened with ``open()``, never
``exec()``: the run (and the event loop) goes on while they show.
"""

from __future__ import annotations

from typing import Callable

from PySide6 import QtCore
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMessageBox, QWidget


class RunDialogs(QObject):
    """Opens the boxes over ``parent``; ``error_box`` and ``close_box`` are the ones showing."""

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.parent_widget = parent
        self.error_box: QMessageBox | None = None
        self.close_box: QMessageBox | None = None

    def show_error(self, message: str, details: str, *, show: bool = True) -> QMessageBox:
        """The run failed: ``message``, with the traceback as details (``show=False``: kept, not opened)."""
        box = QMessageBox(QMessageBox.Icon.Critical, self.tr("The run failed"), message,
                          QMessageBox.StandardButton.Close, self.parent_widget)
        box.setObjectName("run_error_box")
        box.setInformativeText(self.tr("The window stays usable: fix the cause and start again. The details are in the log panel."))
        if details:
            box.setDetailedText(details)
        box.setWindowModality(QtCore.Qt.WindowModality.NonModal)
        box.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        if show:
            box.open()
        self.error_box = box
        return box

    def ask_stop_and_quit(self, stop_and_quit: Callable[[], None]) -> QMessageBox:
        """A run is in progress: stop it and quit (``stop_and_quit``), or cancel."""
        box = QMessageBox(QMessageBox.Icon.Question, self.tr("Stop the run and quit?"), self.tr("A run is in progress."),
                          QMessageBox.StandardButton.NoButton, self.parent_widget)
        box.setObjectName("close_box")
        box.setInformativeText(
            self.tr("TrainLab stops it after the current step and keeps its last checkpoint, so it can be continued later.")
        )
        quit_button = box.addButton(self.tr("Stop and quit"), QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setWindowModality(QtCore.Qt.WindowModality.WindowModal)

        def answered(_result: int) -> None:
            if box.clickedButton() is quit_button:
                stop_and_quit()
            self.close_box = None

        box.finished.connect(answered)
        self.close_box = box
        box.open()
        return box

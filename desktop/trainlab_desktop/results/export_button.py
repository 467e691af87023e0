"""Export a text-generation run for llama.cpp and Ollama from its results page.

The button is offered for a run of the text-generation family whose folder
holds its exported ``model/``; it writes ``model.gguf`` and an Ollama
``Modelfile`` beside it, as ``trainlab export RUN --format gguf`` does, in a
background thread (a 7B model takes minutes and gigabytes to convert).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QMenu, QToolButton, QWidget

from trainlab_desktop.common import background

GENERATIVE_FAMILY = "text-generation"


def _export(run_dir: str, quant: str) -> Any:
    from trainlab.models.gguf.export import export_gguf  # numpy and gguf: only when asked

    return export_gguf(run_dir, quant=quant)


class GGUFExportButton(QToolButton):
    """"Export for llama.cpp / Ollama": a menu of the two quantisations."""

    # what the export said, for the page to show: (text, failed)
    reported = Signal(str, bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("export_gguf")
        self.setText(self.tr("Export for llama.cpp / Ollama"))
        self.setToolTip(self.tr("Write model.gguf and an Ollama Modelfile beside the run's model"))
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self)
        self.f16_action = menu.addAction(self.tr("GGUF, 16-bit (as trained)"))
        self.q8_action = menu.addAction(self.tr("GGUF, 8-bit q8_0 (half the size)"))
        self.f16_action.triggered.connect(lambda: self.export("f16"))
        self.q8_action.triggered.connect(lambda: self.export("q8_0"))
        self.setMenu(menu)
        self.run_dir = ""
        self.busy = False  # an export is being written
        self.setVisible(False)

    def offer(self, run_dir: str, family: str) -> None:
        """Shown for a text-generation run that has its ``model/`` folder."""
        usable = family == GENERATIVE_FAMILY and (Path(run_dir) / "model" / "config.json").is_file()
        self.run_dir = run_dir if usable else ""
        self.setVisible(usable)

    def export(self, quant: str) -> None:
        if not self.run_dir or self.busy:
            return
        self.busy = True
        self.setEnabled(False)
        self.reported.emit(self.tr("Writing model.gguf ({quant})\u2026").format(quant=quant), False)
        background.start(functools.partial(_export, self.run_dir, quant), self._done, self._failed)

    def _done(self, _tag: Any, result: Any) -> None:
        self.busy = False
        self.setEnabled(True)
        folder = Path(result.gguf).parent
        self.reported.emit(
            self.tr("Wrote {gguf} and its Modelfile: 'ollama create NAME -f Modelfile' in {folder} adds it to Ollama.").format(
                gguf=result.gguf, folder=folder
            ),
            False,
        )

    def _failed(self, _tag: Any, message: str, _details: str) -> None:
        self.busy = False
        self.setEnabled(True)
        self.reported.emit(self.tr("The GGUF export failed: {message}").format(message=message), True)

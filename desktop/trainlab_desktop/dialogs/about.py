"""The About box: name, version, and what this installation runs on.

The details (Python, Qt, torch if it is already loaded, folders) can be copied
in one click for a bug report.  torch is never imported just to show a
version: opening About must stay instant.
"""

from __future__ import annotations

import platform
import sys

from PySide6 import __version__ as PYSIDE_VERSION
from PySide6.QtCore import Qt, qVersion
from PySide6.QtGui import QGuiApplication, QPixmap
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from trainlab import PLUGIN_API_VERSION, __version__
from trainlab.system import paths
from trainlab_resources import resource_path


def system_details() -> str:
    lines = [
        f"TrainLab {__version__} (plugin API {PLUGIN_API_VERSION[0]}.{PLUGIN_API_VERSION[1]})",
        f"Python {platform.python_version()} ({sys.executable})",
        f"PySide6 {PYSIDE_VERSION}, Qt {qVersion()} ({QGuiApplication.platformName()})",
        f"{platform.system()} {platform.release()} ({platform.machine()})",
    ]
    torch = sys.modules.get("torch")
    if torch is not None:
        cuda = getattr(getattr(torch, "version", None), "cuda", None)
        lines.append(f"torch {torch.__version__}" + (f" (CUDA {cuda})" if cuda else " (CPU build)"))
    lines += [
        f"data: {paths.data_dir()}",
        f"settings: {paths.settings_path()}",
        f"logs: {paths.log_dir()}",
    ]
    return "\n".join(lines)


def app_icon_path(size: int = 128) -> str:
    return str(resource_path("icons", f"trainlab-{size}.png"))


class AboutDialog(QDialog):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(self.tr("About TrainLab"))
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        icon = QLabel(self)
        pixmap = QPixmap(app_icon_path(128))
        if not pixmap.isNull():
            icon.setPixmap(pixmap.scaled(96, 96, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation))
        top.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        text = QVBoxLayout()
        name = QLabel("TrainLab", self)
        name.setProperty("role", "heading")
        name.setObjectName("about_name")
        version = QLabel(self.tr("Version %s") % __version__, self)
        version.setObjectName("about_version")
        blurb = QLabel(
            self.tr(
                "Train and fine-tune image and text classifiers on your own GPU workstation, offline, "
                "without writing code."
            ),
            self,
        )
        blurb.setWordWrap(True)
        license_ = QLabel(self.tr("Licensed under the Apache License 2.0."), self)
        license_.setProperty("role", "muted")
        for widget in (name, version, blurb, license_):
            text.addWidget(widget)
        text.addStretch(1)
        top.addLayout(text, 1)
        layout.addLayout(top)
        self.details = QPlainTextEdit(system_details(), self)
        self.details.setReadOnly(True)
        self.details.setMaximumHeight(140)
        layout.addWidget(self.details)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        copy = buttons.addButton(self.tr("Copy details"), QDialogButtonBox.ButtonRole.ActionRole)
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.details.toPlainText()))
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(520, 340)

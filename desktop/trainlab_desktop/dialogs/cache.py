"""Tools > Caches: what TrainLab's caches hold, their size cap, and a button that empties them.

A thin view over ``trainlab.system.cache`` (the same figures and actions as
``trainlab cache``): the dialog keeps no state of its own beyond the report
it shows.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QDoubleSpinBox, QFormLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from trainlab.system import cache
from trainlab.system.fileio import format_bytes


class CacheDialog(QDialog):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(self.tr("Caches"))
        layout = QVBoxLayout(self)
        self.contents = QLabel()
        self.contents.setWordWrap(True)
        layout.addWidget(self.contents)
        form = QFormLayout()
        self.limit = QDoubleSpinBox()
        self.limit.setRange(0.0, 10_000.0)
        self.limit.setDecimals(1)
        self.limit.setSuffix(" GB")
        self.limit.setToolTip(self.tr("The least recently used entries are removed beyond this size; 0 keeps nothing"))
        self.limit.setValue(cache.limit_bytes() / 1e9)
        self.limit.editingFinished.connect(self.apply_limit)
        form.addRow(self.tr("Size limit"), self.limit)
        layout.addLayout(form)
        self.clear_button = QPushButton(self.tr("Clear caches"))
        self.clear_button.clicked.connect(self.clear)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(self.clear_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.refresh()

    def refresh(self) -> None:
        state = cache.report()
        lines = [
            self.tr("{name}: {entries} entries, {size}").format(name=name, entries=row["entries"], size=format_bytes(row["bytes"]))
            for name, row in sorted(state.by_cache().items())
        ] or [self.tr("The caches are empty.")]
        lines.append(self.tr("Total {size} in {folder}").format(size=format_bytes(state.total_bytes), folder=state.root))
        self.contents.setText("\n".join(lines))
        self.clear_button.setEnabled(bool(state.entries))

    def apply_limit(self) -> None:
        cache.set_limit_gb(round(self.limit.value(), 1))
        cache.trim()
        self.refresh()

    def clear(self) -> None:
        cache.clear()
        self.refresh()

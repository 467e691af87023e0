"""Choosing the data, seeing a preview and the task's verdict before training.

The user picks a folder or a file (dialog, typing, or dropping it on the
panel).  Off the GUI thread the panel then (1) reads a preview: a few image
thumbnails per class, or the first rows of a text table, and (2) prepares the
task on the data as a run does (``trainlab.engine.prepare.prepare_task``):
counts per class and split, skipped files with reasons, warnings such as class
imbalance, or the ``DataError`` that names the file or row at fault.  The task
module may import torch, which is why this never runs on the GUI thread.

The ``PreparedTask`` is kept (``prepared``): a run started next takes it over
(``take_prepared``) instead of reading and tokenising the data again, when
``plan_run`` finds that nothing it depends on has changed since.  Preparing
seeds the process's random generators, as a run does: while a run trains in
this process the panel holds its checks (``hold``) and makes the last one
asked for once the run has ended (``release``).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QIcon, QImage, QImageReader, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListView,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from trainlab.api.descriptors import TaskSpec
from trainlab.api.errors import StopRequested
from trainlab.api.taskbase import DataSummary, plural
from trainlab.engine.prepare import prepare_task
from trainlab_desktop.common import background
from trainlab_desktop.run.training_thread import importing_heavy_modules

log = logging.getLogger("trainlab.desktop")

THUMB = 72
THUMBS_PER_CLASS = 6
MAX_PREVIEW_CLASSES = 12
PREVIEW_ROWS = 50
TEXT_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json", ".txt")
SPLIT_NAMES = ("train", "val", "validation", "test")


@dataclass
class ImagePreview:
    """Thumbnails by class (``classes``: label and images); a class labelled ""
    holds images without a class folder, each shown under its file name."""

    classes: list[tuple[str, list[tuple[str, QImage]]]] = field(default_factory=list)
    more_classes: int = 0


@dataclass
class TablePreview:
    source: str
    columns: list[str]
    rows: list[list[str]]


def _image_suffixes() -> set[str]:
    return {"." + bytes(fmt).decode().lower() for fmt in QImageReader.supportedImageFormats()}


def _thumbnail(path: Path) -> QImage | None:
    reader = QImageReader(str(path))
    reader.setAutoTransform(True)
    size = reader.size()
    if size.isValid() and size.width() > 0 and size.height() > 0:
        reader.setScaledSize(size.scaled(THUMB, THUMB, Qt.AspectRatioMode.KeepAspectRatio))
    image = reader.read()
    return None if image.isNull() else image


def read_image_preview(root: Path) -> ImagePreview | None:
    """A few thumbnails per class folder; None when ``root`` has no class folders."""
    base = root
    for split in ("train", "training"):
        if (root / split).is_dir():
            base = root / split
            break
    suffixes = _image_suffixes()
    classes = sorted((p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")), key=lambda p: p.name)
    if not classes:
        return None
    preview = ImagePreview(more_classes=max(0, len(classes) - MAX_PREVIEW_CLASSES))
    for folder in classes[:MAX_PREVIEW_CLASSES]:
        images = []
        for path in sorted(folder.iterdir()):
            if len(images) >= THUMBS_PER_CLASS:
                break
            if path.suffix.lower() in suffixes and path.is_file():
                image = _thumbnail(path)
                if image is not None:
                    images.append((path.name, image))
        preview.classes.append((folder.name, images))
    return preview


# Where a data folder keeps images without class folders: COCO's split folders,
# YOLO's images/<split>/, Pascal VOC's JPEGImages/, or the folder itself.
LOOSE_IMAGE_FOLDERS = ("train", "training", "images/train", "JPEGImages", "images", ".")


def read_loose_image_preview(root: Path) -> ImagePreview | None:
    """The first images of the first folder of ``LOOSE_IMAGE_FOLDERS`` that holds
    any (a detection data folder); None when none does."""
    suffixes = _image_suffixes()
    for name in LOOSE_IMAGE_FOLDERS:
        folder = root / name
        if not folder.is_dir():
            continue
        images = []
        for path in sorted(folder.iterdir()):
            if len(images) >= 2 * THUMBS_PER_CLASS:
                break
            if path.suffix.lower() in suffixes and path.is_file():
                image = _thumbnail(path)
                if image is not None:
                    images.append((path.name, image))
        if images:
            return ImagePreview(classes=[("", images)])
    return None


def _text_file_in(root: Path) -> Path | None:
    for stem in ("train", "training", "data"):
        for suffix in TEXT_SUFFIXES:
            candidate = root / f"{stem}{suffix}"
            if candidate.is_file():
                return candidate
    files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES)
    return files[0] if files else None


def read_table_preview(path: Path, limit: int = PREVIEW_ROWS) -> TablePreview:
    """The first rows of a CSV, TSV or JSON-lines file (UTF-8, BOM tolerated)."""
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:
        head = handle.read(1 << 20)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        rows: list[dict[str, Any]] = []
        for line in head.splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                item = json.loads(line)
            except ValueError:
                break
            if isinstance(item, dict):
                rows.append(item)
            if len(rows) >= limit:
                break
        columns: list[str] = []
        for row in rows:
            columns += [str(k) for k in row if str(k) not in columns]
        return TablePreview(str(path), columns, [[_cell(row.get(c)) for c in columns] for row in rows])
    delimiter = "\t" if suffix == ".tsv" else ","
    reader = csv.reader(io.StringIO(head), delimiter=delimiter)
    try:
        columns = next(reader)
    except StopIteration:
        return TablePreview(str(path), [], [])
    table = []
    for row in reader:
        table.append([_cell(v) for v in row])
        if len(table) >= limit:
            break
    return TablePreview(str(path), columns, table)


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= 300 else text[:297] + "\u2026"


def read_preview(path: str) -> ImagePreview | TablePreview | None:
    target = Path(path)
    if target.is_file():
        return read_table_preview(target)
    if target.is_dir():
        if (target / "JPEGImages").is_dir() or ((target / "images").is_dir() and (target / "labels").is_dir()):
            loose = read_loose_image_preview(target)  # Pascal VOC, YOLO: their folders are no classes
            if loose is not None:
                return loose
        images = read_image_preview(target)
        if images is not None and any(items for _, items in images.classes):
            return images
        loose = read_loose_image_preview(target)
        if loose is not None:
            return loose
        text = _text_file_in(target)
        if text is not None:
            return read_table_preview(text)
        return images
    return None


def check_data(spec: TaskSpec, data: str, params: dict[str, Any], should_stop: Callable[[], bool] | None = None) -> Any:
    """``spec``'s task prepared on ``data`` as a run prepares it: a ``PreparedTask``
    (its ``summary`` is what the panel shows); ``should_stop`` ends a long
    preparation early, as it does a run's (then None)."""
    with importing_heavy_modules():  # prepare_task names the plugin and the method of a failure

        try:
            return prepare_task(spec.id, data, params, log=lambda event: log.info("%s", event.message),
                                should_stop=should_stop)
        except StopRequested:  # a KeyboardInterrupt: not a failure of the data, and the thread must end cleanly
            log.info("data check of %s stopped", data)
            return None


class PathEdit(QLineEdit):
    """A path field that, while it is not being edited, shows a long path with
    its middle elided ("/home/ana/\u2026/images/shapes"): the start says where
    it lives, the end names the folder or file.  A plain line edit showed only
    the end.  The whole path is the tooltip and comes back to edit."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self.textEdited.connect(self._edited)

    def full_path(self) -> str:
        return self._full

    def set_full_path(self, path: str) -> None:
        self._full = path
        self.setToolTip(path)
        self._show()

    def _edited(self, text: str) -> None:  # typing happens on the whole path (focusInEvent)
        self._full = text

    def _show(self) -> None:
        if self.hasFocus():
            text = self._full
        else:
            # the room for text: the frame, Qt's own side margins and the clear button take their share
            room = self.contentsRect().width() - 10 - (self.height() if self.isClearButtonEnabled() and self._full else 0)
            text = self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideMiddle, max(room, 40))
        if text != self.text():
            self.setText(text)

    def focusInEvent(self, event) -> None:  # noqa: N802 - Qt override
        if self.text() != self._full:
            self.setText(self._full)
        super().focusInEvent(event)

    def focusOutEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().focusOutEvent(event)  # editingFinished, with the whole path still in the field
        self._show()

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._show()


class DataPanel(QWidget):
    """Path chooser, preview and validation summary for one task's data."""

    pathChanged = Signal(str)
    checkStarted = Signal()
    checkFinished = Signal(object)  # DataSummary, or None when the check failed

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAcceptDrops(True)
        self._spec: TaskSpec | None = None
        self._params_source: Callable[[], dict[str, Any]] = dict
        self._generation = 0
        self.summary: DataSummary | None = None
        self.prepared: Any = None  # the check's PreparedTask, until a run takes it
        self._checked_params: dict[str, Any] | None = None
        self.error = ""
        self.checking = False
        self._held = False
        self._deferred = False
        self._stop_check = threading.Event()  # the running check's; set to end it early

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.path_edit = PathEdit(self)
        self.path_edit.setObjectName("data_path")
        self.path_edit.setPlaceholderText(self.tr("Drop a folder or file here, or choose one"))
        self.path_edit.setClearButtonEnabled(True)
        self.path_edit.editingFinished.connect(lambda: self.set_path(self.path_edit.full_path()))
        self.folder_button = QPushButton(self.tr("Folder\u2026"), self)
        self.folder_button.setToolTip(self.tr("Choose a folder of class folders or of split files"))
        self.folder_button.clicked.connect(self.choose_folder)
        self.file_button = QPushButton(self.tr("File\u2026"), self)
        self.file_button.setToolTip(self.tr("Choose a CSV, TSV or JSON-lines file"))
        self.file_button.clicked.connect(self.choose_file)
        self.recheck_button = QPushButton(self.tr("Check again"), self)
        self.recheck_button.setToolTip(self.tr("Read the data again (after you changed files)"))
        self.recheck_button.clicked.connect(self.recheck)
        # the field on a row of its own: beside three buttons it had a hundred pixels
        layout.addWidget(self.path_edit)
        row.addStretch(1)
        row.addWidget(self.folder_button)
        row.addWidget(self.file_button)
        row.addWidget(self.recheck_button)
        layout.addLayout(row)

        self.hint = QLabel(self)
        self.hint.setProperty("role", "muted")
        self.hint.setWordWrap(True)
        layout.addWidget(self.hint)

        self.status = QLabel(self)
        self.status.setObjectName("data_status")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status)

        self.summary_table = QTableWidget(self)
        self.summary_table.setObjectName("data_summary")
        self.summary_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.summary_table.verticalHeader().setVisible(False)
        self.summary_table.setAlternatingRowColors(True)
        self.summary_table.hide()
        layout.addWidget(self.summary_table)

        self.task_notes = QLabel(self)  # the task's own lines about the data (DataSummary.notes)
        self.task_notes.setObjectName("data_task_notes")
        self.task_notes.setWordWrap(True)
        self.task_notes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.task_notes.hide()
        layout.addWidget(self.task_notes)

        self.notes = QLabel(self)
        self.notes.setObjectName("data_notes")
        self.notes.setProperty("role", "warning")
        self.notes.setWordWrap(True)
        self.notes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notes.hide()
        layout.addWidget(self.notes)

        self.preview = QStackedWidget(self)
        self.thumbs = QListWidget(self)
        self.thumbs.setObjectName("data_thumbnails")
        self.thumbs.setViewMode(QListView.ViewMode.IconMode)
        self.thumbs.setIconSize(QSize(THUMB, THUMB))
        self.thumbs.setGridSize(QSize(THUMB + 28, THUMB + 30))
        self.thumbs.setResizeMode(QListView.ResizeMode.Adjust)
        self.thumbs.setMovement(QListView.Movement.Static)
        self.thumbs.setWordWrap(True)
        self.table = QTableWidget(self)
        self.table.setObjectName("data_rows")
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        self.preview.addWidget(self.thumbs)
        self.preview.addWidget(self.table)
        self.preview.setMinimumHeight(150)
        self.preview.hide()
        layout.addWidget(self.preview, 1)

        # Parameters that change what prepare() sees (text column, val
        # fraction) re-run the check, but not on every keystroke.
        self._recheck = QTimer(self)
        self._recheck.setSingleShot(True)
        self._recheck.setInterval(600)
        self._recheck.timeout.connect(self.recheck)

    # -- configuration -----------------------------------------------------
    def set_task(self, spec: TaskSpec | None, params_source: Callable[[], dict[str, Any]], recheck: bool = True) -> None:
        self._spec = spec
        self._params_source = params_source
        self._checked_path = None  # another task judges the same data anew
        self.prepared = None
        kind = spec.data_kind if spec else "either"
        self.folder_button.setVisible(kind in ("folder", "either"))
        self.file_button.setVisible(kind in ("file", "either"))
        self.hint.setText(spec.data_help if spec and spec.data_help else "")
        self.hint.setVisible(bool(self.hint.text()))
        if recheck and self.path():
            self.recheck()

    def path(self) -> str:
        return self.path_edit.full_path().strip()

    def set_path(self, path: str) -> None:
        path = path.strip()
        if path == getattr(self, "_checked_path", None) and (self.summary or self.error or self.checking):
            return
        self.path_edit.set_full_path(path)  # shown with its middle elided, whole in the tooltip
        self.pathChanged.emit(path)
        self.recheck()

    def schedule_recheck(self) -> None:
        if self.path():
            self._recheck.start()

    def hold(self) -> None:
        """Check nothing until ``release`` (a run is training in this process)."""
        self._held = True

    def release(self) -> None:
        self._held = False
        if self._deferred:
            self._deferred = False
            self.recheck()

    def cancel_recheck(self) -> None:
        """Drop a check scheduled after an edit (a run that starts now prepares the data itself)."""
        self._recheck.stop()

    def stop_check(self) -> None:
        """End a running check early (the window closes): no thread outlives it
        scanning a slow folder.  A task that honours ``should_stop`` (the image
        folder scan does) ends between files, as in a run."""
        self._recheck.stop()
        self._stop_check.set()

    def checked_params(self) -> dict[str, Any] | None:
        """The parameters the last check prepared with (None without one that passed)."""
        return dict(self._checked_params) if self._checked_params is not None else None

    def take_prepared(self) -> Any:
        """The check's ``PreparedTask`` for a run (the panel lets go of it); None when there is none."""
        prepared, self.prepared = self.prepared, None
        return prepared

    # -- dialogs and drops -------------------------------------------------
    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, self.tr("Choose the data folder"), self.path())
        if folder:
            self.set_path(folder)

    def choose_file(self) -> None:
        name, _ = QFileDialog.getOpenFileName(
            self, self.tr("Choose the data file"), self.path(),
            self.tr("Data files (*.csv *.tsv *.jsonl *.json *.txt);;All files (*)"),
        )
        if name:
            self.set_path(name)

    def dragEnterEvent(self, event) -> None:  # noqa: N802 - Qt override
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        if urls and urls[0].isLocalFile():
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event) -> None:  # noqa: N802 - Qt override
        urls = event.mimeData().urls()
        if urls and urls[0].isLocalFile():
            event.acceptProposedAction()
            self.set_path(urls[0].toLocalFile())

    # -- checking ----------------------------------------------------------
    def recheck(self) -> None:
        if self._held:
            self._deferred = True
            return
        path = self.path()
        self._generation += 1
        generation = self._generation
        self._checked_path = path
        self.summary = None
        self.prepared = None
        self._checked_params = None
        self.error = ""
        self.summary_table.hide()
        self.notes.hide()
        self.task_notes.hide()
        if not path:
            self.checking = False
            self.status.setText("")
            self.preview.hide()
            return
        if not Path(path).exists():
            self.checking = False
            self._show_error(self.tr("%s does not exist.") % path)
            self.preview.hide()
            self.checkFinished.emit(None)
            return
        self.checking = True
        self.status.setProperty("role", "muted")
        self._repolish(self.status)
        self.status.setText(self.tr("Checking the data\u2026"))
        self.checkStarted.emit()
        spec = self._spec
        try:
            params = dict(self._params_source())
        except Exception:  # noqa: BLE001 - invalid form values: check with defaults
            params = {}

        self._stop_check = stop = threading.Event()

        def work(report):
            report(("preview", read_preview(path)))
            if spec is None:
                return None
            return check_data(spec, path, params, should_stop=stop.is_set)

        background.start(work, self._checked, self._failed, on_progress=self._partial, tag=generation)

    def _partial(self, generation: int, item: Any) -> None:
        if generation != self._generation:
            return
        kind, value = item
        if kind == "preview":
            self._show_preview(value)

    def _checked(self, generation: int, prepared: Any) -> None:
        if generation != self._generation:
            return
        self.checking = False
        self.prepared = prepared
        self._checked_params = dict(prepared.params) if prepared is not None else None
        summary = prepared.summary if prepared is not None else None
        self.summary = summary
        if summary is None:
            self.status.setText("")
            self.checkFinished.emit(None)
            return
        self._show_summary(summary)
        self.checkFinished.emit(summary)

    def _failed(self, generation: int, message: str, tb: str) -> None:
        if generation != self._generation:
            return
        self.checking = False
        log.info("data check failed for %s: %s", self.path(), message)
        log.debug("%s", tb)
        self._show_error(message)
        self.checkFinished.emit(None)

    def _show_error(self, message: str) -> None:
        self.error = message
        self.status.setProperty("role", "error")
        self._repolish(self.status)
        self.status.setText(self.tr("This data cannot be used: %s") % message)

    @staticmethod
    def _repolish(widget: QWidget) -> None:
        widget.style().unpolish(widget)
        widget.style().polish(widget)

    # -- display -----------------------------------------------------------
    def _show_summary(self, summary: DataSummary) -> None:
        """The verdict in the task's own words: its groups (classes, series...) and what it counts."""
        spec = self._spec
        group, counted = summary.nouns(spec.family if spec is not None else "classification")
        splits = [s for s in ("train", "val", "test") if s in summary.counts]
        splits += [s for s in summary.counts if s not in splits]
        labels = summary.groups() if group else []
        totals = {s: sum(summary.counts[s].values()) for s in splits}
        self.status.setProperty("role", "")
        self._repolish(self.status)
        parts = [self.group_count(group, len(labels))] if group else []
        parts += [f"{self.split_title(s)}: {totals[s]:,} {self.counted_word(counted)}" for s in splits]
        self.status.setText(self.tr("Ready to train: %s") % " \u00b7 ".join(parts))

        table = self.summary_table
        table.clear()
        if not group:  # one total per split (a regression): the line above says it all
            table.setRowCount(0)
            table.hide()
        else:
            table.setColumnCount(1 + len(splits))
            table.setHorizontalHeaderLabels([self.group_title(group)] + [self.split_title(s) for s in splits])
            table.setRowCount(len(labels))
            for row, label in enumerate(labels):
                table.setItem(row, 0, QTableWidgetItem(str(label)))
                for col, split in enumerate(splits, start=1):
                    item = QTableWidgetItem(f"{summary.counts[split].get(label, 0):,}")
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                    table.setItem(row, col, item)
            header = table.horizontalHeader()
            header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
            # the counts as wide as their header, the rest for the names: with train, val and test
            # at the default width, "sports" and "technology" showed as "sp..." and "te..."
            for col in range(1, 1 + len(splits)):
                header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
            rows_height = sum(table.rowHeight(r) for r in range(min(len(labels), 8)))
            table.setFixedHeight(table.horizontalHeader().height() + rows_height + 2 * table.frameWidth() + 2)
            table.show()

        self.task_notes.setText("\n".join(summary.notes))
        self.task_notes.setVisible(bool(summary.notes))
        notes = []
        if summary.skipped:
            total = sum(summary.skipped.values())
            reasons = ", ".join(f"{reason}: {count}" for reason, count in summary.skipped.items())
            notes.append(self.tr("Skipped %n file(s) or row(s)", "", total) + f" ({reasons})")
            for where, why in summary.skipped_examples[:5]:
                notes.append(f"  \u2022 {where}: {why}")
        warnings = list(summary.warnings)
        imbalance = summary.imbalance_warning() if spec is None or spec.has_classes() else None  # classes only
        if imbalance and imbalance not in warnings:
            warnings.append(imbalance)
        notes += [f"\u26a0 {w}" for w in warnings]
        self.notes.setText("\n".join(notes))
        self.notes.setVisible(bool(notes))

    def group_count(self, group: str, n: int) -> str:
        """``3 classes``, ``2 series``: the built-in families' words translated, a plugin's as it wrote them."""
        if group == "class":
            return self.tr("%n class(es)", "", n)
        if group == "label":
            return self.tr("%n label(s)", "", n)
        return f"{n} {group if n == 1 else plural(group)}"

    def group_title(self, group: str) -> str:
        """The first column's title: what each row is (Class, Label, Series)."""
        titles = {"class": self.tr("Class"), "label": self.tr("Label"), "target": self.tr("Target")}
        return titles.get(group, group[:1].upper() + group[1:])

    def counted_word(self, counted: str) -> str:
        return {"examples": self.tr("examples")}.get(counted, counted)

    def split_title(self, split: str) -> str:
        return {"train": self.tr("Train"), "val": self.tr("Validation"), "test": self.tr("Test")}.get(split, split)

    def _show_preview(self, preview: ImagePreview | TablePreview | None) -> None:
        if preview is None or (isinstance(preview, TablePreview) and not preview.columns):  # nothing a table could show
            self.preview.hide()
            return
        if isinstance(preview, ImagePreview):
            self.thumbs.clear()
            for label, images in preview.classes:
                for name, image in images:
                    item = QListWidgetItem(QIcon(QPixmap.fromImage(image)), label or name)
                    item.setToolTip(f"{label}/{name}" if label else name)
                    self.thumbs.addItem(item)
            if preview.more_classes:
                self.thumbs.addItem(QListWidgetItem(self.tr("\u2026 and %n more class(es)", "", preview.more_classes)))
            self.preview.setCurrentWidget(self.thumbs)
        else:
            table = self.table
            table.clear()
            table.setColumnCount(len(preview.columns))
            table.setHorizontalHeaderLabels(preview.columns)
            table.setRowCount(len(preview.rows))
            for r, row in enumerate(preview.rows):
                for c, value in enumerate(row[: len(preview.columns)]):
                    table.setItem(r, c, QTableWidgetItem(value))
            table.resizeColumnsToContents()
            for c in range(table.columnCount()):
                table.setColumnWidth(c, min(table.columnWidth(c), 420))
            table.setToolTip(preview.source)
            self.preview.setCurrentWidget(self.table)
        self.preview.show()

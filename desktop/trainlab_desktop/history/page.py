"""Run history: every run in the SQLite index, its curves, and runs still training.

``RunHistoryView`` lists the index (``trainlab.runfolder.index.RunStore``) in a
``RunHistoryModel`` (``history_table``), refreshed by a timer while it is
visible, so a run started from the command line shows up and ticks along.
Selecting a run shows its curves in ``RunCurvesView`` (``history_curves``);
selecting several overlays them; a run that is still training is followed
through its run folder's tail.
"""

from __future__ import annotations

from typing import Any, Sequence

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from trainlab.api.errors import UsageError
from trainlab.runfolder.index import RunStore
from trainlab.runfolder.status import RUNNING
from trainlab_desktop.history.curve_view import RunCurvesView
from trainlab_desktop.history.table import COLUMNS, RunFilterProxy, RunHistoryModel, row_title

__all__ = ["COLUMNS", "REFRESH_MS", "RunCurvesView", "RunHistoryModel", "RunHistoryView", "open_history_view"]

REFRESH_MS = 2000  # the index: cheap to read, and a new run within 2 s feels live


class RunHistoryView(QWidget):
    """The run index as a table, with the curves of the selected runs below it.

    Signals: ``runOpened(run_dir)`` on double-click or Enter (the window shows
    its results), ``runsOverlaid(run_dirs)`` when several runs are compared.
    """

    runOpened = Signal(str)
    runsOverlaid = Signal(list)
    runsDeleted = Signal(list)

    def __init__(self, store: RunStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("RunHistoryView")
        self.store = store
        self.model = RunHistoryModel(store, self)
        self.model.renameFailed.connect(self._rename_failed)
        self.proxy = RunFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.proxy.setDynamicSortFilter(True)

        self.filter_edit = QLineEdit()
        self.filter_edit.setObjectName("historyFilter")
        self.filter_edit.setPlaceholderText(self.tr("Filter by name, task or status, or a metric: mae<3, accuracy>90%"))
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.textChanged.connect(self.proxy.set_filter_text)
        self.follow_box = QCheckBox(self.tr("Follow new runs"))
        self.follow_box.setToolTip(
            self.tr("Select a run as soon as it starts, also one started from the command line, and follow its curves")
        )
        self.follow_box.setChecked(True)
        self.open_button = QPushButton(self.tr("Open"))
        self.open_button.setToolTip(self.tr("Show the results of the selected run (Enter)"))
        self.open_button.clicked.connect(self.open_current)
        self.compare_button = QPushButton(self.tr("Compare"))
        self.compare_button.setToolTip(self.tr("Overlay the curves of the selected runs"))
        self.compare_button.clicked.connect(self.overlay_selected)
        self.rename_button = QPushButton(self.tr("Rename"))
        self.rename_button.setToolTip(self.tr("Rename the selected run (F2)"))
        self.rename_button.clicked.connect(self.rename_current)
        self.delete_button = QPushButton(self.tr("Delete"))
        self.delete_button.setToolTip(self.tr("Delete the selected runs and their folders (Delete)"))
        self.delete_button.clicked.connect(self.delete_selected)

        self.table = QTableView()
        self.table.setObjectName("historyTable")
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(COLUMNS.index("started"), Qt.SortOrder.DescendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed | QAbstractItemView.EditTrigger.SelectedClicked)
        self.table.setAlternatingRowColors(True)
        self.table.setShowGrid(False)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setHighlightSections(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)  # the metric columns too, as they come
        header.setStretchLastSection(False)
        self.model.modelReset.connect(self._stretch_name)
        self._stretch_name()
        self.table.doubleClicked.connect(lambda index: self._open_row(index.row()))
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)
        for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            shortcut = QShortcut(QKeySequence(key), self.table, context=Qt.ShortcutContext.WidgetShortcut)
            shortcut.activated.connect(self.open_current)
        QShortcut(QKeySequence.StandardKey.Delete, self.table, context=Qt.ShortcutContext.WidgetShortcut).activated.connect(
            self.delete_selected
        )
        QShortcut(QKeySequence(Qt.Key.Key_F2), self.table, context=Qt.ShortcutContext.WidgetShortcut).activated.connect(
            self.rename_current
        )

        self.curves = RunCurvesView()
        self.empty_label = QLabel(
            self.tr("No runs yet. Train a model here or with `trainlab train`; its runs appear in this list.")
        )
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        # A full disk: the index cannot be opened, the runs are read from their
        # folders (as `trainlab runs` lists them), and nothing can be changed.
        self.read_only_label = QLabel(
            self.tr("The disk holding the run index is full: the runs are listed read-only from their folders; "
                    "renaming and deleting are off until there is space again.")
        )
        self.read_only_label.setObjectName("historyReadOnly")
        self.read_only_label.setProperty("role", "muted")
        self.read_only_label.setWordWrap(True)
        self.read_only_label.setVisible(False)

        bar = QHBoxLayout()
        bar.addWidget(self.filter_edit, 1)
        bar.addWidget(self.follow_box)
        bar.addSpacing(8)
        for button in (self.open_button, self.compare_button, self.rename_button, self.delete_button):
            bar.addWidget(button)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addLayout(bar)
        top_layout.addWidget(self.read_only_label)
        top_layout.addWidget(self.table, 1)
        top_layout.addWidget(self.empty_label)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.addWidget(top)
        self.splitter.addWidget(self.curves)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setSizes([280, 420])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter)

        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self._known_ids: set[str] | None = None
        self.refresh()
        self._selection_changed()

    def _stretch_name(self) -> None:
        self.table.horizontalHeader().setSectionResizeMode(COLUMNS.index("name"), QHeaderView.ResizeMode.Stretch)

    def sort_by_metric(self, name: str) -> None:
        """Sort the runs by metric ``name``, the best first (scripts, tests; a click on its header does the same)."""
        column = self.model.column_of(name)
        if column < 0:
            raise KeyError(name)
        self.table.sortByColumn(column, Qt.SortOrder.AscendingOrder)

    # -- data -----------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-read the index; select a newly started run when following."""
        if self.table.state() == QAbstractItemView.State.EditingState:
            return  # do not pull the row from under the user's editor
        try:
            rows = self.store.list()
        except Exception as exc:  # noqa: BLE001 - a locked or damaged index must not break the window
            self.empty_label.setText(self.tr("Cannot read the run index: {error}").format(error=str(exc)))
            self.empty_label.setVisible(True)
            return
        self._show_read_only(self.store.read_only)
        selected = self.selected_ids()
        self.model.set_rows(rows)
        self.select_ids(selected)
        ids = {r["id"] for r in rows}
        new = [] if self._known_ids is None else [r for r in rows if r["id"] not in self._known_ids]
        self._known_ids = ids
        self.empty_label.setVisible(not rows)
        self.table.setVisible(bool(rows))
        started = [r for r in new if r.get("status") == RUNNING]
        if started and self.follow_box.isChecked():
            self.select_ids([max(started, key=lambda r: r.get("started") or 0)["id"]])
        self.curves.poll()

    def _show_read_only(self, read_only: bool) -> None:
        if read_only == self.read_only_label.isVisible():
            return
        self.read_only_label.setVisible(read_only)
        self.table.setEditTriggers(
            QAbstractItemView.EditTrigger.NoEditTriggers if read_only
            else QAbstractItemView.EditTrigger.EditKeyPressed | QAbstractItemView.EditTrigger.SelectedClicked
        )
        self._selection_changed()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        self.refresh()
        self.timer.start()

    def hideEvent(self, event) -> None:  # noqa: N802
        super().hideEvent(event)
        self.timer.stop()

    # -- selection --------------------------------------------------------------------
    def _source_rows(self) -> list[int]:
        rows = {self.proxy.mapToSource(i).row() for i in self.table.selectionModel().selectedRows()}
        return sorted(rows)

    def selected_runs(self) -> list[dict[str, Any]]:
        return [self.model.run_at(r) for r in self._source_rows()]

    def selected_ids(self) -> list[str]:
        return [r["id"] for r in self.selected_runs()]

    def selected_run_dirs(self) -> list[str]:
        return [r["run_dir"] for r in self.selected_runs()]

    def select_ids(self, ids: Sequence[str]) -> None:
        from PySide6.QtCore import QItemSelection, QItemSelectionModel

        selection = QItemSelection()
        first = None
        for run_id in ids:
            row = self.model.row_of(run_id)
            if row < 0:
                continue
            left = self.proxy.mapFromSource(self.model.index(row, 0))
            right = self.proxy.mapFromSource(self.model.index(row, self.model.columnCount() - 1))
            if left.isValid():
                selection.select(left, right)
                first = first or left
        model = self.table.selectionModel()
        if selection.indexes() == model.selection().indexes():
            return
        flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        model.select(selection, flags)
        if first is not None:
            model.setCurrentIndex(first, QItemSelectionModel.SelectionFlag.NoUpdate)
            self.table.scrollTo(first)

    def _selection_changed(self, *_args) -> None:
        runs = self.selected_runs()
        self.open_button.setEnabled(len(runs) == 1)
        self.compare_button.setEnabled(len(runs) >= 2)
        writable = not self.store.read_only
        self.rename_button.setEnabled(writable and len(runs) == 1)
        self.delete_button.setEnabled(writable and bool(runs))
        self.curves.show_runs([r["run_dir"] for r in runs])

    # -- actions ---------------------------------------------------------------------------
    def _open_row(self, proxy_row: int) -> None:
        source = self.proxy.mapToSource(self.proxy.index(proxy_row, 0))
        if source.isValid():
            self.runOpened.emit(self.model.run_at(source.row())["run_dir"])

    def open_current(self) -> None:
        index = self.table.currentIndex()
        if index.isValid():
            self._open_row(index.row())

    def overlay_selected(self) -> None:
        dirs = self.selected_run_dirs()
        if len(dirs) >= 2:
            self.curves.show_runs(dirs)
            self.runsOverlaid.emit(dirs)

    def rename_current(self) -> None:
        runs = self.selected_runs()
        if len(runs) != 1 or self.store.read_only:
            return
        row = self.model.row_of(runs[0]["id"])
        index = self.proxy.mapFromSource(self.model.index(row, COLUMNS.index("name")))
        self.table.setCurrentIndex(index)
        self.table.edit(index)

    def rename(self, run_id: str, name: str) -> None:
        """Rename without the editor (scripts, tests)."""
        row = self.model.row_of(run_id)
        if row < 0:
            raise KeyError(run_id)
        self.model.setData(self.model.index(row, COLUMNS.index("name")), name)

    def _rename_failed(self, message: str) -> None:
        QMessageBox.warning(self, self.tr("Rename"), self.tr("The run could not be renamed: {error}").format(error=message))

    def delete_selected(self) -> None:
        runs = self.selected_runs()
        if not runs or self.store.read_only:
            return
        if len(runs) == 1:
            run = runs[0]
            text = self.tr("Delete the run “{name}”?").format(name=row_title(run))
        else:
            text = self.tr("Delete {count} runs?").format(count=len(runs))
        folders = "\n".join(r["run_dir"] for r in runs[:5]) + ("\n\u2026" if len(runs) > 5 else "")
        box = QMessageBox(self)
        box.setObjectName("confirmDelete")
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle(self.tr("Delete Runs"))
        box.setText(text)
        box.setInformativeText(
            self.tr("Their folders, with checkpoints and trained models, are removed from disk. This cannot be undone.")
        )
        box.setDetailedText(folders)
        delete = box.addButton(self.tr("Delete"), QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        if box.clickedButton() is not delete:
            return
        deleted, errors = [], []
        for run in runs:
            try:
                self.store.delete(run["id"])
                deleted.append(run["run_dir"])
            except (UsageError, OSError) as exc:
                errors.append(str(exc))
        self.curves.show_runs([])
        self.refresh()
        if deleted:
            self.runsDeleted.emit(deleted)
        if errors:
            QMessageBox.warning(self, self.tr("Delete Runs"), "\n".join(errors))

    def _context_menu(self, position) -> None:
        runs = self.selected_runs()
        if not runs:
            return
        menu = QMenu(self)
        if len(runs) == 1:
            menu.addAction(self.tr("Open Results"), self.open_current)
        if len(runs) >= 2:
            menu.addAction(self.tr("Compare Curves"), self.overlay_selected)
        if len(runs) == 1:
            menu.addAction(self.tr("Rename…"), self.rename_current).setEnabled(not self.store.read_only)
            folder = runs[0]["run_dir"]
            menu.addAction(self.tr("Show in Folder"), lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(folder)))
            menu.addAction(self.tr("Copy Folder Path"), lambda: QGuiApplication.clipboard().setText(folder))
        menu.addSeparator()
        menu.addAction(self.tr("Delete…"), self.delete_selected).setEnabled(not self.store.read_only)
        menu.popup(self.table.viewport().mapToGlobal(position))


def open_history_view(parent: QWidget | None = None) -> tuple[RunHistoryView | None, QWidget]:
    """(the history view, the page to show): the page says why when the run index cannot be opened.

    A read-only or full disk under TRAINLAB_HOME must not stop the window
    from coming up: the rest of it works without the history.
    """
    from PySide6.QtCore import QCoreApplication

    try:
        store = RunStore(read_only_when_full=True)  # on a full disk, from the run folders (as `trainlab runs`)
    except Exception as exc:  # noqa: BLE001 - IndexUnavailable, and anything else opening it raises
        reason = f"{exc.path}: {exc.reason}" if hasattr(exc, "reason") and hasattr(exc, "path") else str(exc)
        label = QLabel(QCoreApplication.translate("RunHistoryView", "Cannot read the run index: {error}").format(error=reason), parent)
        label.setObjectName("historyUnavailable")
        label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        label.setWordWrap(True)
        return None, label
    view = RunHistoryView(store, parent)
    return view, view

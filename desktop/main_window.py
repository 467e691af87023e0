"""The main window: start view, training page, history, results, try it.

Start-up is in two steps so the window is on screen before anything heavy
loads: ``MainWindow()`` builds the shell (navigation, start view, menus,
status bar); ``start_setup()``, called by the app right after the window is
shown, imports pyqtgraph and numpy and discovers the plugins in a background
thread, then builds the pages one per turn of the event loop, so the window
answers input meanwhile.  ``finish_setup()`` does the same at once (tests,
scripts).  torch is only ever imported off the GUI thread: by the data check
and by the training worker.

The window is a thin view: runs are ``TrainingWorker`` objects, the curves
``RunCurves``, the remembered values ``DesktopSettings``.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from PySide6 import QtCore
from PySide6.QtCore import QByteArray, QEvent, QSize, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from trainlab.desktop.settings import DesktopSettings
from trainlab.desktop.welcome import WelcomeView

log = logging.getLogger("trainlab.desktop")
run_log = logging.getLogger("trainlab.run")

PAGES = ("welcome", "train", "history", "results", "tryit")


def _placeholder(text: str, parent: QWidget) -> QWidget:
    label = QLabel(text, parent)
    label.setProperty("align", "center")  # STYLE_SHEET: no Qt enum before the window shows
    label.setWordWrap(True)
    label.setProperty("role", "muted")
    return label


def _heading(text: str, parent: QWidget) -> QLabel:
    label = QLabel(text, parent)
    label.setProperty("role", "subheading")
    return label


class MainWindow(QMainWindow):
    """The TrainLab window."""

    ready = Signal()  # finish_setup() is done: plugins found, pages built
    runStarted = Signal()
    runFinished = Signal(dict)  # the worker's result, after the window handled it

    def __init__(self, settings: DesktopSettings | None = None, resolved_theme: str = "light"):
        super().__init__()
        self.settings = settings or DesktopSettings()
        self.resolved_theme = resolved_theme
        self.is_ready = False
        self.registry = None
        self.worker = None
        self.last_result: dict[str, Any] | None = None
        self.last_error = ""
        self.current_run_dir = ""
        self.current_run_status = ""
        self.plots = None
        self.gpu_panel = None
        self.history = None
        self.results = None
        self.tryit = None
        self.sampler = None
        self._prefill: dict[str, Any] | None = None
        self._close_when_stopped = False
        self._close_box = None  # QMessageBox (imported when needed: start-up time)
        self._error_box = None
        self._follow_tail = None
        self._run_started_at = 0.0
        self._progress = None
        self._keep_awake = None
        self._current_task = ""
        self.prewarmed = False  # torch and the engine imported ahead of Start
        self._prewarming = False
        self._setup_started = False
        self._setup_steps: list | None = None  # what is left of the setup, in order

        self.setWindowTitle("TrainLab")
        self.setObjectName("MainWindow")
        self.setMinimumSize(QSize(960, 640))
        hints = QApplication.styleHints()
        if hasattr(hints, "colorSchemeChanged"):  # Qt 6.5+: the desktop switched light/dark
            hints.colorSchemeChanged.connect(self._color_scheme_changed)
        self._build_shell()
        self._build_menus()
        self._restore_geometry()

    # ------------------------------------------------------------------ shell
    def _build_shell(self) -> None:
        central = QWidget(self)
        row = QHBoxLayout(central)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        self.nav = QListWidget(central)
        self.nav.setObjectName("navigation")
        self.nav.setFixedWidth(168)
        self.nav.setFrameShape(QFrame.Shape.NoFrame)
        titles = {
            "welcome": self.tr("Start"),
            "train": self.tr("Train"),
            "history": self.tr("Runs"),
            "results": self.tr("Results"),
            "tryit": self.tr("Try it"),
        }
        for key in PAGES:  # row i is PAGES[i]
            self.nav.addItem(QListWidgetItem(titles[key]))
        self.stack = QStackedWidget(central)
        self.pages: dict[str, QWidget] = {}
        self.welcome = WelcomeView(self.stack)
        self.welcome.newTrainingRequested.connect(lambda: self.show_page("train"))
        self.welcome.sampleRequested.connect(self.try_sample)
        self.welcome.runOpened.connect(self.open_run)
        self.welcome.historyRequested.connect(lambda: self.show_page("history"))
        self._set_page("welcome", self.welcome)
        for key in PAGES[1:]:
            self._set_page(key, _placeholder(self.tr("Loading\u2026"), self.stack))
        self.nav.currentRowChanged.connect(self.stack.setCurrentIndex)
        self.nav.setCurrentRow(0)
        row.addWidget(self.nav)
        row.addWidget(self.stack, 1)
        self.setCentralWidget(central)

        # the log panel and its dock are built once the window shows (_setup_registry)
        self.log_panel = None
        self.log_dock = None

        self.status_label = QLabel(self.tr("Starting\u2026"), self)
        self.statusBar().addWidget(self.status_label, 1)
        self.gpu_status = QLabel(self)
        self.gpu_status.setObjectName("gpu_status")
        self.statusBar().addPermanentWidget(self.gpu_status)

    def _set_page(self, key: str, widget: QWidget) -> None:
        index = PAGES.index(key)
        old = self.pages.get(key)
        if old is not None:
            self.stack.removeWidget(old)
            old.deleteLater()
        self.stack.insertWidget(index, widget)
        self.pages[key] = widget
        if self.nav.currentRow() == index:
            self.stack.setCurrentIndex(index)

    def show_page(self, key: str) -> None:
        self.nav.setCurrentRow(PAGES.index(key))

    def current_page(self) -> str:
        return PAGES[self.stack.currentIndex()]

    def _build_menus(self) -> None:
        # setShortcuts, not setShortcut: PySide resolves setShortcut's overloads
        # through the Qt namespace, whose enums cost start-up time (style.py)
        bar = self.menuBar()
        file_menu = bar.addMenu(self.tr("&File"))
        self.new_action = file_menu.addAction(self.tr("&New training"))
        self.new_action.setShortcuts(QKeySequence.StandardKey.New)
        self.new_action.triggered.connect(lambda: self.show_page("train"))
        self.open_data_action = file_menu.addAction(self.tr("&Open data\u2026"))
        self.open_data_action.setShortcuts(QKeySequence.StandardKey.Open)
        self.open_data_action.triggered.connect(self._open_data)
        self.open_run_action = file_menu.addAction(self.tr("Open &run folder\u2026"))
        self.open_run_action.setShortcuts([QKeySequence("Ctrl+Shift+O")])
        self.open_run_action.triggered.connect(self._open_run_folder)
        file_menu.addSeparator()
        quit_action = file_menu.addAction(self.tr("&Quit"))
        quit_action.setShortcuts(QKeySequence.StandardKey.Quit)
        quit_action.setMenuRole(QAction.MenuRole.QuitRole)
        quit_action.triggered.connect(self.close)

        self.run_menu = bar.addMenu(self.tr("&Run"))  # filled when the run controls exist

        view = bar.addMenu(self.tr("&View"))
        for number, key in enumerate(PAGES, start=1):
            action = view.addAction(self.nav.item(number - 1).text())
            action.setShortcuts([QKeySequence(f"Ctrl+{number}")])
            action.triggered.connect(lambda _=False, k=key: self.show_page(k))
        view.addSeparator()
        # shows and hides the log dock, which is built once the window shows (_build_log_dock)
        self.log_action = view.addAction(self.tr("&Log panel"))
        self.log_action.setCheckable(True)
        self.log_action.setShortcuts([QKeySequence("Ctrl+L")])
        view.addSeparator()
        theme_menu = view.addMenu(self.tr("&Theme"))
        group = QActionGroup(self)
        for value, title in (("system", self.tr("Follow the system")), ("light", self.tr("Light")), ("dark", self.tr("Dark"))):
            action = theme_menu.addAction(title)
            action.setCheckable(True)
            action.setChecked(self.settings.theme == value)
            action.setData(value)
            group.addAction(action)
            action.triggered.connect(lambda _=False, v=value: self.set_theme(v))
        language_menu = view.addMenu(self.tr("&Language"))
        languages = [("", self.tr("Follow the system"))]
        try:
            from trainlab.desktop.i18n import LANGUAGES

            languages += list(LANGUAGES.items())
        except ImportError:
            languages += [("en", "English")]
        lang_group = QActionGroup(self)
        for code, title in languages:
            action = language_menu.addAction(title)
            action.setCheckable(True)
            action.setChecked((self.settings.language or "") == code)
            lang_group.addAction(action)
            action.triggered.connect(lambda _=False, c=code: self.set_language(c or None))

        tools = bar.addMenu(self.tr("&Tools"))
        self.plugins_action = tools.addAction(self.tr("&Plugins\u2026"))
        self.plugins_action.setShortcuts([QKeySequence("Ctrl+Shift+P")])
        self.plugins_action.triggered.connect(self.show_plugins)

        help_menu = bar.addMenu(self.tr("&Help"))
        about = help_menu.addAction(self.tr("&About TrainLab"))
        about.setMenuRole(QAction.MenuRole.AboutRole)
        about.setShortcuts(QKeySequence.StandardKey.HelpContents)
        about.triggered.connect(self.show_about)
        about_qt = help_menu.addAction(self.tr("About &Qt"))
        about_qt.setMenuRole(QAction.MenuRole.AboutQtRole)
        about_qt.triggered.connect(QApplication.aboutQt)

    # ----------------------------------------------------------- deferred setup
    def start_setup(self) -> None:
        """Finish setting up without freezing the window; ``ready`` when done.

        Measured on the 2-core development machine, doing it all at once on
        the GUI thread left the window unanswered for 0.42 s right after it
        appeared: importing pyqtgraph (which creates every PySide enum) and
        numpy was 0.3 s of it.  Those imports and the plugin discovery go to
        a background thread; the pages are then built one per event-loop turn.
        """
        if self.is_ready or self._setup_started:
            return
        self._setup_started = True
        from trainlab.desktop import background

        background.start(_import_for_setup, self._setup_imported, self._setup_import_failed)

    def _setup_imported(self, _tag, _result) -> None:
        self._next_setup_step()

    def _setup_import_failed(self, _tag, message: str, details: str) -> None:
        # the same imports, made again on this thread by the steps, raise
        # where the window reports them (a missing page, a failed plugin)
        log.warning("loading the window's modules in the background failed: %s", message)
        log.debug("%s", details)
        self._next_setup_step()

    def _next_setup_step(self) -> None:
        steps = self._pending_setup_steps()
        if steps:
            steps.pop(0)()
        if steps:
            QTimer.singleShot(0, self._next_setup_step)

    def finish_setup(self) -> None:
        """Everything that may take a moment, at once (what is left of it)."""
        steps = self._pending_setup_steps()
        while steps:
            steps.pop(0)()

    def _pending_setup_steps(self) -> list:
        if self._setup_steps is None:
            self._setup_steps = [] if self.is_ready else [
                self._setup_registry,
                self._build_train_page,
                self._build_gpu_panel,
                self._build_history_page,
                self._build_result_pages,
                self._setup_done,
            ]
        return self._setup_steps

    def _setup_registry(self) -> None:
        from trainlab.desktop.log_panel import LogPanel
        from trainlab.pluginhost import registry

        self._setup_began = time.perf_counter()
        self._build_log_dock()
        self.log_panel = LogPanel(self.log_dock)
        self.log_panel.attach()
        self.log_dock.setWidget(self.log_panel)
        self.registry = registry()
        self._check_system_theme()

    def _build_log_dock(self) -> None:
        Qt = QtCore.Qt
        dock = QDockWidget(self.tr("Log"), self)
        dock.setObjectName("log_dock")
        dock.setAllowedAreas(Qt.DockWidgetArea.BottomDockWidgetArea | Qt.DockWidgetArea.RightDockWidgetArea)
        self.log_dock = dock
        # where the last session left it (restoreState kept its part for it)
        if not self.restoreDockWidget(dock):
            self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
            dock.hide()
            self.resizeDocks([dock], [170], Qt.Orientation.Vertical)
        self.log_action.setChecked(dock.isVisible())
        self.log_action.toggled.connect(dock.setVisible)
        dock.visibilityChanged.connect(self._log_dock_visibility)

    def _log_dock_visibility(self, visible: bool) -> None:
        if not self.isMinimized():  # minimising hides docks too: that is not the user closing it
            self.log_action.setChecked(visible)

    def _check_system_theme(self) -> None:
        """At start-up "system" was judged from the palette alone (style.py);
        now that the window shows, ask the desktop, and switch if it differs."""
        if self.settings.theme != "system":
            return
        from trainlab.desktop.style import resolve_theme

        if resolve_theme("system") != self.resolved_theme:
            self.set_theme("system")

    def _setup_done(self) -> None:
        started = self._setup_began
        self._update_samples()
        self.refresh_recent_runs()
        self._start_telemetry()
        self.is_ready = True
        self.status_label.setText(self.tr("Ready"))
        log.info("window ready in %.0f ms (%d task(s) from %d plugin(s))", (time.perf_counter() - started) * 1000,
                 len(self.registry.tasks), len(self.registry.plugins))
        failed = [p for p in self.registry.plugins if p.status == "failed"]
        if failed:
            names = ", ".join(p.name for p in failed)
            self.status_label.setText(self.tr("Some plugins failed to load: %s (Tools \u203a Plugins)") % names)
            for record in failed:
                log.warning("plugin %s failed: %s", record.name, record.message)
        self.ready.emit()
        if self._prefill is not None:
            prefill, self._prefill = self._prefill, None
            self.prefill(**prefill)

    def _build_train_page(self) -> None:
        from PySide6.QtWidgets import QComboBox, QScrollArea, QSplitter

        from trainlab.desktop.data_panel import DataPanel
        from trainlab.desktop.devices import device_choices
        from trainlab.desktop.params_form import ParamsForm
        from trainlab.desktop.plots import LivePlots
        from trainlab.desktop.run_controls import RunControls
        from trainlab.desktop.plots import plot_colors

        page = QSplitter(QtCore.Qt.Orientation.Horizontal, self.stack)
        page.setObjectName("train_page")
        page.setChildrenCollapsible(False)

        setup = QWidget()
        column = QVBoxLayout(setup)
        column.setContentsMargins(16, 12, 12, 12)
        column.setSpacing(8)
        column.addWidget(_heading(self.tr("Task"), setup))
        self.task_combo = QComboBox(setup)
        self.task_combo.setObjectName("task_combo")
        self.task_combo.setToolTip(self.tr("What to train; the tasks come from the installed plugins"))
        for task_id, entry in self.registry.tasks.items():
            plugin = entry.plugin
            label = f"{entry.spec.title}  \u2014  {plugin.name} {plugin.version}".rstrip()
            self.task_combo.addItem(label, task_id)
            tip = entry.spec.description or entry.spec.title
            self.task_combo.setItemData(self.task_combo.count() - 1, tip, QtCore.Qt.ItemDataRole.ToolTipRole)
        column.addWidget(self.task_combo)
        self.task_info = QLabel(setup)
        self.task_info.setProperty("role", "muted")
        self.task_info.setWordWrap(True)
        column.addWidget(self.task_info)
        if not self.registry.tasks:
            self.task_info.setText(
                self.tr("No task is available: no plugin provides one. See Tools \u203a Plugins for what went wrong.")
            )

        column.addSpacing(6)
        column.addWidget(_heading(self.tr("Data"), setup))
        self.data_panel = DataPanel(setup)
        column.addWidget(self.data_panel)
        column.addSpacing(6)
        column.addWidget(_heading(self.tr("Parameters"), setup))
        self.params_form = ParamsForm(setup)
        self.params_form.set_device_choices(device_choices())
        column.addWidget(self.params_form)
        column.addStretch(1)
        scroll = QScrollArea(page)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(setup)
        scroll.setMinimumWidth(380)

        live = QWidget(page)
        live_layout = QVBoxLayout(live)
        live_layout.setContentsMargins(12, 12, 16, 12)
        self.controls = RunControls(live)
        self.controls.set_mode(self.settings.run_mode)
        self.controls.modeChanged.connect(lambda mode: setattr(self.settings, "run_mode", mode))
        live_layout.addWidget(self.controls)
        curves_split = QSplitter(QtCore.Qt.Orientation.Vertical, live)
        self.plots = LivePlots(curves_split, plot_colors(self.resolved_theme))
        self.plots.setMinimumHeight(320)
        curves_split.addWidget(self.plots)
        self._curves_split = curves_split  # the GPU panel goes below (_build_gpu_panel)
        live_layout.addWidget(curves_split, 1)
        page.addWidget(scroll)
        page.addWidget(live)
        page.setStretchFactor(0, 0)
        page.setStretchFactor(1, 1)
        page.setSizes([420, 900])
        self._set_page("train", page)

        c = self.controls
        for action in (c.start_action, c.pause_action, c.stop_action, c.more_action):
            self.run_menu.addAction(action)
            self.addAction(action)  # shortcuts work whatever page is shown
        self.continue_action = QAction(self.tr("&Continue the stopped run"), self)
        self.continue_action.setToolTip(self.tr("Resume the stopped or failed run from its last checkpoint"))
        self.continue_action.triggered.connect(self.continue_run)
        self.run_menu.addAction(self.continue_action)
        c.start_action.triggered.connect(lambda: self.start_run())
        c.pause_action.triggered.connect(self.toggle_pause)
        c.stop_action.triggered.connect(self.stop_run)
        c.moreEpochsRequested.connect(self.train_more)

        self.task_combo.currentIndexChanged.connect(lambda _: self._task_chosen())
        self.params_form.validityChanged.connect(lambda _: self._update_actions())
        self.params_form.valuesChanged.connect(self._params_edited)
        self.data_panel.pathChanged.connect(lambda _: self._update_actions())
        self.data_panel.checkFinished.connect(self._data_checked)
        last = self.settings.last_task
        index = self.task_combo.findData(last) if last else -1
        self.task_combo.setCurrentIndex(index if index >= 0 else 0)
        self._task_chosen()

    def _build_gpu_panel(self) -> None:
        try:
            from trainlab.desktop.gpu_panel import GpuPanel
        except ImportError:  # a build without telemetry: the plots take the room
            return
        self.gpu_panel = GpuPanel(self._curves_split)
        self.gpu_panel.setMinimumHeight(150)
        self.gpu_panel.status_changed.connect(self.gpu_status.setText)
        self._curves_split.addWidget(self.gpu_panel)
        self._curves_split.setStretchFactor(0, 3)
        self._curves_split.setStretchFactor(1, 1)

    def _build_history_page(self) -> None:
        # Each page stays a marked placeholder if its module cannot load (a
        # trimmed build): the rest of the window works without it.
        try:
            from trainlab.desktop.history import RunHistoryView
            from trainlab.runs import RunStore

            self.history = RunHistoryView(RunStore(), self.stack)
            self.history.runOpened.connect(self.open_run)
            self.history.runsDeleted.connect(self._runs_deleted)
            self._set_page("history", self.history)
        except ImportError:
            self._set_page("history", _placeholder(self.tr("The run history is not available in this build."), self.stack))

    def _build_result_pages(self) -> None:
        try:
            from trainlab.desktop.results import ResultsView

            self.results = ResultsView(self.stack)
            self._set_page("results", self.results)
        except ImportError:
            self._set_page("results", _placeholder(self.tr("The results view is not available in this build."), self.stack))
        try:
            from trainlab.desktop.tryit import TryItPanel

            self.tryit = TryItPanel(self.stack)
            self._set_page("tryit", self.tryit)
        except ImportError:
            self._set_page("tryit", _placeholder(self.tr("Try it is not available in this build."), self.stack))

    def _start_telemetry(self) -> None:
        """One sampler for the window's life: the GPU panel is live even between runs."""
        if self.gpu_panel is None:
            return
        try:
            from trainlab.telemetry import TelemetrySampler
        except ImportError:
            return
        from trainlab.desktop._bridge import SampleBridge

        self._sample_bridge = SampleBridge(self)
        self._sample_bridge.sample.connect(self.gpu_panel.add_sample)
        self.sampler = TelemetrySampler(1.0)
        self._resume_window_sampler()

    def _pause_window_sampler(self) -> None:
        # A run samples the machine itself (its TelemetryCallback, with the
        # training process's torch memory): the panel then shows those.
        if self.sampler is not None and self.sampler.running:
            self.sampler.stop(timeout=2.0)

    def _resume_window_sampler(self) -> None:
        if self.sampler is not None and not self.sampler.running:
            self.sampler.start(self._sample_bridge.sample.emit)

    # --------------------------------------------------------------- tasks
    def task_id(self) -> str:
        if not hasattr(self, "task_combo"):
            return ""
        return str(self.task_combo.currentData() or "")

    def select_task(self, task_id: str) -> bool:
        index = self.task_combo.findData(task_id)
        if index < 0:
            return False
        self.task_combo.setCurrentIndex(index)
        return True

    def _task_chosen(self) -> None:
        task_id = self.task_id()
        if self._current_task and self._current_task != task_id:
            self._remember_task_values(self._current_task)
        self._current_task = task_id
        entry = self.registry.tasks.get(task_id) if self.registry else None
        spec = entry.spec if entry else None
        self.params_form.set_task(spec)
        if entry is not None:
            plugin = entry.plugin
            origin = plugin.distribution or plugin.name
            self.task_info.setText(
                (spec.description + "\n" if spec.description else "")
                + self.tr("From plugin %1 %2 (%3)").replace("%1", plugin.name).replace("%2", plugin.version or "?").replace("%3", origin)
            )
            remembered = self.settings.task_params(task_id)
            if remembered:
                unknown = self.params_form.set_values(remembered)
                if unknown:
                    log.info("ignoring remembered values the task no longer has: %s", ", ".join(unknown))
            self.settings.last_task = task_id
        # the data this task was last trained on, else whatever is there
        remembered_data = self.settings.task_data(task_id) if task_id else ""
        self.data_panel.set_task(spec, self._params_for_check, recheck=not remembered_data)
        if remembered_data:
            self.data_panel.set_path(remembered_data)
        self._update_actions()

    def _data_checked(self, summary) -> None:
        self._update_actions()
        if summary is not None and not self.prewarmed and not self._prewarming:
            from trainlab.desktop import background
            from trainlab.desktop.worker import prewarm_engine

            self._prewarming = True
            background.start(prewarm_engine, self._prewarm_done, self._prewarm_failed)

    def _prewarm_done(self, _tag, _result) -> None:
        self.prewarmed, self._prewarming = True, False
        log.debug("engine imports done ahead of Start")

    def _prewarm_failed(self, _tag, message: str, _tb: str) -> None:
        self._prewarming = False
        log.info("could not prepare the engine ahead of Start: %s", message)

    def _params_for_check(self) -> dict[str, Any]:
        try:
            return self.params_form.typed_values()
        except Exception:  # noqa: BLE001 - invalid values: check with the defaults
            return self.params_form.default_values()

    def _params_edited(self) -> None:
        # Only the task's own parameters (columns, split fraction) change what
        # prepare() sees; training parameters do not warrant a re-check.
        self.data_panel.schedule_recheck()

    def _remember_task_values(self, task_id: str) -> None:
        if not task_id or self.params_form.spec is None or self.params_form.spec.id != task_id:
            return
        self.settings.set_task_params(task_id, self.params_form.remembered_values())
        if self.data_panel.path():
            self.settings.set_task_data(task_id, self.data_panel.path())

    # ---------------------------------------------------------------- state
    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.isRunning()

    def start_blockers(self) -> list[str]:
        """Why Start is disabled (empty when it is not)."""
        if not self.is_ready:
            return [self.tr("TrainLab is still starting.")]
        reasons = []
        if self.running or self._follow_tail is not None and self._following_live:
            reasons.append(self.tr("A run is in progress."))
        if not self.task_id():
            reasons.append(self.tr("Choose a task."))
        if not self.data_panel.path():
            reasons.append(self.tr("Choose the data."))
        elif self.data_panel.error:
            reasons.append(self.data_panel.error)
        if not self.params_form.is_valid():
            reasons.append(self.tr("Fix the parameters marked in red."))
        return reasons

    _following_live = False

    def _update_actions(self) -> None:
        if not hasattr(self, "controls"):
            return
        if self.running:
            return
        blockers = self.start_blockers()
        can_continue = bool(self.current_run_dir) and self.current_run_status in ("completed", "cancelled", "failed")
        can_continue = can_continue and (Path(self.current_run_dir) / "checkpoints").is_dir()
        self.controls.set_idle(can_start=not blockers, can_continue=can_continue and self.current_run_status == "completed")
        self.continue_action.setEnabled(can_continue and self.current_run_status in ("cancelled", "failed"))
        self.controls.start_action.setToolTip(
            self.tr("Start training (Ctrl+Enter)") if not blockers else "\n".join(blockers)
        )

    # ---------------------------------------------------------------- runs
    def start_run(self, *, resume: str | None = None, more_epochs: int = 0) -> bool:
        """Start a run from the form (or continue ``resume``); False if it cannot start."""
        if self.running:
            return False
        from trainlab.engine.runner import RunRequest

        if resume:
            form = self.params_form.values() if self.params_form.spec else {}
            params = {k: form[k] for k in ("device", "precision") if k in form}
            request = RunRequest(resume=resume, more_epochs=int(more_epochs), params=params)
        else:
            blockers = self.start_blockers()
            if blockers:
                self.controls.show_message("\n".join(blockers))
                return False
            task_id = self.task_id()
            self._remember_task_values(task_id)
            self.settings.set_task_data(task_id, self.data_panel.path())
            request = RunRequest(task=task_id, data=self.data_panel.path(), params=self.params_form.values())
        self._stop_following()
        from trainlab.desktop.curves import RunCurves
        from trainlab.desktop.worker import TrainingWorker

        curves = RunCurves(self.plots.smoothing.value() / 100)
        if resume:
            metrics = Path(resume) / "metrics.jsonl"
            if metrics.is_file():
                try:
                    curves = RunCurves.from_metrics(metrics, self.plots.smoothing.value() / 100)
                except (OSError, ValueError) as exc:
                    log.info("could not read the earlier curves of %s: %s", resume, exc)
        self.plots.reset(curves)
        self.plots.start_live()
        self.last_error = ""
        self.controls.show_message("")
        from trainlab.desktop.run_controls import RunProgress

        self._progress = RunProgress()
        mode = self.controls.mode_value()
        worker = TrainingWorker(request, mode=mode, parent=self)
        worker.stateChanged.connect(self._worker_state)
        worker.eventBatch.connect(self._apply_batch)
        worker.errored.connect(self._run_errored)
        worker.runFinished.connect(self._run_finished)
        self.worker = worker
        self._run_started_at = time.monotonic()
        self.controls.set_running("preparing")
        self.status_label.setText(self.tr("Preparing the run\u2026"))
        what = f"continuing {resume}" if resume else f"{request.task} on {request.data}"
        log.info("starting a run (%s, %s)", what, "child process" if mode == "process" else "in this window")
        self._acquire_keep_awake()
        self._pause_window_sampler()
        worker.start()
        self.show_page("train")
        self.runStarted.emit()
        return True

    def train_more(self, epochs: int) -> bool:
        if not self.current_run_dir:
            return False
        return self.start_run(resume=self.current_run_dir, more_epochs=epochs)

    def continue_run(self) -> bool:
        if not self.current_run_dir:
            return False
        return self.start_run(resume=self.current_run_dir)

    def toggle_pause(self) -> None:
        if not self.running:
            return
        if self.worker.paused:
            self.worker.resume()
            log.info("run resumed")
        else:
            self.worker.pause()
            log.info("run paused (after the current step)")

    def stop_run(self) -> None:
        if self.running:
            self.worker.request_stop()
            log.info("stopping the run after the current step")

    def _worker_state(self, state: str) -> None:
        if self.worker is None or not self.worker.isRunning():
            return
        self.controls.set_running(state)
        if state != "preparing" and self._progress is not None:
            self.controls.show_progress(self._progress, state)
        text = {
            "preparing": self.tr("Preparing the run\u2026"),
            "running": self.tr("Training\u2026"),
            "paused": self.tr("Paused"),
            "stopping": self.tr("Stopping\u2026"),
        }.get(state, state)
        self.status_label.setText(text)

    def _apply_batch(self, batch) -> None:
        """Events from the worker (already coalesced): curves, progress, log."""
        self._apply_events(batch.started, batch.train, batch.evals, batch.progress, batch.logs)
        if self.gpu_panel is not None:
            for sample in batch.system:
                self.gpu_panel.add_sample(sample)

    def _apply_events(self, started, train, evals, progress, logs) -> None:
        curves = self.plots.curves
        prog = self._progress
        if started is not None:
            curves.started(started)
            self.current_run_dir = started.run_dir
            prog.total_steps, prog.epochs, prog.step = started.total_steps, started.epochs, started.step
            prog.epoch = started.epoch
            self.setWindowTitle(f"TrainLab \u2014 {Path(started.run_dir).name}")
            log.info("run %s started on %s (%s)", started.run_dir, started.device, started.precision)
            self._worker_state(self.worker.state if self.worker else "running")
        if train:
            curves.add_train(train)
            last = train[-1]
            prog.step, prog.epoch = last.step, last.epoch
            if last.samples_per_second:
                prog.samples_per_second = last.samples_per_second
        if evals:
            curves.add_evals(evals)
            for e in evals:
                run_log.info(
                    "epoch %d %s: loss %.4f, accuracy %.4f, macro F1 %.4f%s",
                    e.epoch, e.split, e.loss, e.accuracy, e.macro_f1, " (best so far)" if e.best else "",
                )
        if progress is not None:
            prog.step, prog.epoch = progress.step, progress.epoch
            prog.total_steps = progress.total_steps or prog.total_steps
            prog.epochs = progress.epochs or prog.epochs
            prog.samples_per_second = progress.samples_per_second or prog.samples_per_second
            prog.eta_seconds = progress.eta_seconds
            prog.phase = progress.phase
        for entry in logs:
            level = {"debug": logging.DEBUG, "warning": logging.WARNING, "error": logging.ERROR}.get(entry.level, logging.INFO)
            run_log.log(level, "%s", entry.message)
        if train or progress is not None or started is not None:
            state = self.worker.state if self.running else "running"
            self.controls.show_progress(prog, state)

    def _run_errored(self, message: str, tb: str) -> None:
        self.last_error = message
        log.error("the run failed: %s", message)
        if tb:
            log.error("%s", tb.rstrip())
        self.controls.show_message(self.tr("The run failed: %s") % message)
        from PySide6.QtWidgets import QMessageBox

        box = QMessageBox(QMessageBox.Icon.Critical, self.tr("The run failed"), message, QMessageBox.StandardButton.Close, self)
        box.setObjectName("run_error_box")
        box.setInformativeText(self.tr("The window stays usable: fix the cause and start again. The details are in the log panel."))
        if tb:
            box.setDetailedText(tb)
        box.setWindowModality(QtCore.Qt.WindowModality.NonModal)
        box.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        if not self._close_when_stopped:
            box.open()
        self._error_box = box

    def _run_finished(self, outcome) -> None:
        result = outcome.to_json()  # the worker's RunOutcome, as the plain values the window keeps
        worker = self.worker
        if worker is not None:
            worker.wait(5000)  # run() has returned; let the thread end fully
            worker.deleteLater()
        self.worker = None
        self.last_result = dict(result)
        self._release_keep_awake()
        self._resume_window_sampler()
        self.plots.stop_live()
        status = str(result.get("status") or "")
        run_dir = str(result.get("run_dir") or self.current_run_dir or "")
        self.current_run_dir = run_dir
        self.current_run_status = status
        elapsed = time.monotonic() - self._run_started_at
        metrics = result.get("metrics") or {}
        if status == "completed":
            acc = metrics.get("accuracy")
            text = self.tr("Finished: %s") % (
                self.tr("accuracy %s") % f"{acc:.4f}" if isinstance(acc, (int, float)) else self.tr("completed")
            )
            self.controls.bar.setValue(1000)
        elif status == "cancelled":
            text = self.tr("Stopped. The run kept its last checkpoint: Run \u203a Continue resumes it.")
        else:
            text = self.tr("Failed: %s") % (result.get("error") or self.tr("see the log"))
        self.controls.show_done(text)
        self.status_label.setText(text)
        log.info("run %s: %s (%s)", run_dir or "(none)", status, result.get("error") or "")
        self.setWindowTitle("TrainLab")
        self._update_actions()
        if status == "completed" and self.results is not None and run_dir:
            try:
                self.results.load_run(run_dir)
            except Exception as exc:  # noqa: BLE001 - another engineer's view: never take the window down
                log.warning("the results view could not show %s: %s", run_dir, exc)
        if status == "completed" and self.tryit is not None and run_dir:
            try:
                self.tryit.set_run(run_dir)
            except Exception as exc:  # noqa: BLE001
                log.warning("try-it could not load %s: %s", run_dir, exc)
        if self.history is not None:
            try:
                self.history.refresh()
            except Exception as exc:  # noqa: BLE001
                log.warning("the run history could not refresh: %s", exc)
        self.refresh_recent_runs()
        if not self._close_when_stopped:
            self._notify_end(status, text, elapsed)
        self.runFinished.emit(dict(result))
        if self._close_when_stopped:
            QTimer.singleShot(0, self.close)

    # ----------------------------------------------------- keep awake, notify
    def _acquire_keep_awake(self) -> None:
        from trainlab.desktop.notify import KeepAwake

        if self._keep_awake is None:
            self._keep_awake = KeepAwake()
        self._keep_awake.acquire()

    def _release_keep_awake(self) -> None:
        if self._keep_awake is not None:
            self._keep_awake.release()

    def _notify_end(self, status: str, text: str, elapsed: float) -> None:
        from trainlab.desktop.notify import LONG_RUN_SECONDS, notify

        if elapsed < LONG_RUN_SECONDS and self.isActiveWindow():
            return
        title = {
            "completed": self.tr("Training finished"),
            "cancelled": self.tr("Training stopped"),
        }.get(status, self.tr("Training failed"))
        from trainlab.desktop.about import app_icon_path

        notify(title, text, self, app_icon_path(128))

    # ------------------------------------------------------------ samples
    def sample_path(self, task_id: str) -> str:
        """The sample data of ``task_id`` ('' when there is none)."""
        from trainlab.desktop.welcome import sample_data_path

        return sample_data_path(self.registry, task_id)

    def _update_samples(self) -> None:
        from trainlab.desktop.welcome import sample_offers

        self.welcome.set_samples(sample_offers(self.registry))

    def try_sample(self, task_id: str) -> bool:
        """Pre-fill the sample of ``task_id`` with the task's defaults and start."""
        path = self.sample_path(task_id)
        if not path or not self.select_task(task_id):
            return False
        self.params_form.reset_defaults()
        self.data_panel.set_path(path)
        self.show_page("train")
        return self.start_run()

    # ------------------------------------------------------------- prefill
    def prefill(self, task: str | None = None, data: str | None = None, params: dict[str, str] | None = None,
                autostart: bool = False) -> None:
        """What ``trainlab gui --task --data --set --autostart`` asks for."""
        if not self.is_ready:
            self._prefill = {"task": task, "data": data, "params": params, "autostart": autostart}
            return
        if task:
            if not self.select_task(task):
                known = ", ".join(self.registry.tasks) or self.tr("none")
                self._show_problem(self.tr("Unknown task %1 (available: %2).").replace("%1", task).replace("%2", known))
                return
        if params:
            unknown = self.params_form.set_values(params)
            if unknown:
                self._show_problem(self.tr("Unknown parameter(s) for this task: %s") % ", ".join(unknown))
                autostart = False
        if data:
            self.data_panel.set_path(str(Path(data).expanduser()))
        if task or data or params:
            self.show_page("train")
        if autostart:
            if not self.start_run():
                self._show_problem(self.tr("Cannot start: %s") % " ".join(self.start_blockers()))

    def _show_problem(self, message: str) -> None:
        log.warning("%s", message)
        self.status_label.setText(message)
        if hasattr(self, "controls"):
            self.controls.show_message(message)

    # ------------------------------------------------------------ past runs
    def refresh_recent_runs(self) -> None:
        from trainlab.desktop import background

        def load():
            from trainlab.runs import RunStore

            return RunStore().list()

        background.start(load, self._recent_runs_loaded, self._recent_runs_failed)

    def _recent_runs_loaded(self, _tag, rows) -> None:
        self.welcome.set_recent_runs(rows)

    def _recent_runs_failed(self, _tag, message: str, _tb: str) -> None:
        log.info("run index unavailable: %s", message)

    def open_run(self, run_dir: str) -> None:
        """Show a past (or running) run: its curves here, its results page."""
        if not self.is_ready:
            return
        path = Path(run_dir)
        if not (path / "run.json").is_file():
            self._show_problem(self.tr("%s is not a TrainLab run folder (no run.json).") % run_dir)
            return
        if not self.running:
            from trainlab.desktop.curves import RunCurves

            self._stop_following()
            metrics = path / "metrics.jsonl"
            curves = RunCurves(self.plots.smoothing.value() / 100)
            self.plots.reset(curves)
            from trainlab.desktop.run_controls import RunProgress

            self._progress = RunProgress()
            if metrics.is_file():
                self._follow(metrics)
            status = ""
            try:
                from trainlab.runs import RunDir

                status = str(RunDir(path).read().get("status", ""))
            except Exception as exc:  # noqa: BLE001
                log.info("cannot read %s: %s", path / "run.json", exc)
            self.current_run_dir, self.current_run_status = str(path), status
            if status == "running":
                self._following_live = True
                self.status_label.setText(self.tr("Following %s as it runs") % path.name)
            else:
                self._stop_following()
            self._update_actions()
        if self.results is not None:
            try:
                self.results.load_run(str(path))
            except Exception as exc:  # noqa: BLE001
                log.warning("the results view could not show %s: %s", path, exc)
        if self.tryit is not None:
            try:
                self.tryit.set_run(str(path))
            except Exception as exc:  # noqa: BLE001
                log.warning("try-it could not load %s: %s", path, exc)
        self.show_page("results" if (path / "eval.json").is_file() and self.results is not None else "train")

    def _follow(self, metrics: Path) -> None:
        from trainlab.tail import MetricsTail

        self._follow_tail = MetricsTail(metrics)
        if getattr(self, "_follow_timer", None) is None:
            self._follow_timer = QTimer(self)
            self._follow_timer.setInterval(500)
            self._follow_timer.timeout.connect(self._follow_tick)
        self._follow_tick()
        self._follow_timer.start()
        self.plots.start_live()

    def _follow_tick(self) -> None:
        if self._follow_tail is None:
            return
        from trainlab.events import EvalResult, Finished, Progress, Started, TrainStep

        events = self._follow_tail.read_new()
        if not events:
            return
        started = next((e for e in reversed(events) if isinstance(e, Started)), None)
        train = tuple(e for e in events if isinstance(e, TrainStep))
        evals = tuple(e for e in events if isinstance(e, EvalResult))
        progress = next((e for e in reversed(events) if isinstance(e, Progress)), None)
        self._apply_events(started, train, evals, progress, ())
        if any(isinstance(e, Finished) for e in events) and self._following_live:
            self._following_live = False
            self.status_label.setText(self.tr("The followed run has ended."))
            self._stop_following()
            self._update_actions()

    def _stop_following(self) -> None:
        timer = getattr(self, "_follow_timer", None)
        if timer is not None:
            timer.stop()
        self._follow_tail = None
        self._following_live = False
        if self.plots is not None and not self.running:
            self.plots.stop_live()

    def _runs_deleted(self, run_dirs: list) -> None:
        if self.current_run_dir and self.current_run_dir in [str(d) for d in run_dirs]:
            self.current_run_dir, self.current_run_status = "", ""
            self._update_actions()
        self.refresh_recent_runs()

    # ------------------------------------------------------------ dialogs
    def _open_data(self) -> None:
        self.show_page("train")
        if self.is_ready:
            spec = self.params_form.spec
            if spec is not None and spec.data_kind == "file":
                self.data_panel.choose_file()
            else:
                self.data_panel.choose_folder()

    def _open_run_folder(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        from trainlab.paths import runs_dir

        folder = QFileDialog.getExistingDirectory(self, self.tr("Open a run folder"), str(runs_dir()))
        if folder:
            self.open_run(folder)

    def show_plugins(self) -> None:
        if self.registry is None:
            return
        from trainlab.desktop.plugins_dialog import PluginsDialog

        dialog = PluginsDialog(self.registry, self)
        dialog.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        self.plugins_dialog = dialog
        dialog.open()

    def show_about(self) -> None:
        from trainlab.desktop.about import AboutDialog

        dialog = AboutDialog(self)
        dialog.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        self.about_dialog = dialog
        dialog.open()

    def set_theme(self, theme: str) -> None:
        from trainlab.desktop.plots import plot_colors
        from trainlab.desktop.style import apply_theme

        self.settings.theme = theme
        self.resolved_theme = apply_theme(QApplication.instance(), theme)
        if self.plots is not None:
            self.plots.apply_colors(plot_colors(self.resolved_theme))

    def _color_scheme_changed(self, *_args) -> None:
        if self.settings.theme == "system":
            self.set_theme("system")

    def set_language(self, language: str | None) -> None:
        self.settings.language = language
        from PySide6.QtWidgets import QMessageBox

        QMessageBox.information(
            self, self.tr("Language"), self.tr("The new language is used the next time TrainLab starts.")
        )

    # ------------------------------------------------------------ closing
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        if self.running:
            event.ignore()
            if self._close_when_stopped:
                return  # already stopping; the window closes when the run has
            self._ask_close()
            return
        self._shutdown()
        event.accept()

    def _ask_close(self) -> None:
        from PySide6.QtWidgets import QMessageBox

        box = QMessageBox(
            QMessageBox.Icon.Question,
            self.tr("Stop the run and quit?"),
            self.tr("A run is in progress."),
            QMessageBox.StandardButton.NoButton,
            self,
        )
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
                self.stop_for_close()
            self._close_box = None

        box.finished.connect(answered)
        self._close_box = box
        box.open()

    def stop_for_close(self) -> None:
        """Stop the run; the window closes once the worker has ended."""
        self._close_when_stopped = True
        self.status_label.setText(self.tr("Stopping the run before closing\u2026"))
        if self.running:
            self.worker.request_stop()
        else:
            QTimer.singleShot(0, self.close)

    def _shutdown(self) -> None:
        if getattr(self, "_shut_down", False):
            return
        self._shut_down = True
        if self.is_ready:
            self._remember_task_values(self.task_id())
        self._save_geometry()
        self._stop_following()
        if self.sampler is not None:
            self.sampler.close()
            self.sampler = None
        self._release_keep_awake()
        from trainlab.desktop import background

        background.wait_all(10_000)
        if self.log_panel is not None:
            self.log_panel.detach()

    def _save_geometry(self) -> None:
        self.settings.geometry = bytes(self.saveGeometry().toBase64()).decode("ascii")
        self.settings.window_state = bytes(self.saveState().toBase64()).decode("ascii")

    def _restore_geometry(self) -> None:
        geometry = self.settings.geometry
        if geometry:
            self.restoreGeometry(QByteArray.fromBase64(geometry.encode("ascii")))
        else:
            self.resize(1360, 860)
        state = self.settings.window_state
        if state:
            self.restoreState(QByteArray.fromBase64(state.encode("ascii")))

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange and self.plots is not None:
            from trainlab.desktop.plots import plot_colors
            from trainlab.desktop.style import resolve_theme

            self.resolved_theme = resolve_theme(self.settings.theme)
            self.plots.apply_colors(plot_colors(self.resolved_theme))
        super().changeEvent(event)


# What the pages import (``start_setup`` imports them in the background first).
_SETUP_MODULES = (
    "numpy",
    "pyqtgraph",
    "trainlab.desktop.data_panel",
    "trainlab.desktop.gpu_panel",
    "trainlab.desktop.history",
    "trainlab.desktop.log_panel",
    "trainlab.desktop.params_form",
    "trainlab.desktop.plots",
    "trainlab.desktop.results",
    "trainlab.desktop.run_controls",
    "trainlab.desktop.tryit",
)


def _import_for_setup() -> None:
    """The modules the pages need, and the plugins (``start_setup``'s background half)."""
    import importlib

    from trainlab.desktop.worker import importing_heavy_modules
    from trainlab.pluginhost import registry

    with importing_heavy_modules(torch=False):
        for name in _SETUP_MODULES:
            importlib.import_module(name)
        registry()

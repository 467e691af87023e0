"""The main window: it composes the views and owns no run state.

``MainWindow()`` builds the shell (navigation, start view, menus, status
bar) and nothing heavy; ``start_setup()``, called by the app right after the
window is shown, builds the rest without freezing it (``WindowSetup``), and
``finish_setup()`` does the same at once (tests, scripts).  torch is only
ever imported off the GUI thread: by the data check and by the training
worker.

Where things live: the run is a ``RunController`` (``self.runs``: the
worker, and the ``RunSession`` that is the run's state); the Train page
(``TrainPage``) turns the form into a run request; ``SessionView`` draws
the session on the run's widgets; what the window remembers is
``DesktopSettings``.  The window wires them and reacts to a run's end
(results, history, notification).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from PySide6.QtCore import QT_TRANSLATE_NOOP, QByteArray, QEvent, QPoint, QRect, QSize, QTimer, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QStackedWidget,
    QWidget,
)

from trainlab.pluginhost.status import PluginStatus
from trainlab.runfolder.status import RunStatus
from trainlab.viewmodel.settings import DesktopSettings
from trainlab_desktop.common.placeholder import placeholder
from trainlab_desktop.common.style import apply_theme, resolve_theme
from trainlab_desktop.run.welcome import WelcomeView, sample_offers
from trainlab_desktop.window_menus import WindowMenus

log = logging.getLogger("trainlab.desktop")

PAGES = ("welcome", "train", "history", "results", "tryit", "queue")
# What the start page and the history say when the index cannot be used on a
# full disk and the runs are read from their folders (MainWindow's context).
READ_ONLY_NOTE = QT_TRANSLATE_NOOP("MainWindow", "The disk holding the run index is full: the runs are listed read-only from their folders.")


def _guarded(what: str, call, *args) -> None:
    """Call into another view; its failure is logged, never takes the window down."""
    try:
        call(*args)
    except Exception as exc:  # noqa: BLE001
        log.warning("%s: %s", what, exc)


class MainWindow(QMainWindow):
    """The TrainLab window."""

    ready = Signal()  # finish_setup() is done: plugins found, pages built
    runStarted = Signal()
    runFinished = Signal(object)  # the run's RunOutcome, after the window handled it

    def __init__(self, settings: DesktopSettings | None = None, resolved_theme: str = "light"):
        super().__init__()
        self.settings = settings or DesktopSettings()
        self.resolved_theme = resolved_theme
        self.is_ready = False
        self.registry = None
        self.runs = None  # RunController, built with the Train page
        self.train_page = self.session_view = self.telemetry = None
        self.plots = self.gpu_panel = self.history = self.results = self.tryit = None
        self.log_panel = self.log_dock = None  # built once the window shows
        self.queue_page = None  # QueuePage (trainlab_desktop.scheduling.queue_view), built with the other pages
        self._dialogs = None  # RunDialogs (QMessageBox is imported when needed: start-up time)
        self._prefill: dict[str, Any] | None = None
        self._close_when_stopped = False
        self._setup = None  # WindowSetup, made (and imported) once the window shows

        self.setWindowTitle("TrainLab")
        self.setObjectName("MainWindow")
        self.setMinimumSize(QSize(960, 640))
        hints = QApplication.styleHints()
        if hasattr(hints, "colorSchemeChanged"):  # Qt 6.5+: the desktop switched light/dark
            hints.colorSchemeChanged.connect(self._color_scheme_changed)
        self._build_shell()
        self.menus = WindowMenus(self, PAGES)
        self.log_action, self.plugins_action = self.menus.log_action, self.menus.plugins_action
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
        titles = (self.tr("Start"), self.tr("Train"), self.tr("Runs"), self.tr("Results"), self.tr("Try it"), self.tr("Queue"))
        for title in titles:  # row i is PAGES[i]
            self.nav.addItem(QListWidgetItem(title))
        self.stack = QStackedWidget(central)
        self.pages: dict[str, QWidget] = {}
        self.welcome = WelcomeView(self.stack)
        self.welcome.newTrainingRequested.connect(lambda: self.show_page("train"))
        self.welcome.sampleRequested.connect(self.try_sample)
        self.welcome.runOpened.connect(self.open_run)
        self.welcome.historyRequested.connect(lambda: self.show_page("history"))
        self._set_page("welcome", self.welcome)
        for key in PAGES[1:]:
            self._set_page(key, placeholder(self.tr("Loading\u2026"), self.stack))
        self.nav.currentRowChanged.connect(self.stack.setCurrentIndex)
        self.nav.setCurrentRow(0)
        row.addWidget(self.nav)
        row.addWidget(self.stack, 1)
        self.setCentralWidget(central)
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

    # ----------------------------------------------------------- deferred setup
    def start_setup(self) -> None:
        """Finish setting up without freezing the window; ``ready`` when done."""
        self._setup_steps().start()

    def finish_setup(self) -> None:
        """Everything that may take a moment, at once (what is left of it)."""
        self._setup_steps().finish()

    def _setup_steps(self):
        if self._setup is None:
            from trainlab_desktop.window_setup import WindowSetup

            self._setup = WindowSetup(self, self._setup_done)
        return self._setup

    def _check_system_theme(self) -> None:
        """At start-up "system" was judged from the palette alone (style.py);
        now that the window shows, ask the desktop, and switch if it differs."""
        if self.settings.theme == "system" and resolve_theme("system") != self.resolved_theme:
            self.set_theme("system")

    def _setup_done(self) -> None:
        self._build_queue_page()
        self.welcome.set_samples(sample_offers(self.registry))
        self.refresh_recent_runs()
        self.is_ready = True
        self.status_label.setText(self.tr("Ready"))
        log.info("window ready in %.0f ms (%d task(s) from %d plugin(s))", (time.perf_counter() - self._setup.began) * 1000,
                 len(self.registry.tasks), len(self.registry.plugins))
        failed = [p for p in self.registry.plugins if p.status == PluginStatus.FAILED]
        if failed:
            names = ", ".join(p.name for p in failed)
            self.status_label.setText(self.tr("Some plugins failed to load: %s (Tools \u203a Plugins)") % names)
            for record in failed:
                log.warning("plugin %s failed: %s", record.name, record.message)
        self.ready.emit()
        if self._prefill is not None:
            prefill, self._prefill = self._prefill, None
            self.prefill(**prefill)

    # ------------------------------------------------- the run, as others read it
    session = property(lambda self: self.runs.session if self.runs else None)
    worker = property(lambda self: self.runs.worker if self.runs else None)
    running = property(lambda self: self.runs is not None and self.runs.running)
    current_run_dir = property(lambda self: self.runs.session.run_dir if self.runs else "")
    last_result = property(lambda self: self.runs.session.result if self.runs else None)  # RunOutcome
    prewarmed = property(lambda self: self.train_page is not None and self.train_page.prewarmed)
    error_box = property(lambda self: self._dialogs.error_box if self._dialogs else None)  # the last run error shown
    close_box = property(lambda self: self._dialogs.close_box if self._dialogs else None)  # "stop the run and quit?"

    def task_id(self) -> str:
        return self.train_page.task_id() if self.train_page else ""

    def select_task(self, task_id: str) -> bool:
        return self.train_page.select_task(task_id)

    def start_blockers(self) -> list[str]:
        """Why Start is disabled (empty when it is not)."""
        return self.train_page.start_blockers() if self.is_ready else [self.tr("TrainLab is still starting.")]

    def start_run(self, *, resume: str | None = None, more_epochs: int = 0) -> bool:
        return self.train_page.start_run(resume=resume, more_epochs=more_epochs)

    def stop_run(self) -> None:
        self.runs.stop()

    @property
    def dialogs(self):
        if self._dialogs is None:
            from trainlab_desktop.dialogs.run import RunDialogs

            self._dialogs = RunDialogs(self)
        return self._dialogs

    # --------------------------------------------------- a run starts and ends
    def _run_started(self) -> None:
        if self.telemetry is not None:
            self.telemetry.pause()  # the run samples the machine itself
        if self.gpu_panel is not None and self.worker is not None and self.worker.launch is not None:
            self.gpu_panel.clear()  # a group's panel draws the group's own GPUs (RunProcess.view)
        self.show_page("train")
        self.runStarted.emit()

    def _run_errored(self, message: str, tb: str) -> None:
        log.error("the run failed: %s", message)
        if tb:
            log.error("%s", tb.rstrip())
        self.controls.show_message(self.tr("The run failed: %s") % message)
        self.dialogs.show_error(message, tb, show=not self._close_when_stopped)

    def _run_ended(self, outcome) -> None:
        if self.telemetry is not None:
            self.telemetry.resume()
        run_dir = outcome.run_dir or self.current_run_dir
        if outcome.status == RunStatus.COMPLETED and run_dir:
            if self.results is not None:
                _guarded(f"the results view could not show {run_dir}", self.results.load_run, run_dir)
            if self.tryit is not None:
                _guarded(f"try-it could not load {run_dir}", self.tryit.set_run, run_dir)
        if self.history is not None:
            _guarded("the run history could not refresh", self.history.refresh)
        self.refresh_recent_runs()
        if not self._close_when_stopped:
            self.session_view.notify_end(outcome.status, self.runs.elapsed)
        self.runFinished.emit(outcome)
        if self._close_when_stopped:
            QTimer.singleShot(0, self.close)

    # ------------------------------------------------------------ the queue
    def _build_queue_page(self) -> None:
        try:
            from trainlab.scheduling.queue_board import QueueBoard
            from trainlab_desktop.scheduling.queue_view import QueuePage

            self.queue_page = QueuePage(QueueBoard(), self.resolved_theme, self.stack)
        except Exception as exc:  # noqa: BLE001 - an unreadable queue file must not keep the window from starting
            log.warning("the queue is not available: %s", exc)
            self._set_page("queue", placeholder(self.tr("The queue is not available: %s") % exc, self.stack))
            return
        self._set_page("queue", self.queue_page)
        self.train_page.queue_action.triggered.connect(self.add_to_queue)

    def add_to_queue(self) -> int | None:
        """Queue the Train page's run (the queue's scheduler starts it when a GPU or the CPU is free)."""
        if self.queue_page is None or self.train_page is None:
            return None
        try:
            task, data, params = self.train_page.queue_request()
            entry = self.queue_page.queue.board.add_run(task, data, params)
        except Exception as exc:  # noqa: BLE001 - UsageError: the reason, on the controls
            self.controls.show_message(str(exc))
            return None
        self.queue_page.queue.refresh(force=True)
        row = self.queue_page.queue.board.row(entry.id)
        place = row.position if row is not None and row.position else "-"
        self.controls.show_message(self.tr("Queued %1 (place %2 in line); see the Queue page.").replace("%1", str(entry.id))
                                   .replace("%2", str(place)), role="info")
        return entry.id

    # ------------------------------------------------------------ samples, prefill
    def sample_path(self, task_id: str) -> str:
        """The bundled sample data of ``task_id`` ('' when there is none)."""
        return self.train_page.sample_path(task_id) if self.train_page else ""

    def try_sample(self, task_id: str) -> bool:
        """Pre-fill the sample of ``task_id`` with the task's defaults and start."""
        return self.train_page is not None and self.train_page.try_sample(task_id)

    def prefill(self, task: str | None = None, data: str | None = None, params: dict[str, str] | None = None,
                autostart: bool = False) -> None:
        """What ``trainlab gui --task --data --set --autostart`` asks for (once the window is ready)."""
        if not self.is_ready:
            self._prefill = {"task": task, "data": data, "params": params, "autostart": autostart}
            return
        for problem in self.train_page.prefill(task, data, params, autostart):
            self._show_problem(problem)
        if (task or data or params) and (not task or self.task_id() == task):
            self.show_page("train")

    def _show_problem(self, message: str) -> None:
        log.warning("%s", message)
        self.status_label.setText(message)
        if self.train_page is not None:
            self.controls.show_message(message)

    # ------------------------------------------------------------ past runs
    def refresh_recent_runs(self) -> None:
        from trainlab_desktop.common import background

        def load():
            from trainlab.runfolder.index import RunStore

            store = RunStore(read_only_when_full=True)  # on a full disk, from the run folders (as `trainlab runs`)
            rows = store.list()
            return rows, store.read_only

        def loaded(_tag, result) -> None:
            rows, read_only = result
            self.welcome.set_recent_runs(rows, note=self.tr(READ_ONLY_NOTE) if read_only else "")

        def failed(_tag, message: str, _tb) -> None:
            log.info("run index unavailable: %s", message)
            self.welcome.set_recent_runs_unavailable(message)

        background.start(load, loaded, failed)

    def open_run(self, run_dir: str) -> None:
        """Show a past (or running) run: its curves here, its results page."""
        if not self.is_ready:
            return
        from trainlab.runfolder.index import RunDir

        folder = RunDir(run_dir)
        if not folder.exists():
            return self._show_problem(self.tr("%s is not a TrainLab run folder (no run.json).") % run_dir)
        if self.runs.follow(folder.path) and self.session.following:
            self.status_label.setText(self.tr("Following %s as it runs") % folder.path.name)
        if self.session.bad_lines:
            self.status_label.setText(
                self.tr("%d lines of metrics.jsonl in %s are not events and were skipped")
                % (self.session.bad_lines, folder.path.name)
            )
        if self.results is not None:
            _guarded(f"the results view could not show {folder.path}", self.results.load_run, str(folder.path))
        if self.tryit is not None:
            _guarded(f"try-it could not load {folder.path}", self.tryit.set_run, str(folder.path))
        self.show_page("results" if folder.eval_json.is_file() and self.results is not None else "train")

    def _runs_deleted(self, run_dirs: list) -> None:
        self.runs.forget(run_dirs)
        self.refresh_recent_runs()

    # ------------------------------------------------------------ dialogs
    def open_data(self) -> None:
        self.show_page("train")
        if self.is_ready:
            self.train_page.choose_data()

    def show_plugins(self) -> None:
        self.menus.show_plugins()  # Tools > Plugins: window.plugins_dialog

    def show_about(self) -> None:
        self.menus.show_about()  # Help > About: window.about_dialog

    def set_theme(self, theme: str) -> None:
        from trainlab_desktop.plots.live_plots import plot_colors

        self.settings.theme = theme
        self.resolved_theme = apply_theme(QApplication.instance(), theme)
        if self.plots is not None:
            self.plots.apply_colors(plot_colors(self.resolved_theme))

    def _color_scheme_changed(self, *_args) -> None:
        if self.settings.theme == "system":
            self.set_theme("system")

    # ------------------------------------------------------------ closing
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        if self.running:
            event.ignore()
            if not self._close_when_stopped:  # else already stopping: the window closes when the run has
                self.dialogs.ask_stop_and_quit(self.stop_for_close)
            return
        self._shutdown()
        event.accept()

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
            self.train_page.remember_task_values()
        self._save_geometry()
        if self.runs is not None:
            self.runs.shutdown()
        if self.queue_page is not None:
            self.queue_page.shutdown()  # its timers; the queue and its scheduler go on
        if self.telemetry is not None:
            self.telemetry.close()
        if self.train_page is not None:
            self.train_page.data_panel.stop_check()
            self.train_page.estimates.shutdown()  # its children and their probes
        if getattr(self, "tryit", None) is not None:
            self.tryit.shutdown()  # a chat's answer ends at its next token
        from trainlab_desktop.common import background

        background.wait_all(10_000)
        if self.log_panel is not None:
            self.log_panel.detach()

    def _save_geometry(self) -> None:
        self.settings.geometry = bytes(self.saveGeometry().toBase64()).decode("ascii")
        self.settings.window_state = bytes(self.saveState().toBase64()).decode("ascii")

    def _restore_geometry(self) -> None:
        # the size and place the window had when it last closed; Qt refuses one saved on a
        # screen of another size (a 1280x800 window's on 1920x1080), which left the window at
        # its 960x640 minimum in a corner: the first launch's size then
        saved = self.settings.geometry
        if not (saved and self.restoreGeometry(QByteArray.fromBase64(saved.encode("ascii")))):
            self.setGeometry(self._first_geometry())
        if self.settings.window_state:
            self.restoreState(QByteArray.fromBase64(self.settings.window_state.encode("ascii")))

    # The first launch takes this share of the screen's free area (what panels
    # and docks leave), centred, and not a wall of empty space on a large
    # monitor; on a laptop screen as much of it as it takes for the plots to sit
    # side by side beside the form (FIRST_ROOMY, less a window frame's title bar).
    FIRST_SHARE = 0.9
    FIRST_MAX = QSize(1800, 1150)
    FIRST_ROOMY = QSize(1280, 800)
    FRAME_ALLOWANCE = 40

    def _first_geometry(self) -> QRect:
        screen = self.screen() or QApplication.primaryScreen()
        if screen is None:
            return QRect(QPoint(0, 0), self._first_size())
        free = screen.availableGeometry()
        rect = QRect(QPoint(0, 0), self._first_size())
        rect.moveCenter(free.center())
        return rect

    def _first_size(self) -> QSize:
        """``FIRST_SHARE`` of the screen's free area, or ``FIRST_ROOMY`` where that is more and the
        screen has room (at most ``FIRST_MAX``), never under the minimum."""
        screen = self.screen() or QApplication.primaryScreen()
        if screen is None:
            return QSize(1360, 860)
        free = screen.availableGeometry().size()
        wanted = QSize(round(free.width() * self.FIRST_SHARE), round(free.height() * self.FIRST_SHARE))
        roomy = self.FIRST_ROOMY.boundedTo(QSize(free.width(), free.height() - self.FRAME_ALLOWANCE))
        return wanted.expandedTo(roomy).boundedTo(self.FIRST_MAX).expandedTo(self.minimumSize())

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange and self.plots is not None:
            from trainlab_desktop.plots.live_plots import plot_colors

            self.resolved_theme = resolve_theme(self.settings.theme)
            self.plots.apply_colors(plot_colors(self.resolved_theme))
        super().changeEvent(event)

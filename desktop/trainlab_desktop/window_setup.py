"""The window's set-up after it is shown, in steps that keep it answering.

``MainWindow()`` builds the shell (navigation, start view, menus, status
bar); ``start`` (called right after the window is shown) imports pyqtgraph,
numpy, the pages' modules and the plugins in a background thread, then
builds the rest one step per turn of the event loop: the log dock and the
plugins, the Train page with the run controller and its session view, the
GPU panel, the history, results and try-it pages, the window's telemetry.  ``finish`` runs what is
left at once (tests, scripts).  Each page stays a marked placeholder if its
module cannot load (a trimmed build): the rest of the window works without it.

Done all at once on the GUI thread, it left the window unanswered for a
noticeable moment right after it appeared, most of it importing pyqtgraph
(which creates every PySide enum) and numpy.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

from PySide6 import QtCore
from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QDockWidget


log = logging.getLogger("trainlab.desktop")


def import_for_setup() -> None:
    """The modules the pages need, and the plugins (``start``'s background half).

    ``trainlab_desktop.pages`` imports every module the pages are built from;
    importing it here, on a worker thread, is what lets the steps below import
    the same names on the GUI thread without waiting.
    """
    from trainlab.pluginhost.host import registry
    from trainlab_desktop.run.training_thread import importing_heavy_modules

    with importing_heavy_modules(torch=False):
        from trainlab_desktop import pages  # noqa: F401 - imported for the modules it loads
    registry()


class WindowSetup(QObject):
    """Builds what ``window`` lacks after its shell, once, without freezing it."""

    def __init__(self, window: Any, done: Callable[[], None]):
        super().__init__(window)
        self.window = window
        self._steps = [self._registry, self._train_page, self._gpu_panel, self._history_page, self._result_pages,
                       self._telemetry, done]
        self.started = False
        self.began = 0.0

    @property
    def done(self) -> bool:
        return not self._steps

    def start(self) -> None:
        if self.started or self.done:
            return
        self.started = True
        from trainlab_desktop.common import background

        background.start(import_for_setup, self._imported, self._import_failed)

    def _imported(self, _tag, _result) -> None:
        self._next()

    def _import_failed(self, _tag, message: str, details: str) -> None:
        # the same imports, made again on this thread by the steps, raise
        # where the window reports them (a missing page, a failed plugin)
        log.warning("loading the window's modules in the background failed: %s", message)
        log.debug("%s", details)
        self._next()

    def _next(self) -> None:
        if self._steps:
            self._steps.pop(0)()
        if self._steps:
            QTimer.singleShot(0, self._next)

    def finish(self) -> None:
        """What is left of the steps, at once."""
        while self._steps:
            self._steps.pop(0)()

    # -- the steps ---------------------------------------------------------------------
    def _registry(self) -> None:
        from trainlab_desktop.pages import LogPanel
        from trainlab.pluginhost.host import registry

        w = self.window
        self.began = time.perf_counter()
        Qt = QtCore.Qt
        dock = w.log_dock = QDockWidget(self.tr("Log"), w)
        dock.setObjectName("log_dock")
        dock.setAllowedAreas(Qt.DockWidgetArea.BottomDockWidgetArea | Qt.DockWidgetArea.RightDockWidgetArea)
        if not w.restoreDockWidget(dock):  # where the last session left it, else hidden below
            w.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
            dock.hide()
            w.resizeDocks([dock], [170], Qt.Orientation.Vertical)
        w.log_action.setChecked(dock.isVisible())
        w.log_action.toggled.connect(dock.setVisible)
        dock.visibilityChanged.connect(self._log_dock_visibility)
        w.log_panel = LogPanel(dock)
        w.log_panel.attach()
        dock.setWidget(w.log_panel)
        w.registry = registry()
        w._check_system_theme()

    def _log_dock_visibility(self, visible: bool) -> None:
        if not self.window.isMinimized():  # minimising hides docks too: that is not the user closing it
            self.window.log_action.setChecked(visible)

    def _train_page(self) -> None:
        from trainlab_desktop.pages import RunController, SessionView, TrainPage

        w = self.window
        w.runs = RunController(w)
        page = w.train_page = TrainPage(w.registry, w.settings, w.runs, w.resolved_theme, w.stack)
        w._set_page("train", page)
        w.controls, w.plots, w.continue_action = page.controls, page.plots, page.continue_action
        w.params_form, w.data_panel, w.task_combo = page.params_form, page.data_panel, page.task_combo
        w.menus.add_run_actions(w, page.controls, page.continue_action)
        page.resultsRequested.connect(lambda _run_dir: w.show_page("results"))  # the results view has it loaded
        w.session_view = SessionView(w.runs.session, w, page.controls, page.plots, w.status_label)
        w.runs.runStarted.connect(w._run_started)
        w.runs.runErrored.connect(w._run_errored)
        w.runs.runFinished.connect(w._run_ended)

    def _gpu_panel(self) -> None:
        try:
            from trainlab_desktop.pages import GpuPanel
        except ImportError:  # a build without telemetry: the plots take the room
            return
        w = self.window
        w.gpu_panel = GpuPanel(w.train_page.curves_split)
        w.gpu_panel.setMinimumHeight(150)
        w.gpu_panel.status_changed.connect(w.gpu_status.setText)
        w.train_page.add_below_plots(w.gpu_panel)
        w.session_view.gpu_panel = w.gpu_panel

    def _history_page(self) -> None:
        w = self.window
        from trainlab_desktop.pages import open_history_view

        w.history, page = open_history_view(w.stack)  # a page saying why when the run index cannot be opened
        if w.history is not None:
            w.history.runOpened.connect(w.open_run)
            w.history.runsDeleted.connect(w._runs_deleted)
        w._set_page("history", page)

    def _result_pages(self) -> None:
        w = self.window
        from trainlab_desktop.pages import ResultsView, TryItPanel

        w.results = ResultsView(w.stack)
        w._set_page("results", w.results)
        w.tryit = TryItPanel(w.stack)
        w._set_page("tryit", w.tryit)

    def _telemetry(self) -> None:
        """One sampler for the window's life: the GPU panel is live even between runs."""
        w = self.window
        if w.gpu_panel is None:
            return
        from trainlab_desktop.pages import WindowTelemetry

        w.telemetry = WindowTelemetry(w.gpu_panel, w)

"""Every module the window's pages are built from, in one import.

The window shows its shell first; then ``window_setup.import_for_setup``
imports this module on a worker thread, and the setup steps build the pages
on the GUI thread from modules already loaded. A page's module added here is
one the GUI thread never waits for.
"""

from __future__ import annotations

import numpy  # noqa: F401 - the plots' buffers
import pyqtgraph  # noqa: F401 - the plots

from trainlab.viewmodel import session  # noqa: F401 - the run's session, which the views subscribe to
from trainlab_desktop.history.page import open_history_view
from trainlab_desktop.plots import live_plots  # noqa: F401 - the train page's plots
from trainlab_desktop.results.page import ResultsView
from trainlab_desktop.run import data_panel, params_form, run_controls  # noqa: F401 - the train page's parts
from trainlab_desktop.run.gpu_panel import GpuPanel
from trainlab_desktop.run.log_panel import LogPanel
from trainlab_desktop.run.run_controller import RunController
from trainlab_desktop.run.session_view import SessionView
from trainlab_desktop.run.train_page import TrainPage
from trainlab_desktop.tryit.page import TryItPanel
from trainlab_desktop.window_telemetry import WindowTelemetry

__all__ = ["GpuPanel", "LogPanel", "ResultsView", "RunController", "SessionView", "TrainPage", "TryItPanel", "WindowTelemetry",
           "open_history_view"]

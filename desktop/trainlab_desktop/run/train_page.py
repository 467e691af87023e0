"""The Train page: task, data and parameters on the left, the run on the right.

A view: the parameters are a ``ParamValues`` (edited by ``ParamsForm``), the
data check's result is a ``PreparedTask`` (kept by ``DataPanel``), the run
is the ``RunController``'s, and what the run looks like is its
``RunSession``.  Start turns the form into a ``RunRequest`` with the
contract's levels (what the window remembered as ``remembered``, the user's
edits as ``params``) and hands the data check's preparation over with it.
The memory estimate by Start is ``MemoryEstimates`` (``estimate_view``),
fed the form's settings by ``estimate_settings``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6 import QtCore
from PySide6.QtCore import Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from trainlab.api.errors import UsageError
from trainlab.engine.plan import RunRequest
from trainlab.engine.prepare import TRAINING_ONLY_PARAMS
from trainlab.runfolder.status import RunStatus, SessionState
from trainlab.system import paths
from trainlab.viewmodel.devices import device_choices, nvml_gpus
from trainlab_desktop.common import background
from trainlab_desktop.plots.live_plots import LivePlots, plot_colors
from trainlab_desktop.run.data_panel import DataPanel
from trainlab_desktop.run.estimate_view import EstimateSettings, MemoryEstimates
from trainlab_desktop.run.gpu_picker import LaunchSummary
from trainlab_desktop.run.params_form import ParamsForm
from trainlab_desktop.run.run_controls import RunControls
from trainlab_desktop.run.training_thread import prewarm_engine
from trainlab_desktop.run.welcome import sample_data_path

log = logging.getLogger("trainlab.desktop")


def heading(text: str, parent: QWidget) -> QLabel:
    label = QLabel(text, parent)
    label.setProperty("role", "subheading")
    return label


class TrainPage(QSplitter):
    """Choose what to train and watch it train."""

    resultsRequested = Signal(str)  # the run folder whose results to open (the "Show the results" button)

    def __init__(self, registry: Any, settings: Any, controller: Any, theme: str, parent: QWidget | None = None):
        super().__init__(QtCore.Qt.Orientation.Horizontal, parent)
        self.registry = registry
        self.settings = settings
        self.controller = controller
        self.prewarmed = False  # torch and the engine imported ahead of Start
        self._prewarming = False
        self._current_task = ""
        self.setObjectName("train_page")
        self.setChildrenCollapsible(False)
        self.addWidget(self._build_setup())
        self.addWidget(self._build_live(theme))
        self.setStretchFactor(0, 0)
        self.setStretchFactor(1, 1)
        self.setSizes([380, 1000])  # the setup column at its minimum width: the plots get the rest

        c = self.controls
        self.continue_action = QAction(self.tr("&Continue the stopped run"), self)
        self.continue_action.setToolTip(self.tr("Resume the stopped or failed run from its last checkpoint"))
        self.continue_action.triggered.connect(self.continue_run)
        c.start_action.triggered.connect(lambda: self.start_run())
        self._add_queue_button()
        self.launch_summary = LaunchSummary(self.controls)  # world size and effective batch, under Start
        self.controls.layout().insertWidget(1, self.launch_summary)
        self.params_form.launchChanged.connect(self._update_launch_summary)
        self.params_form.valuesChanged.connect(self._update_launch_summary)
        c.pause_action.triggered.connect(controller.toggle_pause)
        c.stop_action.triggered.connect(controller.stop)
        c.moreEpochsRequested.connect(self.train_more)
        controller.session.subscribe(self._session_changed)
        controller.runStarted.connect(self.data_panel.hold)
        controller.runFinished.connect(lambda _outcome: self.data_panel.release())
        self.estimates = MemoryEstimates(c.estimate, self.estimate_settings, self)
        c.estimate.remedyChosen.connect(self.apply_remedy)
        self.params_form.valuesChanged.connect(self.estimates.refresh)
        controller.runStarted.connect(lambda: self.estimates.set_busy(True))
        controller.runFinished.connect(lambda _outcome: self.estimates.set_busy(False))

        self.task_combo.currentIndexChanged.connect(lambda _: self._task_chosen())
        self.params_form.validityChanged.connect(lambda _: self.update_actions())
        self.params_form.valuesChanged.connect(self._params_edited)
        self.data_panel.pathChanged.connect(lambda _: self.update_actions())
        self.data_panel.checkFinished.connect(self._data_checked)
        last = settings.last_task
        index = self.task_combo.findData(last) if last else -1
        self.task_combo.setCurrentIndex(index if index >= 0 else 0)
        self._task_chosen()

    def _build_setup(self) -> QWidget:
        setup = QWidget()
        column = QVBoxLayout(setup)
        column.setContentsMargins(16, 12, 12, 12)
        column.setSpacing(8)
        column.addWidget(heading(self.tr("Task"), setup))
        self.task_combo = QComboBox(setup)
        self.task_combo.setObjectName("task_combo")
        self.task_combo.setToolTip(self.tr("What to train; the tasks come from the installed plugins"))
        for task_id, entry in self.registry.tasks.items():
            plugin = entry.plugin
            self.task_combo.addItem(f"{entry.spec.title}  \u2014  {plugin.name} {plugin.version}".rstrip(), task_id)
            tip = entry.spec.description or entry.spec.title
            self.task_combo.setItemData(self.task_combo.count() - 1, tip, QtCore.Qt.ItemDataRole.ToolTipRole)
        # Sized by a short title, not the longest "title — plugin version" (which
        # pushed the whole column wider than its scroll area: a sideways scroll
        # bar, the form's help texts cut off); the open list shows them whole.
        self.task_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.task_combo.setMinimumContentsLength(24)
        self.task_combo.view().setMinimumWidth(self.task_combo.view().sizeHintForColumn(0) + 24)
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
        column.addWidget(heading(self.tr("Data"), setup))
        self.data_panel = DataPanel(setup)
        column.addWidget(self.data_panel)
        column.addSpacing(6)
        column.addWidget(heading(self.tr("Parameters"), setup))
        self.params_form = ParamsForm(setup)
        gpus, _ = nvml_gpus()
        self.params_form.set_device_choices(device_choices(gpus), gpus=gpus)
        column.addWidget(self.params_form)
        column.addStretch(1)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(setup)
        scroll.setMinimumWidth(380)
        return scroll

    def _build_live(self, theme: str) -> QWidget:
        live = QWidget(self)
        layout = QVBoxLayout(live)
        layout.setContentsMargins(12, 12, 16, 12)
        self.controls = RunControls(live)
        self.controls.set_mode(self.settings.run_mode)
        self.controls.modeChanged.connect(lambda mode: setattr(self.settings, "run_mode", mode))
        layout.addWidget(self.controls)
        # A finished run's results are a page away: offer them where the run ended.
        offer = QHBoxLayout()
        self.results_button = QPushButton(self.tr("Show the results"), live)
        self.results_button.setObjectName("show_results")
        self.results_button.setToolTip(self.tr("Open the Results page of the run that just finished"))
        self.results_button.clicked.connect(self._results_clicked)
        self.results_button.hide()
        offer.addWidget(self.results_button)
        offer.addStretch(1)
        layout.addLayout(offer)
        self.curves_split = QSplitter(QtCore.Qt.Orientation.Vertical, live)  # the GPU panel goes below the plots
        self.plots = LivePlots(self.curves_split, plot_colors(theme))
        self.plots.setMinimumHeight(LivePlots.WIDE_MIN_HEIGHT)  # taller where the pane is narrow (LivePlots._arrange)
        self.plots.reset(self.controller.session.curves)
        self.curves_split.addWidget(self.plots)
        layout.addWidget(self.curves_split, 1)
        # Where the window is too short for controls, plots and the GPU panel
        # (a laptop screen, the 960x640 minimum), the pane scrolls rather than
        # squeezing them over each other.
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(live)
        return scroll

    def add_below_plots(self, widget: QWidget) -> None:
        self.curves_split.addWidget(widget)
        self.curves_split.setStretchFactor(0, 3)
        self.curves_split.setStretchFactor(1, 1)

    # -- tasks -------------------------------------------------------------------------
    def task_id(self) -> str:
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
            self.remember_task_values(self._current_task)
        self._current_task = task_id
        entry = self.registry.tasks.get(task_id) if self.registry else None
        spec = entry.spec if entry else None
        self.params_form.set_task(spec)
        if spec is not None and not self.plots.holds_run():  # empty plots speak the chosen task's metrics
            self.plots.show_metrics(spec.metric_specs(), spec.default_monitor())
        if entry is not None:
            plugin = entry.plugin
            origin = plugin.distribution or plugin.name
            self.task_info.setText(
                (spec.description + "\n" if spec.description else "")
                + self.tr("From plugin %1 %2 (%3)").replace("%1", plugin.name).replace("%2", plugin.version or "?").replace("%3", origin)
            )
            unknown = self.params_form.load_remembered(self.settings.task_params(task_id))
            if unknown:
                log.info("ignoring remembered values the task no longer has: %s", ", ".join(unknown))
            self.settings.last_task = task_id
        self._update_launch_summary()
        # the data this task was last trained on, else whatever is there
        remembered_data = self.settings.task_data(task_id) if task_id else ""
        self.data_panel.set_task(spec, self._params_for_check, recheck=not remembered_data)
        if remembered_data:
            self.data_panel.set_path(remembered_data)
        self.update_actions()

    def remember_task_values(self, task_id: str | None = None) -> None:
        task_id = task_id or self.task_id()
        if not task_id or self.params_form.spec is None or self.params_form.spec.id != task_id:
            return
        self.settings.set_task_params(task_id, self.params_form.remembered_values())
        if self.data_panel.path():
            self.settings.set_task_data(task_id, self.data_panel.path())

    def _params_for_check(self) -> dict[str, Any]:
        try:
            return self.params_form.typed_values()
        except Exception:  # noqa: BLE001 - invalid values: check with the defaults
            return self.params_form.default_values()

    def _update_launch_summary(self) -> None:
        if hasattr(self, "launch_summary"):
            self.launch_summary.show_for(self.params_form.launch_choice(), self._params_for_check())

    def _params_edited(self) -> None:
        # Check the data again only when a value that the preparation depends
        # on changed (a text column, the split fraction, the seed); a training
        # value (the learning rate, say) leaves the check, and its
        # preparation, as they are.

        checked = self.data_panel.checked_params()
        if checked is None:
            self.data_panel.schedule_recheck()
            return
        current = self._params_for_check()
        if any(current.get(k) != checked.get(k) for k in set(current) | set(checked) if k not in TRAINING_ONLY_PARAMS):
            self.data_panel.schedule_recheck()

    def _data_checked(self, summary) -> None:
        self.update_actions()
        if summary is not None and not self.prewarmed and not self._prewarming:
            self._prewarming = True
            background.start(prewarm_engine, self._prewarm_done, self._prewarm_failed)

    def _prewarm_done(self, _tag, _result) -> None:
        self.prewarmed, self._prewarming = True, False
        log.debug("engine imports done ahead of Start")

    def _prewarm_failed(self, _tag, message: str, _tb: str) -> None:
        self._prewarming = False
        log.info("could not prepare the engine ahead of Start: %s", message)

    def choose_data(self) -> None:
        spec = self.params_form.spec
        if spec is not None and spec.data_kind == "file":
            self.data_panel.choose_file()
        else:
            self.data_panel.choose_folder()

    # -- samples and pre-filling -------------------------------------------------------------
    def sample_path(self, task_id: str) -> str:
        """The sample data of ``task_id`` ('' when there is none): a built-in's or a plugin's own."""
        return sample_data_path(self.registry, task_id)

    def try_sample(self, task_id: str) -> bool:
        """The sample of ``task_id`` with the task's defaults, started."""
        path = self.sample_path(task_id)
        if not path or not self.select_task(task_id):
            return False
        self.params_form.reset_defaults()
        self.data_panel.set_path(path)
        return self.start_run()

    def prefill(self, task: str | None, data: str | None, params: dict[str, str] | None, autostart: bool) -> list[str]:
        """Choose ``task``, set ``params`` (the user's explicit values) and ``data``,
        start if asked; returns what went wrong, as messages."""
        if task and not self.select_task(task):
            known = ", ".join(self.registry.tasks) or self.tr("none")
            return [self.tr("Unknown task %1 (available: %2).").replace("%1", task).replace("%2", known)]
        problems = []
        unknown = self.params_form.set_values(params) if params else []
        if unknown:
            problems.append(self.tr("Unknown parameter(s) for this task: %s") % ", ".join(unknown))
            autostart = False
        if data:
            self.data_panel.set_path(str(Path(data).expanduser()))
        if autostart and not self.start_run():
            problems.append(self.tr("Cannot start: %s") % " ".join(self.start_blockers()))
        return problems

    # -- starting --------------------------------------------------------------------------
    def start_blockers(self) -> list[str]:
        """Why Start is disabled (empty when it is not)."""
        reasons = []
        if self.controller.busy:
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

    def _add_queue_button(self) -> None:
        """"Add to queue" beside Start (the window connects it: trainlab_desktop.scheduling.queue_view)."""
        from PySide6.QtWidgets import QToolButton

        self.queue_action = QAction(self.tr("Add to &queue"), self)
        self.queue_action.setToolTip(self.tr("Queue this run: it starts when a GPU (or the CPU) is free, "
                                             "and goes on when the window closes"))
        button = QToolButton(self.controls)
        button.setDefaultAction(self.queue_action)
        button.setObjectName("queue_button")
        self.controls.add_beside_start(button)

    def queue_request(self) -> tuple[str, str, dict[str, Any]]:
        """(task, data, parameters) of the run the form describes, for the queue; UsageError when it cannot be queued."""
        blockers = [b for b in self.start_blockers() if b != self.tr("A run is in progress.")]
        if blockers:
            raise UsageError(" ".join(blockers))
        task_id = self.task_id()
        self.remember_task_values(task_id)
        values = self.params_form.param_values
        params = {**values.remembered(), **values.explicit()}
        device = str(params.get("device", "")).strip().lower()
        if device.startswith("cuda:"):  # the queue chooses the GPU
            params.pop("device")
        return task_id, self.data_panel.path(), params

    def update_actions(self) -> None:
        self._update_launch_summary()  # values set without an edit (gui --set, a preset) count too
        if hasattr(self, "estimates"):
            self.estimates.refresh()
        if hasattr(self, "queue_action"):
            self.queue_action.setEnabled(not [b for b in self.start_blockers() if b != self.tr("A run is in progress.")])
        if self.controller.running:
            return
        blockers = self.start_blockers()
        session = self.controller.session
        can_continue = self.controller.continuable()
        self.controls.set_idle(can_start=not blockers, can_continue=can_continue and session.status == SessionState.COMPLETED)
        self.continue_action.setEnabled(can_continue and session.status in (SessionState.CANCELLED, SessionState.FAILED))
        self.controls.start_action.setToolTip(
            self.tr("Start training (Ctrl+Enter)") if not blockers else "\n".join(blockers)
        )

    def _session_changed(self, session, change) -> None:
        if change.finished and not change.replay:
            self.estimates.run_ended()
        if change.status or change.reset or change.finished:
            self.update_actions()
        if change.reset:
            self.results_button.hide()
        if change.finished and not change.replay:
            outcome = session.result
            completed = session.source == "worker" and outcome is not None and outcome.status == RunStatus.COMPLETED
            self.results_button.setVisible(completed and bool(outcome.run_dir))

    def _results_clicked(self) -> None:
        outcome = self.controller.session.result
        if outcome is not None and outcome.run_dir:
            self.resultsRequested.emit(str(outcome.run_dir))

    def start_run(self, *, resume: str | None = None, more_epochs: int = 0) -> bool:
        """Start a run from the form (or continue ``resume``); False if it cannot start."""
        if self.controller.running:
            return False

        prepared = None
        if resume:
            # a continued run keeps its parameters, but may move to another device
            shown = self.params_form.values()
            params = {k: shown[k] for k in ("device", "precision") if k in shown}
            request = RunRequest(resume=resume, more_epochs=int(more_epochs), params=params)
        else:
            blockers = self.start_blockers()
            if blockers:
                self.controls.show_message("\n".join(blockers))
                return False
            task_id = self.task_id()
            self.remember_task_values(task_id)
            self.settings.set_task_data(task_id, self.data_panel.path())
            values = self.params_form.param_values
            request = RunRequest(task=task_id, data=self.data_panel.path(), params=values.explicit(),
                                 remembered=values.remembered())
            # A check still to come would prepare the data beside the run, which
            # prepares it itself when the last check's preparation does not fit.
            self.data_panel.cancel_recheck()
            prepared = self.data_panel.take_prepared()
        launch = self.params_form.launch_choice()  # several processes: a group, through the CLI's launcher
        started = self.controller.start(request, mode=self.controls.mode_value(), prepared=prepared, launch=launch)
        if started and not resume:
            self.estimates.start_pressed()
        return started

    # -- the memory estimate -----------------------------------------------------------------
    def estimate_settings(self) -> EstimateSettings | None:
        """The run the form describes, for the estimate; None while it cannot be estimated (no data, bad values)."""
        values = self.params_form.param_values
        task_id, data = self.task_id(), self.data_panel.path()
        if not task_id or not data or values is None or values.spec.id != task_id or self.data_panel.error:
            return None
        try:
            resolved = values.resolved()
        except Exception:  # noqa: BLE001 - a value marked in red: nothing to estimate
            return None

        return EstimateSettings(task_id, data, values.explicit(), values.remembered(), resolved, dict(values.schema),
                                self.data_panel.summary, str(paths.runs_dir()))

    def apply_remedy(self, name: str, value: str) -> None:
        """The user chose what the "does not fit" advice offered: set it, and estimate again."""
        self.params_form.set_values({name: value})
        self._params_edited()
        self.update_actions()
        self.estimates.request()

    def train_more(self, epochs: int) -> bool:
        run_dir = self.controller.session.run_dir
        return bool(run_dir) and self.start_run(resume=run_dir, more_epochs=epochs)

    def continue_run(self) -> bool:
        run_dir = self.controller.session.run_dir
        return bool(run_dir) and self.start_run(resume=run_dir)

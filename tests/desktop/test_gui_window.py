"""The main window, driven like a user would: real plugins, real torch runs.

The toy fixture plugin (tests/fixtures/plugins) provides a tiny, fast task;
its ``step_delay`` parameter slows a run down enough to pause, stop or close
the window in the middle of it, and ``fail_at_step`` makes it fail.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QMessageBox

from helpers import FIXTURE_PLUGINS

RUN_TIMEOUT_MS = 120_000


def write_toy_csv(path: Path, rows: int = 240, seed: int = 0, label_column: str = "label") -> Path:
    rng = random.Random(seed)
    lines = [f"a,b,c,{label_column}"]
    for _ in range(rows):
        label = rng.choice("xyz")
        base = "xyz".index(label)
        lines.append(f"{base + rng.gauss(0, 0.4):.3f},{rng.gauss(0, 1):.3f},{-base + rng.gauss(0, 0.4):.3f},{label}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def toy_csv(tmp_path):
    return write_toy_csv(tmp_path / "toy.csv")


def prepare(qtbot, win, data: Path, **params) -> None:
    """Choose the toy task and the data, set parameters, wait for the data check."""
    assert win.select_task("toy-classification")
    win.data_panel.set_path(str(data))
    qtbot.waitUntil(lambda: not win.data_panel.checking, timeout=60_000)
    if params:
        assert win.params_form.set_values({k: str(v) for k, v in params.items()}) == []
    assert win.start_blockers() == []
    assert win.controls.start_action.isEnabled()


def start_and_finish(qtbot, win, timeout: int = RUN_TIMEOUT_MS):
    with qtbot.waitSignal(win.runFinished, timeout=timeout) as blocker:
        win.controls.start_action.trigger()
    return blocker.args[0]


def test_the_data_check_table_shows_class_names_whole_beside_three_splits(qtbot, window):
    from trainlab.api.taskbase import DataSummary

    labels = ["food", "sports", "technology", "weather"]
    counts = {split: dict.fromkeys(labels, 40) for split in ("train", "val", "test")}
    window.show_page("train")
    window.data_panel._show_summary(DataSummary(label_names=labels, counts=counts))
    table = window.data_panel.summary_table
    qtbot.waitUntil(lambda: table.isVisible() and table.columnCount() == 4, timeout=5000)
    qtbot.wait(50)  # the header's deferred resize
    padding = 2 * table.style().pixelMetric(table.style().PixelMetric.PM_FocusFrameHMargin) + 8
    longest = max(table.fontMetrics().horizontalAdvance(label) for label in labels)
    assert table.columnWidth(0) >= longest + padding, (table.columnWidth(0), longest, table.width())
    for col in range(1, 4):  # each count column holds its header whole
        title = table.horizontalHeaderItem(col).text()
        assert table.columnWidth(col) >= table.horizontalHeader().fontMetrics().horizontalAdvance(title), title


# -- a whole run ---------------------------------------------------------------


def test_run_from_the_window_trains_and_plots(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=2, log_interval=0)
    assert "3 class" in window.data_panel.status.text()
    assert window.data_panel.summary_table.rowCount() == 3
    result = start_and_finish(qtbot, window)

    assert result.status == "completed", result
    run_dir = Path(result.run_dir)
    assert (run_dir / "model").is_dir() and (run_dir / "eval.json").is_file()
    counts = window.plots.point_counts()
    assert counts["loss"] >= 20  # log_interval=0: one point per optimizer step
    assert counts["eval"] == 2  # one validation point per epoch
    assert counts["lr"] == counts["loss"]
    assert window.controls.bar.value() == 1000
    assert "accuracy" in window.controls.line.text()
    assert not window.controls.stop_action.isEnabled() and window.controls.start_action.isEnabled()
    # results page shows the finished run
    if window.results is not None:
        assert window.results.run_dir and Path(window.results.run_dir) == run_dir
    # the values are remembered for the task, the data too
    assert window.settings.task_params("toy-classification") == {"log_interval": "0"}
    assert window.settings.task_data("toy-classification") == str(toy_csv)

    # "Train N more epochs" continues the same run; the curves keep the history
    assert window.controls.more_action.isEnabled()
    window.controls.more_epochs.setValue(1)
    with qtbot.waitSignal(window.runFinished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.controls.more_action.trigger()
    more = blocker.args[0]
    assert more.status == "completed", more
    assert Path(more.run_dir) == run_dir
    assert more.epochs == 3
    assert window.plots.point_counts()["eval"] == 3


def test_progress_line_shows_epoch_step_eta_and_rate(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=3, step_delay=0.02, log_interval=0)
    window.controls.start_action.trigger()
    qtbot.waitUntil(lambda: "ETA" in window.controls.line.text(), timeout=RUN_TIMEOUT_MS)
    text = window.controls.line.text()
    assert "Epoch" in text and "of 3" in text and "samples/s" in text
    with qtbot.waitSignal(window.runFinished, timeout=RUN_TIMEOUT_MS):
        window.stop_run()


# -- pause, stop, close --------------------------------------------------------


def test_pause_and_resume(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=2, step_delay=0.02)
    window.controls.start_action.trigger()
    qtbot.waitUntil(lambda: window.plots.curves.train.n > 0, timeout=RUN_TIMEOUT_MS)

    window.controls.pause_action.trigger()
    assert window.worker.paused
    assert window.controls.pause_action.text().replace("&", "") == "Resume"
    # The engine answers with a "paused" progress event once it has stopped
    # between two steps (and saved a checkpoint).
    qtbot.waitUntil(lambda: window.session.progress.phase == "paused", timeout=30_000)
    paused_at = window.session.progress.step
    run_dir = Path(window.current_run_dir)
    assert (run_dir / "checkpoints").is_dir()
    assert paused_at < window.session.progress.total_steps

    with qtbot.waitSignal(window.runFinished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.controls.pause_action.trigger()  # Resume
        assert not window.worker.paused
    result = blocker.args[0]
    assert result.status == "completed", result
    assert result.steps == window.session.progress.total_steps > paused_at


def test_stop_mid_run_then_continue(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=3, step_delay=0.02)
    window.controls.start_action.trigger()
    qtbot.waitUntil(lambda: window.plots.curves.train.n > 0, timeout=RUN_TIMEOUT_MS)
    with qtbot.waitSignal(window.runFinished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.controls.stop_action.trigger()
        assert window.worker.state == "stopping"
    result = blocker.args[0]
    assert result.status == "cancelled", result
    run = json.loads((Path(result.run_dir) / "run.json").read_text())
    assert run["status"] == "cancelled"
    assert "Stopped" in window.controls.line.text()
    assert window.continue_action.isEnabled() and not window.controls.more_action.isEnabled()

    with qtbot.waitSignal(window.runFinished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.params_form.set_values({"step_delay": "0"})
        window.continue_action.trigger()
    resumed = blocker.args[0]
    assert resumed.status == "completed", resumed
    assert resumed.run_dir == result.run_dir
    assert resumed.epochs == 3


def test_closing_mid_run_asks_then_stops_cleanly(qtbot, qtlog, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=50, step_delay=0.05)
    window.controls.start_action.trigger()
    qtbot.waitUntil(lambda: window.plots.curves.train.n > 0, timeout=RUN_TIMEOUT_MS)
    run_dir = Path(window.current_run_dir)

    # Cancel first: the run goes on.
    window.close()
    box = window.close_box
    assert isinstance(box, QMessageBox) and box.isVisible()
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert window.isVisible() and window.running

    window.close()
    box = window.close_box
    stop_and_quit = next(b for b in box.buttons() if box.buttonRole(b) == QMessageBox.ButtonRole.AcceptRole)
    with qtbot.waitSignal(window.runFinished, timeout=RUN_TIMEOUT_MS):
        stop_and_quit.click()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)
    assert window.worker is None
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "cancelled"
    messages = [record.message for record in qtlog.records]
    assert not any("Destroyed while thread" in m for m in messages), messages


def test_closing_the_window_stops_a_data_check_still_running(qtbot, window, toy_csv, monkeypatch):
    """A check of a slow folder still going when the window closes ends with
    it: no thread of the window's keeps scanning (the close waited 10 s and
    then left it running, in the app and into the next test)."""
    import threading
    import time

    import toy_task

    from trainlab import StopRequested
    from trainlab_desktop.common import background

    scanning = threading.Event()

    def endless_scan(self, data_path, ctx, label_names=None):
        scanning.set()
        while not ctx.should_stop():
            time.sleep(0.01)  # a scan of a slow network folder
        raise StopRequested(f"the scan of {data_path} was stopped on request")

    monkeypatch.setattr(toy_task.ToyTask, "prepare", endless_scan)
    assert window.select_task("toy-classification")
    window.data_panel.set_path(str(toy_csv))
    qtbot.waitUntil(scanning.is_set, timeout=60_000)
    assert window.data_panel.checking
    window.close()
    assert not window.isVisible()
    assert background.running() == 0


# -- failures ------------------------------------------------------------------


def test_failing_run_shows_the_error_and_the_window_stays_usable(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=2, fail_at_step=3)
    result = start_and_finish(qtbot, window)
    assert result.status == "failed"
    assert "toy failure at step 3" in result.error
    assert "toy failure at step 3" in window.controls.message.text()
    box = window.error_box
    assert box is not None and box.isVisible()
    assert "RuntimeError" in box.detailedText()
    assert "toy failure" in window.log_panel.plain_text()
    box.close()

    # Usable: fix the parameter and train again.
    window.params_form.set_values({"fail_at_step": "0"})
    result = start_and_finish(qtbot, window)
    assert result.status == "completed", result


def test_bad_data_is_reported_before_training_and_blocks_start(qtbot, window, tmp_path):
    bad = write_toy_csv(tmp_path / "bad.csv", label_column="category")
    assert window.select_task("toy-classification")
    window.data_panel.set_path(str(bad))
    qtbot.waitUntil(lambda: not window.data_panel.checking, timeout=60_000)
    assert "no 'label' column" in window.data_panel.error
    assert "cannot be used" in window.data_panel.status.text()
    assert not window.controls.start_action.isEnabled()
    assert "no 'label' column" in window.controls.start_action.toolTip()

    missing = tmp_path / "nope.csv"
    window.data_panel.set_path(str(missing))
    assert "does not exist" in window.data_panel.status.text()
    assert not window.controls.start_action.isEnabled()


def test_run_in_a_child_process(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=2, log_interval=0)
    window.controls.mode.setCurrentIndex(window.controls.mode.findData("process"))
    assert window.settings.run_mode == "process"
    result = start_and_finish(qtbot, window, timeout=180_000)
    assert result.status == "completed", result
    assert Path(result.run_dir, "model").is_dir()
    counts = window.plots.point_counts()
    assert counts["loss"] >= 20 and counts["eval"] == 2


def test_a_child_process_pauses_alive_and_stops_on_request(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=3, step_delay=0.02)
    window.controls.set_mode("process")
    window.controls.start_action.trigger()
    qtbot.waitUntil(lambda: window.plots.curves.train.n > 0, timeout=RUN_TIMEOUT_MS)
    process = window.worker.process  # the one runner of a run in another process
    assert process.command[1:] == ["-m", "trainlab.engine.child_main"]

    window.controls.pause_action.trigger()
    qtbot.waitUntil(lambda: window.session.progress.phase == "paused", timeout=30_000)
    assert process.returncode is None  # held, not ended
    with qtbot.waitSignal(window.runFinished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.controls.stop_action.trigger()  # while paused
    result = blocker.args[0]
    assert result.status == "cancelled" and result.error == "stopped by the user", result
    assert process.returncode == 130  # it read the stop and ended itself: no signal, as on Windows
    assert (Path(result.run_dir) / "checkpoints" / "last.safetensors").is_file()


def test_child_process_failure_is_reported(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=2, fail_at_step=2)
    window.controls.set_mode("process")
    result = start_and_finish(qtbot, window, timeout=180_000)
    assert result.status == "failed"
    assert "toy failure at step 2" in result.error
    assert window.error_box is not None


# -- the forms -----------------------------------------------------------------


def test_parameter_form_flags_bad_values_and_applies_presets(qtbot, window):
    assert window.select_task("toy-classification")
    form = window.params_form
    epochs = form.field_editor("epochs")
    epochs.setText("zero")
    assert "whole number" in form.errors()["epochs"]
    assert epochs.property("invalid") is True
    assert not form.is_valid()
    assert not window.controls.start_action.isEnabled()
    epochs.setText("0")
    assert "at least 1" in form.errors()["epochs"]
    epochs.setText("4")
    assert "epochs" not in form.errors() and form.is_valid()

    lr = form.field_editor("lr")
    lr.setText("1e-3")
    assert form.is_valid()
    lr.setText("nan")
    assert "finite" in form.errors()["lr"]
    lr.setText("0.01")

    # choosing a preset applies its overrides
    model = form.field_editor("model")
    model.setCurrentIndex(model.findData("wide-mlp"))
    assert form.values()["hidden"] == "64"
    assert form.values()["lr"] == "0.005"
    assert "hidden" not in form.remembered_values()  # it is the preset's value, not the user's

    # tooltips carry help, range and default
    tip = form.field_editor("hidden").toolTip()
    assert "Hidden units." in tip and "Range: 1 to 4096" in tip and "Default: 16" in tip

    # device choices: auto and cpu at least, with GPUs named when there are some
    device = form.field_editor("device")
    assert device.findData("auto") >= 0 and device.findData("cpu") >= 0


def test_a_model_preset_longer_than_its_box_shows_its_start(qtbot, window):
    # "auto — Small CNN sized to the data" used to show as "mall CNN sized to the data"
    assert window.select_task("image-classification")
    window.resize(960, 640)
    window.show()
    qtbot.waitExposed(window)
    model = window.params_form.field_editor("model")
    assert model.isEditable() and model.currentText().startswith("auto")
    line = model.lineEdit()
    assert line.fontMetrics().horizontalAdvance(model.currentText()) > line.width(), "the test needs a text longer than the box"
    assert line.cursorPosition() == 0
    index = model.findData("small-cnn")
    model.setCurrentIndex(index)
    model.activated.emit(index)  # what a choice from the list sends
    assert model.currentText().startswith("small-cnn") and line.cursorPosition() == 0


def test_values_are_remembered_per_task_between_launches(qtbot, toy_plugin, toy_csv):
    from trainlab_desktop.main_window import MainWindow

    first = MainWindow()
    qtbot.addWidget(first)
    first.finish_setup()
    assert first.select_task("toy-classification")
    first.params_form.set_values({"epochs": "7", "hidden": "32"})
    first.data_panel.set_path(str(toy_csv))
    first.close()

    second = MainWindow()
    qtbot.addWidget(second)
    second.finish_setup()
    assert second.task_id() == "toy-classification"
    values = second.params_form.values()
    assert values["epochs"] == "7" and values["hidden"] == "32"
    assert second.data_panel.path() == str(toy_csv)
    qtbot.waitUntil(lambda: not second.data_panel.checking, timeout=60_000)
    second._shutdown()


def test_dropping_a_file_sets_the_data(qtbot, window, toy_csv):
    assert window.select_task("toy-classification")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(toy_csv))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    window.data_panel.dropEvent(event)
    assert window.data_panel.path() == str(toy_csv)
    qtbot.waitUntil(lambda: window.data_panel.summary is not None, timeout=60_000)
    # a text table preview of the file
    assert window.data_panel.table.columnCount() == 4 and window.data_panel.table.rowCount() > 0


def test_tasks_list_names_their_plugin_and_version(window):
    labels = [window.task_combo.itemText(i) for i in range(window.task_combo.count())]
    toy = next(text for text in labels if text.startswith("Toy classification"))
    assert "toy 1.0" in toy


def test_prefill_and_autostart(qtbot, window, toy_csv):
    with qtbot.waitSignal(window.runFinished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.prefill(task="toy-classification", data=str(toy_csv), params={"epochs": "1"}, autostart=True)
    assert blocker.args[0].status == "completed"
    assert window.current_page() == "train"


def test_prefill_with_an_unknown_task_explains_and_does_not_start(window, toy_csv):
    window.prefill(task="no-such-task", data=str(toy_csv), autostart=True)
    assert not window.running
    assert "no-such-task" in window.status_label.text()


def test_about_box_names_the_app_and_version(qtbot, window):
    import trainlab

    window.show_about()
    dialog = window.about_dialog
    assert dialog.findChild(type(window.status_label), "about_name").text() == "TrainLab"
    assert trainlab.__version__ in dialog.findChild(type(window.status_label), "about_version").text()
    dialog.close()


def test_both_palettes_apply(qtbot, window):
    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import QApplication

    window.set_theme("dark")
    dark = QApplication.instance().palette().color(QPalette.ColorRole.Window).lightness()
    assert window.resolved_theme == "dark" and dark < 80
    window.set_theme("light")
    light = QApplication.instance().palette().color(QPalette.ColorRole.Window).lightness()
    assert window.resolved_theme == "light" and light > 200


def test_opening_a_past_run_shows_its_curves_and_results(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=2, log_interval=0)
    result = start_and_finish(qtbot, window)
    run_dir = result.run_dir
    window.plots.reset()
    assert window.plots.point_counts()["loss"] == 0

    window.open_run(run_dir)
    assert window.plots.point_counts()["eval"] == 2  # read back from metrics.jsonl
    assert window.plots.point_counts()["loss"] >= 20
    assert window.current_run_dir == run_dir and window.controls.more_action.isEnabled()
    if window.results is not None:
        assert window.current_page() == "results"
    window.open_run(str(toy_csv.parent))  # not a run folder
    assert "not a TrainLab run folder" in window.status_label.text()


def test_try_text_classification_starts_a_demo_on_the_bundled_sample(qtbot, window):
    try_text = window.welcome.sample_button("text-classification")
    if try_text is None:
        pytest.skip("this installation has no text sample")
    assert try_text.text() == "Try text classification"
    with qtbot.waitSignal(window.runStarted, timeout=10_000):
        try_text.click()
    assert window.task_id() == "text-classification"
    assert window.data_panel.path() == window.sample_path("text-classification")
    qtbot.waitUntil(lambda: window.worker is None or window.worker.state == "running", timeout=RUN_TIMEOUT_MS)
    assert window.worker is not None, window.last_result
    with qtbot.waitSignal(window.runFinished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.stop_run()
    assert blocker.args[0].status in ("cancelled", "completed"), blocker.args[0]


def test_gpu_status_reaches_the_status_bar(qtbot, window):
    if window.gpu_panel is None:
        pytest.skip("no GPU panel in this build")
    # one telemetry sample a second from the window's own sampler; without a
    # GPU it says so and shows CPU and RAM
    qtbot.waitUntil(lambda: window.gpu_status.text() != "", timeout=10_000)
    assert "GPU" in window.gpu_status.text() or "CPU" in window.gpu_status.text()


def test_desktop_identity_matches_the_launcher():
    from trainlab import shortcuts as launcher
    from trainlab_desktop import app

    assert app.DESKTOP_ID == launcher.DESKTOP_ID
    assert app.WM_CLASS == launcher.WM_CLASS


def test_keyboard_shortcuts_reach_the_main_actions(qtbot, window, toy_csv):
    from PySide6.QtGui import QKeySequence
    from PySide6.QtTest import QTest

    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
    assert window.current_page() == "train"
    QTest.keyClick(window, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    assert window.current_page() == "welcome"
    shortcuts = {
        window.controls.start_action: "Ctrl+Return",
        window.controls.pause_action: "Ctrl+P",
        window.controls.stop_action: "Ctrl+.",
    }
    for action, keys in shortcuts.items():
        assert action.shortcut() == QKeySequence(keys)
    prepare(qtbot, window, toy_csv, epochs=1)
    with qtbot.waitSignal(window.runFinished, timeout=RUN_TIMEOUT_MS) as blocker:
        QTest.keyClick(window, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert blocker.args[0].status == "completed"


def test_a_broken_plugin_is_reported_and_the_plugins_dialog_opens(qtbot, toy_plugin, monkeypatch):
    from trainlab_desktop.main_window import MainWindow

    monkeypatch.syspath_prepend(str(FIXTURE_PLUGINS.parent / "broken_plugins"))
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    win.finish_setup()
    assert "failed" in win.status_label.text() and "Plugins" in win.status_label.text()
    assert win.task_combo.findData("toy-classification") >= 0  # the others still load
    win.plugins_action.trigger()
    assert win.plugins_dialog.isVisible()
    win.plugins_dialog.close()


def test_system_theme_is_checked_with_the_desktop_once_shown(qtbot, window, monkeypatch):
    """At start-up "system" is judged from Qt's palette only; once the window
    shows it asks the desktop's colour scheme, and switches when they differ."""
    from trainlab_desktop.common import style

    window.settings.theme = "system"
    assert window.resolved_theme == "light"
    monkeypatch.setattr(style, "system_prefers_dark", lambda: True)
    try:
        window._check_system_theme()
        assert window.resolved_theme == "dark"
        assert window.palette().color(window.palette().ColorRole.Window).lightnessF() < 0.5
    finally:
        window.set_theme("light")  # later tests expect the light palette


def test_log_panel_comes_back_where_it_was_left(qtbot, window):
    """The log dock is built after the window shows; the saved layout still applies to it."""
    assert window.log_dock is not None and not window.log_dock.isVisible()
    window.log_action.trigger()  # Ctrl+L
    assert window.log_dock.isVisible() and window.log_action.isChecked()
    window._save_geometry()

    from trainlab_desktop.main_window import MainWindow

    again = MainWindow(resolved_theme="light")
    qtbot.addWidget(again)
    again.show()
    qtbot.waitExposed(again)
    assert again.log_dock is None  # not before the setup
    again.finish_setup()
    assert again.log_dock.isVisible() and again.log_action.isChecked()
    again.log_action.trigger()
    assert not again.log_dock.isVisible()
    again._shutdown()


def test_the_setup_column_needs_no_sideways_scrolling_at_1280_px_for_any_task(qtbot, window):
    # A long "title — plugin version" in the task list once made the column 58 px
    # wider than its scroll area: a sideways scroll bar, the form's help texts cut off.
    from PySide6.QtWidgets import QScrollArea

    window.resize(1280, 800)
    window.show_page("train")
    scroll = next(s for s in window.findChildren(QScrollArea) if s.widget() is not None and s.widget().isAncestorOf(window.params_form))
    for index in range(window.task_combo.count()):
        window.task_combo.setCurrentIndex(index)
        qtbot.waitUntil(lambda: scroll.viewport().width() > 300, timeout=5000)
        assert scroll.horizontalScrollBar().maximum() == 0, window.task_combo.itemText(index)

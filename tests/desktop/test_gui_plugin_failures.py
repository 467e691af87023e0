"""The window with broken plugins: it comes up, and says whose code failed."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from helpers import AT_IMPORT_PLUGINS, BROKEN_PLUGINS, FAULTY_PLUGIN, write_toy_csv

TASK = "faulty-classification"


@pytest.fixture
def faulty(monkeypatch):
    monkeypatch.syspath_prepend(str(FAULTY_PLUGIN))


@pytest.fixture
def rows(tmp_path):
    return write_toy_csv(tmp_path / "rows.csv", rows=64)


def choose(qtbot, win, data, **params):
    assert win.select_task(TASK)
    win.data_panel.set_path(str(data))
    qtbot.waitUntil(lambda: not win.data_panel.checking, timeout=60_000)
    if params:
        assert win.params_form.set_values({k: str(v) for k, v in params.items()}) == []


def test_a_run_that_fails_in_plugin_code_names_the_plugin_in_the_window(faulty, qtbot, window, rows):
    choose(qtbot, window, rows, fail_in="build_model")
    assert window.controls.start_action.isEnabled()
    with qtbot.waitSignal(window.runFinished, timeout=120_000) as blocker:
        window.controls.start_action.trigger()
    result = blocker.args[0]
    reason = f"plugin 'faulty' (task {TASK}) failed in build_model: ValueError: faulty in build_model"
    assert result.status == "failed" and result.error == reason
    assert result.failure["method"] == "build_model"
    assert reason in window.controls.message.text()
    box = window.error_box
    assert box is not None and reason in box.text() and "faulty_task.py" in box.detailedText()
    box.close()


def test_the_data_check_names_the_plugin_whose_prepare_failed(faulty, qtbot, window, rows, monkeypatch):
    assert window.select_task(TASK)
    assert window.params_form.set_values({"fail_in": "prepare", "error": "key"}) == []
    window.data_panel.set_path(str(rows))
    qtbot.waitUntil(lambda: not window.data_panel.checking, timeout=60_000)
    assert window.data_panel.error == f"plugin 'faulty' (task {TASK}) failed in prepare: KeyError: 'missing_column'"
    assert "plugin 'faulty'" in window.data_panel.status.text()
    assert not window.controls.start_action.isEnabled()


def test_the_window_comes_up_beside_plugins_that_hang_exit_or_crash_at_import(qtbot, monkeypatch, toy_plugin):
    """The real start: discovery in the background while the window answers."""
    monkeypatch.syspath_prepend(str(AT_IMPORT_PLUGINS))
    monkeypatch.syspath_prepend(str(BROKEN_PLUGINS))
    monkeypatch.setenv("TRAINLAB_PLUGIN_IMPORT_TIMEOUT", "3")
    from trainlab_desktop.app import make_application
    from trainlab_desktop.main_window import MainWindow

    make_application(language="en", theme="light")
    win = MainWindow(resolved_theme="light")
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    try:
        with qtbot.waitSignal(win.ready, timeout=60_000):
            win.start_setup()
        text = win.status_label.text()
        assert "Some plugins failed to load" in text
        for name in ("crash-at-import", "exit-at-import", "hang-at-import", "broken-import"):
            assert name in text
        statuses = {p.name: p.status for p in win.registry.plugins}
        assert statuses["toy"] == "ok" and "toy-classification" in win.registry.tasks
        assert win.select_task("toy-classification")
    finally:
        win._shutdown()

"""The end of a run in the real window: its results offered where it ended, its
headline number as the results page writes it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from test_gui_window import prepare, start_and_finish  # noqa: E402


def test_a_finished_run_offers_its_results_and_reads_as_the_results_page(qtbot, window, toy_csv):
    page = window.train_page
    assert not page.results_button.isVisible()
    prepare(qtbot, window, toy_csv, epochs=1)
    result = start_and_finish(qtbot, window)
    assert result.status == "completed", result
    assert window.current_page() == "train"
    qtbot.waitUntil(page.results_button.isVisible, timeout=5000)
    with qtbot.waitSignal(page.resultsRequested, timeout=5000) as clicked:
        qtbot.mouseClick(page.results_button, Qt.MouseButton.LeftButton)
    assert Path(clicked.args[0]) == Path(result.run_dir)
    assert window.current_page() == "results"
    if window.results is not None:
        assert Path(window.results.run_dir) == Path(result.run_dir)
        shown = window.results.metrics_table.value("Accuracy")  # e.g. "92.50%"
        assert shown and window.status_label.text() == f"Finished: accuracy {shown}"
        assert window.controls.line.text() == window.status_label.text()
    # a new run takes the offer away until it has finished in turn
    window.show_page("train")
    with qtbot.waitSignal(window.runStarted, timeout=30_000):
        window.controls.start_action.trigger()
    assert not page.results_button.isVisible()
    qtbot.waitSignal(window.runFinished, timeout=120_000).wait()
    qtbot.waitUntil(page.results_button.isVisible, timeout=5000)


def test_a_stopped_run_offers_no_results(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=50, step_delay=0.02)
    with qtbot.waitSignal(window.runFinished, timeout=120_000) as ended:
        window.controls.start_action.trigger()
        qtbot.waitUntil(lambda: window.controls.stop_action.isEnabled(), timeout=30_000)
        window.controls.stop_action.trigger()
    assert ended.args[0].status == "cancelled"
    assert not window.train_page.results_button.isVisible()


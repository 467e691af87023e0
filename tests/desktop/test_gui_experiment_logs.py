"""report_to chosen in the window's parameter form reaches the run: TensorBoard files in its folder."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("tensorboard", reason="the tensorboard extra is not installed")


def test_report_to_chosen_in_the_form_writes_tensorboard_files(qtbot, window, toy_csv):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    assert window.select_task("toy-classification")
    window.data_panel.set_path(str(toy_csv))
    qtbot.waitUntil(lambda: not window.data_panel.checking, timeout=60_000)
    window.params_form.advanced_toggle.setChecked(True)
    report_to = window.params_form.field_editor("report_to")
    assert report_to.isVisibleTo(window.params_form)
    report_to.setCurrentIndex(report_to.findText("tensorboard"))
    window.params_form.field_editor("epochs").setText("1")
    assert window.start_blockers() == []
    with qtbot.waitSignal(window.runFinished, timeout=120_000) as blocker:
        window.controls.start_action.trigger()
    result = blocker.args[0]
    assert result.status == "completed", result

    board = EventAccumulator(str(Path(result.run_dir) / "tensorboard"))
    board.Reload()
    assert len(board.Scalars("val/accuracy")) == 1  # one epoch, one evaluation
    assert board.Scalars("final/accuracy")[-1].value == pytest.approx(result.metrics["accuracy"])
    assert window.settings.task_params("toy-classification")["report_to"] == "tensorboard"  # remembered, like every parameter

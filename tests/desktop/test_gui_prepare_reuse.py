"""The window's data check prepares the task once; Start hands that preparation to the run.

Through the real window: a text-classification run started after the check
does not tokenise its data again (the text task's ``encode_split`` calls are
counted, as tests/core/engine/test_prepare_reuse.py counts them), a training value
changed after the check keeps the preparation, and a task value changed
after it makes the run prepare again.
"""

from __future__ import annotations

import pytest

from trainlab.runfolder.index import RunDir

pytest.importorskip("pytestqt")

from helpers import sample_head
from test_gui_window import RUN_TIMEOUT_MS, start_and_finish

TEXT = "text-classification"


def checked(qtbot, window, data, **params):
    assert window.select_task(TEXT)
    assert window.params_form.set_values({"epochs": "1", "device": "cpu", "batch_size": "16", **params}) == []
    window.data_panel.set_path(str(data))
    qtbot.waitUntil(lambda: not window.data_panel.checking and window.data_panel.summary is not None, timeout=RUN_TIMEOUT_MS)
    assert window.start_blockers() == []


def said(window, text: str) -> bool:
    return any(text in entry.message for entry in window.session.log)


def test_a_text_run_after_the_data_check_does_not_tokenise_again(qtbot, window, tmp_path, encode_calls):
    data = sample_head(tmp_path)
    checked(qtbot, window, data)
    assert len(encode_calls) == 2  # train and val, by the check
    assert "48" in window.data_panel.status.text()

    window.params_form.set_values({"lr": "0.0003"})  # a training value: the check's preparation still fits
    assert not window.data_panel.checking
    result = start_and_finish(qtbot, window)
    assert result.status == "completed", result
    assert len(encode_calls) == 2  # not tokenised again
    assert said(window, "using the data check's preparation")
    run = RunDir(window.session.run_dir).read()
    assert run["parameters"]["lr"] == 0.0003

    # a preparation serves one run: the next one prepares its own
    result = start_and_finish(qtbot, window)
    assert result.status == "completed", result
    assert len(encode_calls) == 4


def test_a_task_value_changed_after_the_check_prepares_again(qtbot, window, tmp_path, encode_calls):
    data = sample_head(tmp_path)
    checked(qtbot, window, data)
    assert len(encode_calls) == 2
    window.params_form.set_values({"max_length": "32"})  # read while tokenising
    result = start_and_finish(qtbot, window)  # at once: before the check that edit scheduled
    assert result.status == "completed", result
    assert len(encode_calls) == 4  # the run tokenised with the new value
    assert said(window, "preparing the data again: parameter max_length changed")
    run = RunDir(window.session.run_dir).read()
    assert run["parameters"]["max_length"] == 32


def test_the_data_is_checked_again_only_once_the_run_has_ended(qtbot, window, toy_csv):
    """Preparing seeds the random generators, as a run does: no check while a run trains here."""
    from test_gui_window import prepare

    prepare(qtbot, window, toy_csv, epochs=50, step_delay=0.02)
    window.controls.start_action.trigger()
    qtbot.waitUntil(lambda: window.session.curves.train.n > 0, timeout=RUN_TIMEOUT_MS)
    window.params_form.set_values({"val_fraction": "0.5"})  # changes what the check would prepare
    window.data_panel.recheck()  # as the edit's timer would
    assert not window.data_panel.checking
    with qtbot.waitSignal(window.runFinished, timeout=RUN_TIMEOUT_MS):
        window.stop_run()
    qtbot.waitUntil(lambda: not window.data_panel.checking and window.data_panel.summary is not None, timeout=60_000)
    assert sum(window.data_panel.summary.counts["val"].values()) == 120  # half of 240 rows: checked with the new value

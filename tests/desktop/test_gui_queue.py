"""The queue and a sweep's trials through the real window (qtbot): "Add to queue" beside Start, the queue
run by the real scheduler while the window closes and another opens, the queue view's pause, continue,
cancel and move, and the trials table sorted, its curves dimmed when pruned, "train the best configuration"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt

from helpers import FIXTURE_PLUGINS


def queue_button(win):
    from PySide6.QtWidgets import QToolButton

    return win.train_page.controls.findChild(QToolButton, "queue_button")


def fill_form(qtbot, win, toy_csv, **params):
    win.prefill(task="toy-classification", data=str(toy_csv), params={k: str(v) for k, v in params.items()})
    qtbot.waitUntil(lambda: win.train_page.queue_action.isEnabled(), timeout=60_000)


def rows(win):
    return win.queue_page.queue.shown_rows()


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def test_a_queued_run_goes_on_when_the_window_closes_and_a_new_window_shows_it(qtbot, window, toy_csv, tmp_home):
    from trainlab_desktop.main_window import MainWindow

    win = window
    fill_form(qtbot, win, toy_csv, epochs=2, step_delay=0.02)
    button = queue_button(win)
    assert button is not None and button.isVisible() and button.text() == "Add to queue"
    click(qtbot, button)
    assert "Queued 1" in win.train_page.controls.message.text()
    assert not win.running  # the queue runs it, not the window
    view = win.queue_page.queue
    qtbot.waitUntil(lambda: rows(win)[:1] and rows(win)[0][1] == "running", timeout=30_000)
    # no NVIDIA GPU here: the queue runs it on the CPU, and says so
    assert view.table.item(0, 4).text() == "CPU"
    win.close()  # nothing of the window's own runs: it closes without asking, and the queue goes on
    assert win.close_box is None and not win.isVisible()

    again = MainWindow(resolved_theme="light")
    qtbot.addWidget(again)
    again.show()
    again.finish_setup()
    try:
        again.show_page("queue")
        assert [r[0] for r in rows(again)] == [1]
        qtbot.waitUntil(lambda: rows(again)[0][1] == "done", timeout=90_000)
        entry = again.queue_page.queue.board.row(1)
        record = json.loads(Path(entry.run_dir, "run.json").read_text(encoding="utf-8"))
        assert record["status"] == "completed" and record["progress"]["epochs_completed"] == 2
        assert entry.run_dir in again.queue_page.queue.table.item(0, 5).text()
    finally:
        again._shutdown()


def test_the_queue_view_pauses_continues_cancels_and_moves(qtbot, window, toy_csv):
    win = window
    win.queue_page.queue.board.start_scheduler = False  # the entries wait, as with `queue add --no-start`
    fill_form(qtbot, win, toy_csv, epochs=1)
    for _ in range(3):
        click(qtbot, queue_button(win))
    win.show_page("queue")
    view = win.queue_page.queue
    assert rows(win) == [(1, "queued", "1"), (2, "queued", "2"), (3, "queued", "3")]
    assert "not running" in view.scheduler_label.text() and view.start_scheduler_button.isEnabled()

    view.select(3)
    assert not view.buttons["down"].isEnabled() and not view.buttons["continue"].isEnabled()
    click(qtbot, view.buttons["up"])
    click(qtbot, view.buttons["up"])
    assert rows(win) == [(3, "queued", "1"), (1, "queued", "2"), (2, "queued", "3")]
    assert view.selected_id() == 3 and not view.buttons["up"].isEnabled()

    view.select(1)
    click(qtbot, view.buttons["pause"])
    assert (1, "paused", "2") in rows(win)
    assert view.buttons["continue"].isEnabled() and not view.buttons["pause"].isEnabled()
    click(qtbot, view.buttons["continue"])
    assert (1, "queued", "2") in rows(win)

    view.select(2)
    click(qtbot, view.buttons["cancel"])
    assert rows(win)[-1] == (2, "cancelled", "")
    assert not any(view.buttons[k].isEnabled() for k in ("pause", "continue", "cancel", "up", "down"))
    # the CLI sees what the window did
    from trainlab.scheduling.queue_store import QueueStore

    assert [(e.id, e.state) for e in QueueStore().entries()] == [(3, "queued"), (1, "queued"), (2, "cancelled")]


@pytest.fixture
def study(cli, toy_csv):
    result = cli(
        "sweep", "toy-classification", "--data", toy_csv, "--space", "lr=1e-4:0.5:log", "--space", "hidden=4,16",
        "--trials", "6", "--sampler", "random", "--study", "gui-sweep", "--epochs", "3", "--json", extra_path=[FIXTURE_PLUGINS],
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def click_header(qtbot, table, column: int):
    header = table.horizontalHeader()
    x = header.sectionViewportPosition(column) + header.sectionSize(column) // 2
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, header.height() // 2))


def test_the_trials_table_sorts_dims_pruned_curves_and_trains_the_best(qtbot, window, study):
    from trainlab_desktop.scheduling.sweep_view import DIM_ALPHA

    win = window
    win.queue_page.queue.board.start_scheduler = False
    win.show_page("queue")
    win.queue_page.setCurrentIndex(1)  # the Sweeps tab: the newest study is shown
    view = win.queue_page.sweeps
    qtbot.waitUntil(lambda: view.table.rowCount() == 6, timeout=30_000)
    assert view.study_combo.currentText() == "gui-sweep"
    headings = [view.table.horizontalHeaderItem(c).text() for c in range(view.table.columnCount())]
    assert headings == ["Trial", "State", "GPU", "lr", "hidden", "accuracy", "Duration"]
    trials = {t["number"]: t for t in study["trials"]}
    pruned = [n for n, t in trials.items() if t["state"] == "pruned"]
    completed = [n for n, t in trials.items() if t["state"] == "completed"]
    assert pruned and len(completed) >= 2
    for number in pruned:
        assert view.cell_text(number, "state") == "pruned"
    # a foreground sweep on a machine without NVIDIA GPUs trains on the device "auto" picks
    assert view.cell_text(completed[0], "gpu") == "auto"

    # the metric's header: best first (accuracy: higher is better), pruned trials (no value) last; again: reversed
    click_header(qtbot, view.table, headings.index("accuracy"))
    order = view.table_order()
    best = study["best"]["number"]
    assert order[0] == best and set(order[-len(pruned):]) == set(pruned)
    values = [trials[n]["value"] for n in order[: len(completed)]]
    assert values == sorted(values, reverse=True)
    click_header(qtbot, view.table, headings.index("accuracy"))
    ascending = [trials[n]["value"] for n in view.table_order()[: len(completed)]]
    assert ascending == sorted(values) and set(view.table_order()[-len(pruned):]) == set(pruned)
    click_header(qtbot, view.table, headings.index("lr"))
    lrs = [trials[n]["params"]["lr"] for n in view.table_order()]
    assert lrs == sorted(lrs)

    # curves overlaid, the pruned dimmed; one line per trial across the parallel axes; importance named
    assert set(view.curve_items) == set(trials)
    assert all(view.curve_alpha(n) == DIM_ALPHA for n in pruned) and all(view.curve_alpha(n) == 255 for n in completed)
    assert len(view.curve_items[pruned[0]].getData()[0]) < 3
    assert set(view.parallel_items) == set(trials)
    assert set(view.importance_shown()) == {"lr", "hidden"} and "PED-ANOVA" in view.importance_label.text()

    # train the best configuration: a full run of its values, queued
    view.best_epochs.setValue(5)
    click(qtbot, view.train_best_button)
    assert "Queued 1" in view.best_message.text()
    from trainlab.scheduling.queue_store import QueueStore

    (entry,) = QueueStore().entries()
    assert entry.kind == "run" and entry.task == "toy-classification" and entry.request["params"]["epochs"] == 5
    assert entry.request["params"]["lr"] == pytest.approx(study["best"]["params"]["lr"])
    assert entry.request["params"]["hidden"] == study["best"]["params"]["hidden"]
    win.queue_page.setCurrentIndex(0)
    assert rows(win) == [(1, "queued", "1")]

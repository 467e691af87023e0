"""Run history: real runs of the toy task, opened, renamed, deleted, compared, followed."""

from __future__ import annotations

import csv
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication, QLineEdit, QMessageBox  # noqa: E402

from helpers import FIXTURE_PLUGINS, subprocess_env  # noqa: E402


def write_rows(path: Path, n: int = 120) -> Path:
    rnd = random.Random(1)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["a", "b", "label"])
        for _ in range(n):
            label = rnd.choice(["red", "green", "blue"])
            c = {"red": 0, "green": 1, "blue": 2}[label]
            writer.writerow([c + rnd.gauss(0, 0.5), -c + rnd.gauss(0, 0.5), label])
    return path


@pytest.fixture
def toy(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(FIXTURE_PLUGINS))
    return write_rows(tmp_path / "rows.csv")


def train(data: Path, **params) -> str:
    from trainlab.engine.scripting import RunRequest, run_training

    result = run_training(RunRequest(task="toy-classification", data=str(data), params={k: str(v) for k, v in params.items()}))
    assert result.status == "completed", result.error
    return result.run_dir


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Two real toy runs, trained once for this module."""
    import trainlab.pluginhost.host as host

    root = tmp_path_factory.mktemp("history-runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRAINLAB_HOME", str(root / "home"))
        mp.syspath_prepend(str(FIXTURE_PLUGINS))
        mp.setattr(host, "_registry", None)
        data = write_rows(root / "rows.csv")
        return [Path(train(data, epochs=2, lr=0.02)), Path(train(data, epochs=3, lr=0.005))]


@pytest.fixture
def two_runs(trained, tmp_home):
    """Copies of the trained runs, in this test's own home and index."""
    import shutil

    from trainlab.runfolder.index import RunStore

    store = RunStore()
    copies = []
    for run in trained:
        copy = tmp_home / "runs" / run.name
        shutil.copytree(run, copy)
        store.record(json.loads((copy / "run.json").read_text()), copy)
        copies.append(str(copy))
    return copies


@pytest.fixture
def history(qtbot):
    from trainlab_desktop.history.page import RunHistoryView
    from trainlab.runfolder.index import RunStore

    view = RunHistoryView(RunStore())
    qtbot.addWidget(view)
    view.resize(1000, 700)
    view.show()
    qtbot.waitExposed(view)
    return view


def row_of(view, run_dir):
    model = view.model
    for row in range(model.rowCount()):
        if model.run_at(row)["run_dir"] == run_dir:
            return view.proxy.mapFromSource(model.index(row, 0)).row()
    raise AssertionError(f"{run_dir} not listed")


def cell_text(view, run_dir, column):
    from trainlab_desktop.history.page import COLUMNS

    return view.proxy.index(row_of(view, run_dir), COLUMNS.index(column)).data()


def answer_next_dialog(qtbot, button_text):
    """Click a button of the modal box the next action opens (the real dialog, driven)."""
    clicked = []

    def click():
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(10, click)
            return
        for button in box.buttons():
            if button.text().replace("&", "") == button_text:
                clicked.append(box.text())
                button.click()
                return
        raise AssertionError(f"no {button_text!r} button in {[b.text() for b in box.buttons()]}")

    QTimer.singleShot(0, click)
    return clicked


def test_history_lists_runs_and_opens_one(qtbot, two_runs, history):
    first, second = two_runs
    assert history.model.rowCount() == 2
    assert cell_text(history, first, "status") == "Completed"
    assert cell_text(history, first, "task") == "toy-classification"
    assert cell_text(history, first, "best").endswith("%")
    # newest first
    assert row_of(history, second) == 0

    table = history.table
    rect = table.visualRect(history.proxy.index(row_of(history, first), 1))
    with qtbot.waitSignal(history.runOpened) as opened:
        qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        qtbot.mouseDClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert opened.args == [first]
    # selecting it showed its curves from metrics.jsonl
    counts = history.curves.point_counts()[first]
    assert counts["smooth"] > 0 and counts["accuracy"] == 2 and counts["lr"] > 0

    table.setFocus()
    history.table.selectRow(row_of(history, second))
    with qtbot.waitSignal(history.runOpened) as opened:
        qtbot.keyClick(table, Qt.Key.Key_Return)
    assert opened.args == [second]


def test_rename_in_place_updates_index_and_run_json(qtbot, two_runs, history):
    from trainlab.runfolder.index import RunStore

    first, _ = two_runs
    history.table.selectRow(row_of(history, first))
    history.rename_current()
    editor = QApplication.focusWidget()
    assert isinstance(editor, QLineEdit)
    editor.selectAll()
    qtbot.keyClicks(editor, "baseline lr 0.02")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: cell_text(history, first, "name") == "baseline lr 0.02")
    assert json.loads((Path(first) / "run.json").read_text())["name"] == "baseline lr 0.02"
    assert RunStore().get(first)["name"] == "baseline lr 0.02"
    history.refresh()
    assert cell_text(history, first, "name") == "baseline lr 0.02"
    assert history.selected_run_dirs() == [first]  # a refresh keeps the selection


def test_delete_asks_first_and_removes_the_folder(qtbot, two_runs, history):
    first, second = two_runs
    history.table.selectRow(row_of(history, first))

    asked = answer_next_dialog(qtbot, "Cancel")
    history.delete_selected()
    assert asked and "Delete the run" in asked[0]
    assert Path(first).is_dir() and history.model.rowCount() == 2

    answer_next_dialog(qtbot, "Delete")
    with qtbot.waitSignal(history.runsDeleted) as deleted:
        history.delete_selected()
    assert deleted.args == [[first]]
    assert not Path(first).exists()
    assert history.model.rowCount() == 1
    assert history.model.run_at(0)["run_dir"] == second


def test_selecting_several_runs_overlays_their_curves(qtbot, two_runs, history):
    history.table.selectAll()
    assert history.compare_button.isEnabled()
    with qtbot.waitSignal(history.runsOverlaid) as overlaid:
        qtbot.mouseClick(history.compare_button, Qt.MouseButton.LeftButton)
    assert sorted(overlaid.args[0]) == sorted(two_runs)
    counts = history.curves.point_counts()
    assert set(counts) == set(two_runs)
    assert counts[two_runs[0]]["accuracy"] == 2 and counts[two_runs[1]]["accuracy"] == 3
    assert "raw" not in counts[two_runs[0]]  # overlaid: smoothed curves only, one colour per run
    history.curves.log_scale.setChecked(True)
    assert history.curves.loss_plot.getAxis("left").logMode


def test_filter_narrows_the_list(qtbot, two_runs, history):
    history.rename(history.model.run_at(0)["id"], "keep me")
    qtbot.keyClicks(history.filter_edit, "keep")
    assert history.proxy.rowCount() == 1
    history.filter_edit.clear()
    assert history.proxy.rowCount() == 2


def test_follows_a_run_started_from_the_command_line(qtbot, history, toy, tmp_path):
    """A CLI run appears while it trains, gets selected, and its curves grow live."""
    assert history.model.rowCount() == 0
    process = subprocess.Popen(
        [sys.executable, "-m", "trainlab", "train", "toy-classification", "--data", str(toy),
         "--epochs", "3", "--set", "step_delay=0.08", "--json"],
        env=subprocess_env([FIXTURE_PLUGINS]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        qtbot.waitUntil(lambda: bool(history.curves.following()), timeout=60_000)
        run_dir = history.curves.following()[0]
        assert cell_text(history, run_dir, "status") == "Running"

        def points_while_running():
            counts = history.curves.point_counts()[run_dir]
            return counts["smooth"] > 0 and history.curves.following() == [run_dir]

        qtbot.waitUntil(points_while_running, timeout=60_000)
        qtbot.waitUntil(lambda: not history.curves.following(), timeout=60_000)
        qtbot.waitUntil(lambda: cell_text(history, run_dir, "status") == "Completed", timeout=10_000)
        counts = history.curves.point_counts()[run_dir]
        assert counts["accuracy"] == 3
    finally:
        out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert json.loads(out)["run_dir"] == run_dir


def test_metrics_tail_holds_back_a_half_written_line(tmp_path):
    from trainlab.runfolder.tail import MetricsTail
    from trainlab.api.events import EvalResult, TrainStep

    path = tmp_path / "metrics.jsonl"
    first = TrainStep(step=1, loss=1.0).to_json()
    second = EvalResult(step=2, epoch=1, accuracy=0.5).to_json()
    path.write_text(first + "\n" + second[:20], encoding="utf-8")
    tail = MetricsTail(path)
    assert [e.step for e in tail.read_new()] == [1]
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(second[20:] + "\n")
    events = tail.read_new()
    assert len(events) == 1 and events[0].accuracy == 0.5
    assert tail.read_new() == []
    path.write_text(first + "\n", encoding="utf-8")  # replaced by a shorter file
    assert [e.step for e in tail.read_new()] == [1] and tail.restarted


def test_an_interrupted_or_damaged_run_reads_the_same_in_every_view(qtbot, two_runs, history):
    """One status vocabulary; a damaged run.json is named, never raised into the event loop."""
    from trainlab_desktop.run.welcome import describe_run
    from trainlab.runfolder.index import RunStore
    from trainlab.runfolder.status import INTERRUPTED_ERROR

    first, second = two_runs
    record = json.loads((Path(first) / "run.json").read_text())
    record.update(status="failed", error=INTERRUPTED_ERROR)
    (Path(first) / "run.json").write_text(json.dumps(record))
    RunStore().record(record, Path(first))
    metrics = Path(first) / "metrics.jsonl"  # killed: no "finished" event at the end
    metrics.write_text("".join(l for l in metrics.read_text().splitlines(True) if '"finished"' not in l))
    (Path(second) / "run.json").write_text("{damaged")
    history.refresh()

    assert cell_text(history, first, "status") == "Interrupted"
    row = history.model.run_at(history.model.row_of(record["id"]))
    assert "Interrupted" in describe_run(row)
    index = history.proxy.index(row_of(history, first), 0)
    assert index.data(Qt.ItemDataRole.ToolTipRole) == INTERRUPTED_ERROR
    history.table.selectRow(row_of(history, first))
    assert history.curves.following() == [] and "(live)" not in history.curves.legend.text()

    history.table.selectRow(row_of(history, second))
    legend = history.curves.legend.text()
    assert str(Path(second) / "run.json") in legend and "is not valid JSON" in legend
    assert Path(second).name in legend  # named by its folder
    assert history.curves.point_counts()[second]["accuracy"] == 3  # its curves still show


def test_the_window_opens_a_run_with_a_damaged_run_json(qtbot, window, trained, tmp_path):
    import shutil

    run = tmp_path / "damaged"
    shutil.copytree(trained[0], run)
    (run / "run.json").write_text("[1, 2, 3]")
    window.open_run(str(run))
    if window.results is not None:
        assert window.current_page() == "results"
        assert str(run / "run.json") in window.results.notice.text()


def test_the_window_opens_a_run_with_a_bad_metrics_line_and_says_it_skipped_it(qtbot, window, trained, tmp_path):
    import shutil

    from trainlab.runfolder.tail import read_events

    run = tmp_path / "bad-line"
    shutil.copytree(trained[0], run)
    metrics = run / "metrics.jsonl"
    good = [e for e in read_events(metrics) if e.kind == "train"]
    with open(metrics, "a", encoding="utf-8") as handle:
        handle.write('{"event": "train", "step": "x", "loss": "NaN?"}\n')
        handle.write('{"event": "eval", "step": 3, "split": "val", "loss": [1], "accuracy": 0.5}\n')
    assert len([e for e in read_events(metrics) if e.kind == "train"]) == len(good)  # the reader skips them
    window.open_run(str(run))
    assert window.session.source == "follow"
    assert window.session.curves.train.n == len(good) and window.session.bad_lines == 2
    assert "2 lines of metrics.jsonl" in window.status_label.text() and "skipped" in window.status_label.text()


def a_full_disk_under(home, monkeypatch):
    """SQLite cannot open the index (its WAL needs a -shm file: "disk I/O error"), and no byte is free under ``home``."""
    import shutil
    import sqlite3
    from collections import namedtuple

    real_usage = shutil.disk_usage
    usage = namedtuple("usage", "total used free")

    def connect(*args, **kwargs):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(sqlite3, "connect", connect)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9, 0) if str(path).startswith(str(home)) else real_usage(path))


def test_on_a_full_disk_the_window_lists_the_runs_read_only_from_their_folders(qtbot, two_runs, tmp_home, monkeypatch, window):
    a_full_disk_under(tmp_home, monkeypatch)
    window.history.deleteLater()
    window._setup_steps()._history_page()  # the page as a window started on the full disk builds it
    window.refresh_recent_runs()
    history = window.history
    assert history is not None, "the history page says it cannot read the index"
    assert sorted(history.model.run_at(row)["run_dir"] for row in range(history.model.rowCount())) == sorted(two_runs)
    window.show_page("history")
    assert history.read_only_label.isVisible() and "read-only" in history.read_only_label.text()
    history.select_ids([history.model.run_at(0)["id"]])
    assert history.open_button.isEnabled()
    assert not history.rename_button.isEnabled() and not history.delete_button.isEnabled()

    qtbot.waitUntil(lambda: "read-only" in window.welcome.recent_empty.text(), timeout=30_000)
    assert window.welcome.recent.count() == 2 and not window.welcome.recent_empty.isHidden()
    assert "Cannot read" not in window.welcome.recent_empty.text()


def test_the_start_page_says_when_the_index_cannot_be_read(qtbot, two_runs, monkeypatch, window):
    import sqlite3

    def connect(*args, **kwargs):  # not a full disk: a lock or a permission, say
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(sqlite3, "connect", connect)
    window.refresh_recent_runs()
    qtbot.waitUntil(lambda: "Cannot read the run index" in window.welcome.recent_empty.text(), timeout=30_000)
    assert window.welcome.recent.isHidden() and "No runs yet" not in window.welcome.recent_empty.text()

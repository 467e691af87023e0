"""The Qt-free models behind the Queue page: SweepBoard (a study's trials as the views show them) and
QueueBoard (the queue's rows, places in line and what each entry allows)."""

from __future__ import annotations

import pytest

from trainlab.api.errors import UsageError
from trainlab.scheduling.queue_board import QueueBoard
from trainlab.scheduling.queue_store import QueueStore
from trainlab.scheduling.sweep_board import SweepBoard
from trainlab.scheduling.sweep_space import Dimension


def summary(direction: str = "minimize") -> dict:
    def trial(number, state, lr, model, value=None, reported=()):
        return {"number": number, "state": state, "params": {"lr": lr, "model": model}, "value": value,
                "last_reported": {str(e): v for e, v in reported}, "run_dir": "", "reason": "", "duration": 1.0 + number}

    return {
        "study": "s", "task": "toy-classification", "data": "/d.csv", "monitor": "loss", "direction": direction,
        "params": {"epochs": 3, "hidden": 8}, "gpus_per_trial": 1,
        "trials": [
            trial(0, "completed", 1e-3, "a", 0.5, [(1, 0.9), (2, 0.5)]),
            trial(1, "pruned", 1e-1, "b", None, [(1, 2.0)]),
            trial(2, "completed", 1e-2, "b", 0.2, [(1, 0.6), (2, 0.2)]),
            trial(3, "running", 1e-4, "a"),
        ],
    }


DIMENSIONS = [Dimension("lr", "float", low=1e-4, high=1e-1, log=True), Dimension("model", "str", values=("a", "b"))]


def test_the_trials_sort_best_first_in_the_metric_direction_and_trials_without_a_value_come_last():
    board = SweepBoard(summary("minimize"), dimensions=DIMENSIONS)
    assert board.columns() == ["trial", "state", "gpu", "lr", "model", "value", "duration"]
    assert [r.number for r in board.sorted_rows("value")] == [2, 0, 1, 3]
    assert [r.number for r in board.sorted_rows("value", descending=True)] == [0, 2, 1, 3]
    assert [r.number for r in board.sorted_rows("lr")] == [3, 0, 2, 1]
    assert board.best().number == 2
    assert SweepBoard(summary("maximize"), dimensions=DIMENSIONS).best().number == 0


def test_parallel_axes_follow_the_space_log_ranges_and_lists_and_the_metric():
    board = SweepBoard(summary(), dimensions=DIMENSIONS)
    lr, model, metric = board.parallel_axes()
    assert (lr.log, lr.low, lr.high) == (True, pytest.approx(-4.0), pytest.approx(-1.0))
    assert model.labels == ("a", "b") and metric.name == "loss"
    lines = {line.number: line.points for line in board.parallel_lines()}
    assert lines[0][:2] == (pytest.approx(1 / 3), 0.0)
    assert lines[1][1] == 1.0 and lines[1][2] == 1.0  # a pruned trial sits at its last reported value (2.0, the highest)
    assert lines[3][2] is None  # a running trial with nothing reported has no metric point
    assert [(row.number, dimmed) for row, dimmed in board.curves()] == [(0, False), (1, True), (2, False)]


def test_the_best_configuration_is_the_base_parameters_with_the_best_values_and_importance_waits_for_trials():
    board = SweepBoard(summary(), dimensions=DIMENSIONS)
    assert board.best_request(epochs=10) == {
        "task": "toy-classification", "data": "/d.csv", "params": {"epochs": 10, "hidden": 8, "lr": 1e-2, "model": "b"},
    }
    lonely = summary()
    lonely["trials"] = lonely["trials"][1:2]
    with pytest.raises(UsageError, match="no trial has completed yet"):
        SweepBoard(lonely, dimensions=DIMENSIONS).best_request()
    importance = SweepBoard(lonely, dimensions=DIMENSIONS).importance()
    assert not importance.values and "Importance needs 2 completed trials (0 so far)." in importance.message
    assert "PED-ANOVA" in importance.evaluator


def test_queue_rows_say_each_entry_place_and_what_it_allows(tmp_home):
    store = QueueStore()
    from fixtures import fake_nvml

    board = QueueBoard(store, start_scheduler=False, nvml=fake_nvml.two_gpus())
    for gpus in (1, 0, 2):
        store.add("run", {"task": "toy-classification", "data": "/d.csv", "params": {}}, gpus)
    assert board.refresh() and not board.refresh()  # a second read with nothing new changes nothing
    assert [(r.id, r.position, r.gpu) for r in board.rows] == [(1, 1, "1 GPU"), (2, 2, "CPU"), (3, 3, "2 GPUs")]
    board.move_by(3, -1)
    assert [(r.id, r.position) for r in board.rows] == [(1, 1), (3, 2), (2, 3)]
    board.pause(1)
    paused = board.row(1)
    assert (paused.state, paused.can_continue, paused.can_pause, paused.can_move) == ("paused", True, False, True)
    board.cancel(2)
    cancelled = board.row(2)
    assert (cancelled.position, cancelled.can_cancel, cancelled.can_move) == (None, False, False)
    with pytest.raises(UsageError, match="only a queued or paused entry can move"):
        board.move_by(2, -1)
    assert "not running" in board.scheduler_text()
    # with no NVIDIA GPU every entry runs on the CPU, and the view says so; a finished one shows none
    no_gpus = QueueBoard(store, start_scheduler=False, nvml=fake_nvml.FakeNvml([]))
    no_gpus.refresh()
    assert [(r.id, r.gpu) for r in no_gpus.rows] == [(1, "CPU"), (3, "CPU"), (2, "")]


def test_a_running_entry_names_the_gpus_it_was_given_as_this_machine_numbers_them(tmp_home):
    from fixtures import fake_nvml

    nvml = fake_nvml.two_gpus()
    second = nvml.gpus[1].uuid
    store = QueueStore()
    entry = store.add("run", {"task": "toy-classification", "data": "/d.csv", "params": {}}, 1)
    store.launch(entry.id, [second])
    board = QueueBoard(store, start_scheduler=False, nvml=nvml)
    board.refresh()
    assert board.row(entry.id).gpu == "GPU 1"
    trials = summary()
    trials["trials"][0]["gpu"] = second
    trials["trials"][2]["gpu"] = "cpu"
    rows = {r.number: r.gpu for r in SweepBoard(trials, gpu_names={second: "GPU 1"}, dimensions=DIMENSIONS).rows}
    assert (rows[0], rows[2], rows[1]) == ("GPU 1", "cpu", "")

"""The RunSession: one run's state, reduced from its events in order, with no Qt.

Fed lists of events as the worker, a child process or a metrics.jsonl would
give them; what a view would show (progress, curves, log, status, the
outcome) is checked, and what each subscriber is told changed.
"""

from __future__ import annotations

import json
import math

import pytest

from trainlab.api.events import EvalResult, Finished, Log, Progress, Started, SystemSample, TrainStep
from trainlab.viewmodel.session import LOG_LIMIT, RunSession

T0 = 1_800_000_000.0


def run_events(run_dir: str = "/runs/r1", steps: int = 6, finished: bool = True) -> list:
    events = [
        Log(time=T0, message="train: 48 rows"),
        Started(time=T0, run_dir=run_dir, task="toy-classification", total_steps=steps, epochs=2, device="cpu",
                precision="fp32"),
    ]
    for step in range(1, steps + 1):
        epoch = 1 if step <= steps // 2 else 2
        events.append(TrainStep(time=T0 + step, step=step, epoch=epoch, loss=1.0 / step, lr=1e-3, samples_per_second=100.0 + step))
        events.append(Progress(time=T0 + step, step=step, epoch=epoch, total_steps=steps, epochs=2, eta_seconds=steps - step,
                               samples_per_second=100.0 + step))
        if step % (steps // 2) == 0:
            events.append(EvalResult(time=T0 + step, step=step, epoch=epoch, loss=0.5 / epoch,
                                     metrics={"accuracy": 0.5 + 0.2 * epoch, "macro_f1": 0.4 + 0.2 * epoch}, best=True))
    events.append(SystemSample(time=T0 + steps, cpu_percent=12.0))
    if finished:
        events.append(Finished(time=T0 + steps + 1, step=steps, epochs=2, status="completed", run_dir=run_dir,
                               task="toy-classification", metrics={"accuracy": 0.9}))
    return events


def test_a_run_reduces_to_progress_curves_log_and_its_outcome():
    session = RunSession()
    changes = []
    session.subscribe(lambda s, change: changes.append(change))
    session.begin()
    assert session.status == "preparing" and session.live
    change = session.apply(run_events())

    assert session.started.run_dir == "/runs/r1" and session.started.device == "cpu"
    assert session.run_dir == "/runs/r1"
    prog = session.progress
    assert (prog.step, prog.total_steps, prog.epoch, prog.epochs) == (6, 6, 2, 2)
    assert prog.fraction == 1.0 and prog.eta_seconds == 0 and prog.samples_per_second == 106.0
    assert session.curves.train.n == 6 and session.curves.evals.n == 2
    assert list(session.curves.train.column("step")) == [1, 2, 3, 4, 5, 6]
    assert [m["accuracy"] for m in session.curves.eval_metrics] == pytest.approx([0.7, 0.9])
    assert [e.message for e in session.log] == ["train: 48 rows"]
    assert session.last_system.cpu_percent == 12.0
    assert session.status == "completed" and session.ended and not session.live
    assert session.result.status == "completed" and session.result.steps == 6 and session.result.run_dir == "/runs/r1"

    # one change for the whole batch, naming every part that changed
    assert change is changes[-1]
    assert change.started and change.progress and change.train and change.status and change.finished
    assert len(change.evals) == 2 and [e.message for e in change.logs] == ["train: 48 rows"] and len(change.system) == 1
    assert changes[0].reset and changes[0].status  # begin()


def test_events_are_reduced_in_the_order_they_happened():
    """A progress event older than the last train step does not set the step back."""
    session = RunSession()
    session.begin()
    session.apply([
        Started(run_dir="r", total_steps=10, epochs=1),
        Progress(step=3, total_steps=10, epochs=1, phase="eval"),
        TrainStep(step=4, loss=0.5),
        TrainStep(step=5, loss=0.4),
    ])
    assert session.progress.step == 5 and session.progress.phase == "eval"
    # curves take consecutive steps together, but an eval between them keeps its place
    session.apply([TrainStep(step=6, loss=0.3), EvalResult(step=6, loss=0.2, metrics={"accuracy": 1.0}), TrainStep(step=7, loss=0.1)])
    assert list(session.curves.train.column("step")) == [4, 5, 6, 7]
    assert list(session.curves.evals.column("step")) == [6]


def test_every_declared_metric_is_kept_beside_the_classic_columns():
    """A regression run's evaluations have no accuracy: the curves still hold each
    metric the task declared, and the classic columns read NaN."""
    session = RunSession()
    session.begin()
    session.apply([
        Started(run_dir="r", total_steps=4, epochs=2),
        EvalResult(step=2, epoch=1, loss=9.0, metrics={"mae": 3.0, "rmse": 4.0, "r2": 0.2}, monitor="mae"),
        EvalResult(step=2, epoch=1, split="test", loss=8.0, metrics={"mae": 2.5}),
        EvalResult(step=4, epoch=2, loss=4.0, metrics={"mae": 1.5, "rmse": 2.0, "r2": 0.7}, monitor="mae", best=True),
    ])
    curves = session.curves
    assert curves.evals.n == 2  # validation passes only
    assert math.isnan(curves.evals.column("accuracy")[0])
    assert list(curves.eval_values("mae")) == [3.0, 1.5]
    assert list(curves.eval_values("loss")) == [9.0, 4.0]
    assert math.isnan(curves.eval_values("nope")[0])
    assert curves.metric_names() == ["mae", "rmse", "r2"]
    assert [e.split for e in session.evals] == ["val", "test", "val"]  # every evaluation, with its full metrics
    assert session.latest_eval().metrics == {"mae": 1.5, "rmse": 2.0, "r2": 0.7}
    assert session.metric_names() == ["mae", "rmse", "r2"]


def test_the_worker_says_paused_and_stopping_before_the_engine_does():
    session = RunSession()
    session.begin()
    assert session.set_status("running").status
    session.apply([Started(run_dir="r", total_steps=10, epochs=1)])
    assert session.set_status("paused").status and session.status == "paused"
    session.apply([Progress(step=2, total_steps=10, phase="train")])  # a late event does not undo the request
    assert session.status == "paused"
    session.set_status("stopping")
    session.apply([Finished(status="cancelled", step=2, run_dir="r")])
    assert session.status == "cancelled"
    assert not session.set_status("running")  # an ended run stays ended
    assert session.status == "cancelled"


def test_the_outcome_is_the_last_word():
    from trainlab.engine.outcome import RunOutcome

    session = RunSession()
    session.begin()
    outcome = RunOutcome.not_started(task="toy-classification", error="--data x: no such file", usage_error=True)
    change = session.finish(outcome)
    assert change.finished and session.status == "failed" and session.error == "--data x: no such file"
    assert session.result is outcome


def test_the_log_is_bounded():
    session = RunSession()
    session.begin()
    session.apply([Log(message=f"line {i}") for i in range(LOG_LIMIT + 10)])
    assert len(session.log) == LOG_LIMIT and session.log[-1].message == f"line {LOG_LIMIT + 9}"


def test_a_broken_subscriber_does_not_stop_the_others():
    session = RunSession()
    seen = []

    def broken(_session, _change):
        raise RuntimeError("a view failed")

    session.subscribe(broken)
    unsubscribe = session.subscribe(lambda s, change: seen.append(change))
    session.begin()
    session.apply([TrainStep(step=1, loss=1.0)])
    assert len(seen) == 2 and session.curves.train.n == 1
    unsubscribe()
    session.apply([TrainStep(step=2, loss=1.0)])
    assert len(seen) == 2


def test_continuing_a_run_reads_its_earlier_curves_first(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"task": "toy-classification", "status": "completed"}), encoding="utf-8")
    (run / "metrics.jsonl").write_text("".join(e.to_json() + "\n" for e in run_events(str(run))), encoding="utf-8")
    session = RunSession()
    session.begin(history=run)
    assert session.status == "preparing" and session.result is None  # the earlier run's end is not this one's
    assert session.curves.train.n == 6 and len(session.evals) == 2
    assert len(session.log) == 0 and session.progress.step == 0


def _write(path, events, newline=True):
    with open(path, "a", encoding="utf-8") as handle:
        for i, event in enumerate(events):
            last = i == len(events) - 1
            handle.write(event.to_json() + ("\n" if newline or not last else ""))


def test_following_a_run_folder_is_the_same_reduction(tmp_path):
    """A run started elsewhere (the CLI): its metrics.jsonl, read as it grows,
    gives what the worker's events give, log and system samples included."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"task": "toy-classification", "status": "running"}), encoding="utf-8")
    events = run_events(str(run))
    metrics = run / "metrics.jsonl"
    _write(metrics, events[:6])
    session = RunSession()
    changes = []
    session.subscribe(lambda s, change: changes.append(change))
    first = session.follow(run)
    assert session.source == "follow" and session.following and session.live and session.status == "running"
    assert first.replay and session.progress.step == 2 and [e.message for e in session.log] == ["train: 48 rows"]

    # a half-written line waits for its end
    line = events[6].to_json()
    with open(metrics, "a", encoding="utf-8") as handle:
        handle.write(line[:10])
    assert not session.poll()
    with open(metrics, "a", encoding="utf-8") as handle:
        handle.write(line[10:] + "\n")
    _write(metrics, events[7:-1])
    change = session.poll()
    assert not change.replay and change.system and change.evals
    assert session.progress.step == 6 and session.curves.evals.n == 2 and session.live

    # paused, as the engine says it in the file (no worker here to say so)
    _write(metrics, [Progress(step=6, total_steps=6, epochs=2, phase="paused")])
    session.poll()
    assert session.status == "paused"

    _write(metrics, events[-1:])
    change = session.poll()
    assert change.finished and session.status == "completed" and not session.following and not session.live

    # the same events handed over in one go reduce to the same state
    direct = RunSession()
    direct.begin()
    direct.apply(events)
    assert direct.progress.step == session.progress.step and direct.curves.train.n == session.curves.train.n
    assert list(direct.curves.evals.column("accuracy")) == list(session.curves.evals.column("accuracy"))


def test_opening_an_ended_run_reads_it_once(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"task": "toy-classification", "status": "cancelled"}), encoding="utf-8")
    _write(run / "metrics.jsonl", run_events(str(run), finished=False))
    session = RunSession()
    session.follow(run)
    assert session.status == "cancelled" and not session.following and not session.live
    assert session.curves.train.n == 6 and session.run_dir == str(run.resolve())


def test_a_replaced_metrics_file_starts_the_curves_again(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"task": "t", "status": "running"}), encoding="utf-8")
    metrics = run / "metrics.jsonl"
    _write(metrics, run_events(str(run), finished=False))
    session = RunSession()
    session.follow(run)
    assert session.curves.train.n == 6
    metrics.unlink()
    _write(metrics, [TrainStep(step=1, loss=2.0)])
    session.poll()
    assert session.curves.train.n == 1


def test_an_unreadable_run_json_still_shows_the_curves(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("{not json", encoding="utf-8")
    _write(run / "metrics.jsonl", run_events(str(run), finished=False))
    session = RunSession()
    session.follow(run)
    assert session.status == "idle" and session.curves.train.n == 6 and not session.live


def test_the_session_needs_neither_qt_nor_torch():
    import subprocess
    import sys

    code = ("import sys; import trainlab.viewmodel.session, trainlab.viewmodel.param_values; "
            "bad = [m for m in ('PySide6', 'torch', 'pyqtgraph') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"

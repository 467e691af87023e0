"""Following a run started elsewhere (the command line) is the window's own run's code.

The run folder is written by hand, as a running ``trainlab train`` writes it:
the window reads its metrics.jsonl as it grows through its ``RunSession``,
shows progress and curves, passes the run's log lines to the log panel, keeps
Start blocked while it runs, and says when it has ended.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pytestqt")

from trainlab.api.events import EvalResult, Finished, Log, Progress, Started, TrainStep


def append(path, *events):
    with open(path, "a", encoding="utf-8") as handle:
        handle.writelines(e.to_json() + "\n" for e in events)


def test_a_run_started_elsewhere_is_followed_as_it_goes(qtbot, window, tmp_path, toy_csv):
    run = tmp_path / "cli-run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"id": "cli-run", "task": "toy-classification", "status": "running"}),
                                  encoding="utf-8")
    metrics = run / "metrics.jsonl"
    append(metrics, Started(run_dir=str(run), task="toy-classification", total_steps=8, epochs=2, device="cpu"),
           *(TrainStep(step=s, epoch=1, loss=1.0 / s) for s in range(1, 4)))
    assert window.select_task("toy-classification")
    window.data_panel.set_path(str(toy_csv))
    qtbot.waitUntil(lambda: not window.data_panel.checking, timeout=60_000)

    window.open_run(str(run))
    session = window.session
    assert session.following and session.live and session.progress.step == 3
    assert window.plots.curves is session.curves and session.curves.train.n == 3
    assert "Following cli-run" in window.status_label.text()
    assert "A run is in progress." in window.start_blockers()
    assert not window.controls.start_action.isEnabled()

    append(metrics, Log(message="hello from the command line", level="warning"),
           *(TrainStep(step=s, epoch=1, loss=1.0 / s) for s in range(4, 5)),
           Progress(step=4, epoch=1, total_steps=8, epochs=2, eta_seconds=30.0, samples_per_second=50.0),
           EvalResult(step=4, epoch=1, loss=0.4, metrics={"accuracy": 0.75, "macro_f1": 0.7}))
    qtbot.waitUntil(lambda: session.progress.step == 4 and session.curves.evals.n == 1, timeout=10_000)
    assert "step 4 of 8" in window.controls.line.text()
    qtbot.waitUntil(lambda: "hello from the command line" in window.log_panel.plain_text(), timeout=10_000)

    append(metrics, Finished(step=8, epochs=2, status="completed", run_dir=str(run), task="toy-classification"))
    qtbot.waitUntil(lambda: session.status == "completed", timeout=10_000)
    assert not session.following
    assert window.status_label.text() == "The followed run has ended."
    assert window.controls.start_action.isEnabled()

"""The engine runs any task family end to end: metrics, monitor, fitted state, eval."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from helpers import FIXTURE_PLUGINS, write_toy_multilabel_csv, write_toy_regression_csv


@pytest.fixture
def families(monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURE_PLUGINS))


def _run(task, data, out, **params):
    from trainlab.engine.scripting import RunRequest, run_training

    return run_training(RunRequest(task=task, data=str(data), params={k: str(v) for k, v in params.items()}, out=str(out)))


def test_a_regression_run_reports_its_own_metrics_and_monitors_r2(families, tmp_path):
    data = write_toy_regression_csv(tmp_path / "reg.csv")
    outcome = _run("toy-regression", data, tmp_path / "run", epochs=25)
    assert outcome.status == "completed", outcome.error
    assert set(outcome.metrics) == {"r2", "mae", "rmse", "loss"}
    assert outcome.metrics["r2"] > 0.9  # a linear target an MLP fits easily
    assert outcome.best["metric"] == "r2"
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["parameters"]["monitor"] == "r2" and record["metrics"]["r2"] == outcome.metrics["r2"]
    report = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert report["family"] == "regression" and report["metrics"]["mae"] == pytest.approx(outcome.metrics["mae"])
    assert "accuracy" not in report and "confusion_matrix" not in report
    # the target's scaling is the task's fitted state, kept with the run and its model
    state = json.loads((tmp_path / "run" / "model" / "task_state.json").read_text())
    assert 300 < state["target_mean"] < 700 and state["target_std"] > 10
    events = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    evals = [e for e in events if e["event"] == "eval"]
    assert len(evals) == 25 and all({"r2", "mae", "rmse"} <= set(e) for e in evals)
    assert evals[-1]["monitor"] == "r2"


def test_a_regression_run_evaluates_again_from_its_folder(families, tmp_path):
    from trainlab.engine.scripting import evaluate_run

    data = write_toy_regression_csv(tmp_path / "reg.csv")
    outcome = _run("toy-regression", data, tmp_path / "run", epochs=10)
    again = evaluate_run(outcome.run_dir)
    assert again["metrics"]["r2"] == pytest.approx(outcome.metrics["r2"], rel=1e-5)


def test_lower_is_better_when_monitoring_an_error(families, tmp_path):
    data = write_toy_regression_csv(tmp_path / "reg.csv")
    outcome = _run("toy-regression", data, tmp_path / "run", epochs=6, monitor="mae")
    events = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    maes = [e["mae"] for e in events if e["event"] == "eval"]
    assert outcome.best["metric"] == "mae" and outcome.best["value"] == pytest.approx(min(maes))


def test_monitor_choices_come_from_the_task(families, tmp_path):
    from trainlab import UsageError

    data = write_toy_regression_csv(tmp_path / "reg.csv")
    with pytest.raises(UsageError, match="monitor"):
        _run("toy-regression", data, tmp_path / "run", monitor="accuracy")


def test_a_multilabel_run_with_auto_thresholds(families, tmp_path):
    data = write_toy_multilabel_csv(tmp_path / "ml.csv", rows=400)
    outcome = _run("toy-multilabel", data, tmp_path / "run", epochs=15, threshold="auto")
    assert outcome.status == "completed", outcome.error
    assert set(outcome.metrics) == {"micro_f1", "macro_f1", "loss"} and outcome.metrics["micro_f1"] > 0.8
    report = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert [row["label"] for row in report["per_label"]] == ["a", "b", "c"]
    state = json.loads((tmp_path / "run" / "model" / "task_state.json").read_text())
    assert len(state["thresholds"]) == 3 and report["thresholds"] == state["thresholds"]
    assert all(0 < t < 1 for t in state["thresholds"])
    assert not math.isnan(report["macro_f1"])

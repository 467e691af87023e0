"""report_to=tensorboard,mlflow: a run's values read back with TensorBoard's reader and MLflow's client."""

from __future__ import annotations

import json
import sys

import pytest

from helpers import FIXTURE_PLUGINS, one_line_error, run_toy_classification, write_toy_csv
from trainlab.api.errors import UsageError
from trainlab.api.events import EvalResult
from trainlab.engine.experiment_logs import logged_values, mlflow_store

pytest.importorskip("tensorboard", reason="the tensorboard extra is not installed")
pytest.importorskip("mlflow", reason="the mlflow extra is not installed")


def _events(run_dir, kind):
    lines = (json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip())
    return [line for line in lines if line["event"] == kind]


def test_a_run_is_in_tensorboard_and_mlflow(toy_plugin, toy_csv, tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    store = tmp_path / "mlruns"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", str(store))  # a folder: MLflow's file store
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # which MLflow 3 keeps only when asked
    outcome = run_toy_classification(toy_csv, tmp_path, report_to="tensorboard,mlflow", log_model="true", epochs=2, lr=0.01)
    assert outcome.status == "completed", outcome.error
    run_dir = tmp_path / "run"
    trains, evals = _events(run_dir, "train"), _events(run_dir, "eval")
    assert len(evals) == 2

    board = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"scalars": 0, "tensors": 0})
    board.Reload()
    loss = board.Scalars("train/loss")
    assert [(s.step, round(s.value, 5)) for s in loss] == [(t["step"], round(t["loss"], 5)) for t in trains]
    assert [(s.step, round(s.value, 5)) for s in board.Scalars("val/accuracy")] == [(e["step"], round(e["accuracy"], 5)) for e in evals]
    assert [s.value for s in board.Scalars("epoch")][-1] == 2
    assert board.Scalars("final/accuracy")[-1].value == pytest.approx(outcome.metrics["accuracy"])
    assert "parameters/text_summary" in board.Tags()["tensors"]

    client = MlflowClient(tracking_uri=str(store))
    experiment = client.get_experiment_by_name("toy-classification")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "run"
    assert run.data.params["lr"] == "0.01" and run.data.params["epochs"] == "2"
    assert run.data.tags["trainlab.task"] == "toy-classification"
    assert run.data.tags["trainlab.status"] == "completed"
    assert run.data.tags["trainlab.run_dir"] == str(run_dir.resolve())
    history = client.get_metric_history(run.info.run_id, "train/loss")
    assert sorted((m.step, round(m.value, 5)) for m in history) == [(t["step"], round(t["loss"], 5)) for t in trains]
    accuracy = client.get_metric_history(run.info.run_id, "val/accuracy")
    assert sorted(m.step for m in accuracy) == [e["step"] for e in evals]
    assert [m.value for m in sorted(client.get_metric_history(run.info.run_id, "epoch"), key=lambda m: m.step)][-1] == 2
    artifacts = {f.path for f in client.list_artifacts(run.info.run_id)}
    assert {"run.json", "eval.json", "model"} <= artifacts
    stored = {f.path.removeprefix("model/") for f in client.list_artifacts(run.info.run_id, "model")}
    assert stored == {p.name for p in (run_dir / "model").iterdir()}


def test_an_evaluation_that_measured_no_loss_logs_its_metrics_and_no_loss():
    measured = dict(logged_values(EvalResult(step=4, split="val", loss=0.5, metrics={"map": 0.25})))
    assert measured == {"val/loss": 0.5, "val/map": 0.25}
    unmeasured = dict(logged_values(EvalResult(step=4, split="val", loss=None, metrics={"map": 0.25})))
    assert unmeasured == {"val/map": 0.25}  # object detection: no val/loss of 0


def test_a_missing_extra_stops_the_run_before_it_begins(toy_plugin, toy_csv, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if the extra were not installed
    with pytest.raises(UsageError) as caught:
        run_toy_classification(toy_csv, tmp_path, report_to="mlflow")
    assert str(caught.value) == "report_to=mlflow needs the mlflow extra, which is not installed: pip install 'trainlab[mlflow]'"
    assert not (tmp_path / "run").exists()
    with pytest.raises(UsageError, match="'wandb' is not one of none, tensorboard, mlflow"):
        run_toy_classification(toy_csv, tmp_path, report_to="tensorboard,wandb")


def test_a_tracking_server_is_refused_offline(cli, tmp_path):
    data = write_toy_csv(tmp_path / "toy.csv", rows=30)
    result = cli("train", "toy-classification", "--data", data, "--out", tmp_path / "run", "--set", "report_to=mlflow", "--json",
                 extra_path=[FIXTURE_PLUGINS], env={"MLFLOW_TRACKING_URI": "https://mlflow.example.org"})  # fmt: skip
    error = one_line_error(result)
    assert error.startswith("MLFLOW_TRACKING_URI=https://mlflow.example.org: an MLflow tracking server is a network connection")
    assert not (tmp_path / "run").exists()


def test_the_mlflow_store_is_local(tmp_home, tmp_path):
    assert mlflow_store({}) == (f"sqlite:///{tmp_home / 'mlruns' / 'mlflow.db'}", tmp_home / "mlruns" / "artifacts")
    database = tmp_path / "lab" / "mlflow.db"
    assert mlflow_store({"MLFLOW_TRACKING_URI": f"sqlite:///{database}"}) == (f"sqlite:///{database}", database.parent / "artifacts")
    assert mlflow_store({"MLFLOW_TRACKING_URI": str(tmp_path)}) == (tmp_path.as_uri(), None)
    for remote in ("http://localhost:5000", "databricks", "postgresql://db/mlflow"):
        with pytest.raises(UsageError, match="^MLFLOW_TRACKING_URI="):
            mlflow_store({"MLFLOW_TRACKING_URI": remote})

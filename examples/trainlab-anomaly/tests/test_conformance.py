"""TrainLab's plugin kit on trainlab-anomaly, and what the task is for: anomalies score above normal rows."""

import pytest
from trainlab.testing import PluginConformance

from trainlab_anomaly.tiny_data import make_rows


class TestConformance(PluginConformance):
    plugin = "anomaly"
    run_params = {"epochs": 4, "batch_size": 16, "hidden": 8}

    def make_tiny_data(self, task_id, folder):
        return make_rows(folder / "rows.csv", rows=96)

    def predict_inputs(self, task_id, data):
        return ["0.5,-1.0,-0.5,1.5", "3,-3,3,3"]


@pytest.fixture
def trainlab_plugin():  # the plugin under test, for the fixtures outside the conformance class
    return "anomaly"


def test_anomalies_score_above_normal_rows(trainlab_engine, tmp_path):
    data = make_rows(tmp_path / "rows.csv", rows=400, seed=3)
    outcome = trainlab_engine.train("tabular-anomaly", data, epochs=30, seed=0)
    assert outcome.status == "completed"
    assert outcome.metrics["roc_auc"] > 0.9, outcome.metrics
    normal, odd = trainlab_engine.predict(outcome.run_dir, ["0.5,-1.0,-0.5,1.5", "3,-3,3,3"])
    assert odd.prediction.score > normal.prediction.score and odd.prediction.anomalous

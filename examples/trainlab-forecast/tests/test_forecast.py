"""TrainLab's plugin kit on trainlab-forecast, what the task is for, and its results view."""

import json
from pathlib import Path

import pytest
from trainlab.testing import PluginConformance

from trainlab_forecast.tiny_data import make_series


class TestConformance(PluginConformance):
    plugin = "forecast"
    run_params = {"epochs": 3, "batch_size": 16, "hidden": 8, "horizon": 2}

    def make_tiny_data(self, task_id, folder):
        return make_series(folder / "series.csv", names=("a", "b"), length=40)

    def predict_inputs(self, task_id, data):
        return ["1,2,3,4,5,6,7,8", "8,7,6,5,4,3,2,1"]


@pytest.fixture
def trainlab_plugin():  # the plugin under test, for the fixtures outside the conformance class
    return "forecast"


def test_the_network_beats_repeating_the_last_value_and_reports_its_details(trainlab_engine, tmp_path):
    data = make_series(tmp_path / "series.csv", length=100, seed=1)
    outcome = trainlab_engine.train("series-forecast", data, epochs=30, seed=0)
    assert outcome.status == "completed"
    assert outcome.metrics["mae"] < 0.7 * outcome.metrics["naive_mae"], outcome.metrics
    report = json.loads((Path(outcome.run_dir) / "eval.json").read_text(encoding="utf-8"))
    details = {d["name"]: d for d in report["details"]}
    assert [r["series"] for r in details["per_series"]["rows"]] == ["north", "south", "east"]
    worst = details["worst_windows"]
    assert worst["view"] == "forecast-windows" and len(worst["rows"][0]["input"].split(",")) == 8
    (answer,) = trainlab_engine.predict(outcome.run_dir, [worst["rows"][0]["input"]])
    assert len(answer.prediction.values) == 4 and answer.prediction.summary().startswith("next: ")
    columns = type(answer.prediction).csv_columns(3, [], params={"horizon": 4}, predictions=[answer.prediction])
    assert columns == ["step_1", "step_2", "step_3", "step_4"] and len(answer.prediction.csv_row(3, [])) == 4


def test_the_view_draws_each_worst_window(qtbot):
    pytest.importorskip("pytestqt")
    from trainlab import Column, ExampleRows, Line

    from trainlab_forecast.qtview import ForecastWindowsView

    rows = [{"series": name, "start": start, "mae": mae,
             "forecast": [Line((1.0, 2.0), (-1, 0), "given"), Line((3.0,), (1,), "true"), Line((2.5,), (1,), "forecast", "dashed")]}
            for name, start, mae in (("north", 3, 0.2), ("south", 7, 0.9))]
    detail = ExampleRows("worst_windows", columns=(Column("series"), Column("start", kind="number"), Column("forecast", kind="series"),
                                                   Column("mae", kind="number")), rows=rows, worst="mae")
    view = ForecastWindowsView()
    qtbot.addWidget(view)
    view.show_detail(detail, "")
    view.show()
    assert view.captions == ["south from 7 \u00b7 MAE 0.9", "north from 3 \u00b7 MAE 0.2"]  # the worst first
    assert len(view.plots) == 2 and view.plots[0].grab().toImage().pixelColor(0, 0).isValid()

"""The command line in a plugin family's own words: toy-forecast (tests/fixtures/forecast) through the real CLI.

`trainlab runs` lists each run's declared metrics, the monitor's best first,
named and in their display and unit (never a bare number in a "best"
column), sorts by any of them best first and filters on them; `predict`
writes a column per forecast step (the run's horizon), names each row of a
file by the file, its number and its series (not the expanded numbers), does
not warn that a file of rows "is predicted as the text", and writes JSON
lines for a .jsonl name.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from helpers import FORECAST_PLUGIN, one_json_line, run_trainlab, train_toy_forecast


@pytest.fixture(scope="module")
def forecast_home(tmp_path_factory):
    """Two real toy-forecast runs in one home: a good learning rate and a poor one."""
    root = tmp_path_factory.mktemp("forecast-cli")
    good = train_toy_forecast(root, "good", epochs="2", lr="0.05")
    poor = train_toy_forecast(root, "poor", epochs="2", lr="0.0001")
    return root / "home", good, poor


def trainlab(home: Path, *args):
    return run_trainlab(*args, extra_path=[FORECAST_PLUGIN], env={"TRAINLAB_HOME": str(home), "OMP_NUM_THREADS": "1"})


def test_runs_shows_every_declared_metric_sorts_and_filters_by_them(forecast_home):
    home, good, poor = forecast_home
    result = trainlab(home, "runs", "--sort", "mae", "--json")
    assert result.returncode == 0, result.stderr
    rows = one_json_line(result)["runs"]
    assert [r["run_dir"] for r in rows] == [good, poor]  # the lowest MAE first: MAE is lower-is-better
    for row in rows:
        metrics = row["metrics"]
        assert set(metrics) == {"mae", "smape", "naive_mae"} and row["family"] == "forecasting"
        assert row["best"] == f"mae {metrics['mae']:.4g} kWh"  # the monitor, named, in its unit
        assert row["metrics_text"]["smape"] == f"{metrics['smape']:.1%}"
        line = next(line for line in result.stderr.splitlines() if line.startswith(row["id"]))
        assert line.index(f"mae {metrics['mae']:.4g} kWh") < line.index(f"smape {metrics['smape']:.1%}")
        assert f"naive_mae {metrics['naive_mae']:.4g} kWh" in line

    middle = (rows[0]["metrics"]["mae"] + rows[1]["metrics"]["mae"]) / 2
    filtered = trainlab(home, "runs", "--where", f"mae<{middle}", "--where", "smape<=100%", "--json")
    assert filtered.returncode == 0, filtered.stderr
    assert [r["run_dir"] for r in one_json_line(filtered)["runs"]] == [good]


def test_tasks_leaves_out_class_options_and_says_units_and_the_monitorable(forecast_home):
    home, _, _ = forecast_home
    result = trainlab(home, "tasks", "-v", "--json")
    assert result.returncode == 0, result.stderr
    tasks = {t["id"]: t for t in one_json_line(result)["tasks"]}
    names = {p["name"] for p in tasks["toy-forecast"]["parameters"]}
    assert "class_weighting" not in names and "monitor" in names
    assert "class_weighting" in {p["name"] for p in tasks["image-classification"]["parameters"]}
    monitor = next(p for p in tasks["toy-forecast"]["parameters"] if p["name"] == "monitor")
    assert monitor["choices"] == ["mae", "smape", "loss"]  # a naive baseline's error is never the monitor
    assert "metrics mae [kWh] (monitor) (lower is better)" in result.stderr and "naive_mae [kWh] (lower is better) (not monitorable)" in result.stderr


def test_predict_writes_a_column_per_step_and_names_what_was_given(forecast_home, tmp_path):
    home, good, _ = forecast_home
    holdout = tmp_path / "holdout.csv"
    holdout.write_text("series,t-3,t-2,t-1,t\nnorth,10,11,12,12.5\nsouth,13,14,13,12\n", encoding="utf-8")
    table = tmp_path / "forecast.csv"
    result = trainlab(home, "predict", good, holdout, "1,2,3,4", "--out", table)
    assert result.returncode == 0, result.stderr
    assert "predicted as the text" not in result.stderr and "warning" not in result.stderr  # expanded before the kind check
    rows = list(csv.reader(table.open(encoding="utf-8", newline="")))
    assert rows[0] == ["input", "step_1", "step_2", "step_3", "error"]  # horizon 3: three columns
    assert [r[0] for r in rows[1:]] == [f"{holdout} row 1 (north)", f"{holdout} row 2 (south)", "1,2,3,4"]
    assert all(len(r) == 5 and r[4] == "" for r in rows[1:]) and float(rows[1][3])

    lines = tmp_path / "forecast.jsonl"
    result = trainlab(home, "predict", good, holdout, "--out", lines, "--json")
    assert result.returncode == 0, result.stderr
    written = [json.loads(line) for line in lines.read_text(encoding="utf-8").splitlines()]
    assert written == one_json_line(result)["predictions"]
    assert written[1]["input"] == f"{holdout} row 2 (south)" and len(written[1]["prediction"]["values"]) == 3


def test_an_out_file_of_no_known_format_is_refused_by_name():
    from trainlab.api.errors import UsageError
    from trainlab.cli.reporting import predictions_format

    assert predictions_format(Path("a.CSV")) == "csv" and predictions_format(Path("b.jsonl")) == "jsonl"
    with pytest.raises(UsageError, match=r"--out c\.txt: .*\.csv or \.jsonl"):
        predictions_format(Path("c.txt"))

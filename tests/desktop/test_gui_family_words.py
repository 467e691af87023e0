"""The real window in a plugin family's own words: toy-forecast (tests/fixtures/forecast) beside the toy classifier.

The train page counts the data in the task's nouns (series, windows; no
"class") and offers only the options the family uses (no class weighting, no
naive baseline as the monitor); the Runs page has a column per declared
metric, in its display and unit, sorts best first and filters by them; the
curves plot each family's own metrics, a row of plots per family when runs
of two families are compared.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402

from helpers import FORECAST_PLUGIN, train_toy, train_toy_forecast, write_series_csv  # noqa: E402


@pytest.fixture
def forecast_plugin(monkeypatch):
    """toy-forecast discoverable in this process and its children (before the window starts)."""
    monkeypatch.syspath_prepend(str(FORECAST_PLUGIN))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FORECAST_PLUGIN), os.environ.get("PYTHONPATH")])))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Two forecasting runs (a good and a poor learning rate) and a classification run, trained once."""
    root = tmp_path_factory.mktemp("family-words")
    good = train_toy_forecast(root / "forecast", "good", epochs="2", lr="0.05")
    poor = train_toy_forecast(root / "forecast", "poor", epochs="2", lr="0.0001")
    classifier = train_toy(root / "classification", "toy-classification", epochs="2")
    return [Path(good), Path(poor), Path(classifier)]


@pytest.fixture
def runs(trained, tmp_home):
    """Copies of the trained runs in this test's home and index."""
    from trainlab.runfolder.index import RunStore

    store, copies = RunStore(), []
    for index, run in enumerate(trained):
        copy = tmp_home / "runs" / f"{index}-{run.name}"
        shutil.copytree(run, copy)
        store.record(json.loads((copy / "run.json").read_text()), copy)
        copies.append(str(copy))
    return copies


def test_the_train_page_counts_in_the_familys_nouns_and_offers_only_its_options(qtbot, forecast_plugin, window, tmp_path):
    data = write_series_csv(tmp_path / "series.csv")
    assert window.select_task("toy-forecast")
    form = window.params_form
    with pytest.raises(KeyError):
        form.field_editor("class_weighting")  # no classes to weight
    monitor = form.field_editor("monitor")
    assert [monitor.itemData(i) for i in range(monitor.count())] == ["mae", "smape", "loss"]  # not the naive baseline
    titles = " ".join(window.train_page.plots.metrics.titles())  # the empty plots speak the chosen task too
    assert "MAE" in titles and "Accuracy" not in titles, titles

    window.data_panel.set_path(str(data))
    qtbot.waitUntil(lambda: not window.data_panel.checking, timeout=60_000)
    status = window.data_panel.status.text()
    assert status.startswith("Ready to train: 2 series") and "Train: 46 windows" in status and "class" not in status.lower()
    table = window.data_panel.summary_table
    assert table.horizontalHeaderItem(0).text() == "Series"
    assert [table.item(r, 0).text() for r in range(table.rowCount())] == ["north", "south"]

    assert window.select_task("toy-classification")  # a task with classes: the option is back
    assert window.params_form.field_editor("class_weighting") is not None
    assert "Accuracy" in " ".join(window.train_page.plots.metrics.titles())


def test_the_windows_log_writes_a_metric_as_the_command_line_does(forecast_plugin):
    from types import SimpleNamespace

    from trainlab.pluginhost.host import registry
    from trainlab_desktop.run.session_view import describe_eval

    declared = registry().tasks["toy-forecast"].spec.metric_specs()
    event = SimpleNamespace(epoch=2, split="val", loss=0.5, best=True, metrics={"mae": 2.106, "smape": 0.02772, "naive_mae": 1.126})
    assert describe_eval(event, declared) == "epoch 2 val: loss 0.5, mae 2.106 kWh, smape 2.8%, naive_mae 1.126 kWh (best so far)"


def test_the_runs_page_and_its_curves_speak_each_family(qtbot, forecast_plugin, window, runs):
    good, poor, classifier = runs
    window.show_page("history")
    history = window.history
    history.refresh()
    model = history.model
    mae, accuracy = model.column_of("mae"), model.column_of("accuracy")
    assert mae > 0 and accuracy > 0 and model.headerData(mae, Qt.Orientation.Horizontal) == "MAE"

    def row_of(run_dir):
        return next(r for r in range(history.proxy.rowCount()) if history.proxy.index(r, 0).data(Qt.ItemDataRole.UserRole + 1)["run_dir"] == run_dir)

    def cell(run_dir, column):
        return history.proxy.index(row_of(run_dir), column).data()

    value = json.loads((Path(good) / "run.json").read_text())["best"]["value"]
    assert cell(good, mae) == f"{value:.4g} kWh"
    assert cell(good, model.column_of("best")) == f"MAE {value:.4g} kWh"  # named as its column is, not a bare number
    assert cell(classifier, model.column_of("best")).startswith("Accuracy ") and cell(classifier, mae) == ""
    best_tip = history.proxy.index(row_of(good), model.column_of("best")).data(Qt.ItemDataRole.ToolTipRole)
    assert best_tip == "Best validation MAE"
    assert cell(good, accuracy) == ""

    history.sort_by_metric("mae")
    assert [row_of(good), row_of(poor), row_of(classifier)] == [0, 1, 2]  # the best first, a run without it last
    poor_mae = json.loads((Path(poor) / "run.json").read_text())["best"]["value"]
    qtbot.keyClicks(history.filter_edit, f"mae<{(value + poor_mae) / 2:.6g}")
    assert history.proxy.rowCount() == 1 and history.selected_run_dirs() == [] and row_of(good) == 0
    history.filter_edit.clear()
    assert history.proxy.rowCount() == 3

    history.table.selectRow(row_of(good))
    titles = history.curves.metric_plot_titles()
    assert titles == ["Validation MAE \u00b7 Naive MAE (kWh)", "Validation sMAPE"] and not any("ccuracy" in t for t in titles)
    counts = history.curves.point_counts()[good]
    assert counts["mae"] == counts["smape"] == counts["naive_mae"] == 2  # an evaluation per epoch

    history.table.selectAll()
    titles = history.curves.metric_plot_titles()
    by_family = {}
    for title in titles:
        family, _, shown = title.partition(": ")
        by_family.setdefault(family, []).append(shown)
    assert by_family == {
        "forecasting": ["Validation MAE \u00b7 Naive MAE (kWh)", "Validation sMAPE"],
        "classification": ["Validation Accuracy \u00b7 Macro F1"],
    }
    counts = history.curves.point_counts()
    assert counts[classifier]["accuracy"] == 2 and "mae" not in counts[classifier] and counts[poor]["mae"] == 2

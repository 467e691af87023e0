"""The live plots draw every metric the run's task declares, the monitored one marked at its best epoch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from helpers import train_toy, write_toy_regression_csv  # noqa: E402


@pytest.fixture(scope="module")
def regression_run(tmp_path_factory):
    return train_toy(tmp_path_factory.mktemp("livereg"), "toy-regression", epochs="8")


@pytest.fixture
def plots(qtbot):
    from trainlab_desktop.plots.live_plots import LivePlots

    widget = LivePlots()
    qtbot.addWidget(widget)
    widget.resize(1100, 650)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def evals(run) -> list[dict]:
    lines = (Path(run) / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "eval" and e["split"] == "val"]


def open_run(plots, run, task=""):
    from trainlab.viewmodel.curves import RunCurves

    plots.reset(RunCurves.from_metrics(Path(run) / "metrics.jsonl"))
    plots.show_run_metrics(str(run), task)


def test_a_regression_run_draws_r2_apart_from_its_errors_with_the_best_epoch_on_r2(qtbot, plots, regression_run):
    open_run(plots, regression_run)
    events = evals(regression_run)
    assert plots.metric_points() == {"r2": len(events), "mae": len(events), "rmse": len(events)}
    last = events[-1]
    best_r2 = [e for e in events if e["best"]][-1]["r2"]
    # bounded R² on one plot, the errors in the target's units on another; titles in each metric's display,
    # the last epoch's value said to be the last, the best one beside the star
    assert plots.metrics.titles() == [
        f"R² last {last['r2']:.3f} · ★ best {best_r2:.3f}",
        f"MAE last {last['mae']:.4g} · RMSE last {last['rmse']:.4g}",
    ]
    assert "<b>" in plots.metrics.plots[0].titleLabel.text  # the monitored metric
    best = [e for e in events if e["best"]][-1]
    x, y = plots.metrics.best.getData()
    assert (list(x), list(y)) == ([best["epoch"]], [pytest.approx(best["r2"])])
    xs, ys = plots.metrics.curves["mae"].getData()
    assert list(xs) == [e["epoch"] for e in events] and list(ys) == pytest.approx([e["mae"] for e in events])


def test_a_plugins_metrics_draw_with_their_titles_and_displays(qtbot, plots, tmp_path):
    from trainlab.api.events import EvalResult
    from trainlab.runfolder.index import MetricsWriter

    run = tmp_path / "run"
    run.mkdir()
    declared = [
        {"name": "ndcg", "title": "NDCG", "higher_is_better": True, "display": "percent"},
        {"name": "latency_ms", "title": "Latency", "higher_is_better": False, "display": ".1f"},
    ]
    (run / "run.json").write_text(json.dumps({"id": "r", "task": "a-ranker", "status": "completed", "family": "ranking",
                                              "declared_metrics": declared, "parameters": {"monitor": "latency_ms"}}))
    writer = MetricsWriter(run / "metrics.jsonl")
    for epoch, ndcg, latency, best in ((1, 0.5, 9.0, True), (2, 0.6, 7.25, True), (3, 0.7, 8.0, False)):
        writer.write(EvalResult(step=epoch, epoch=epoch, loss=1.0 / epoch, metrics={"ndcg": ndcg, "latency_ms": latency},
                                best=best, monitor="latency_ms"))
    writer.close()
    open_run(plots, run)
    assert plots.metrics.titles() == ["NDCG last 70.0%", "Latency last 8.0 · ★ best 7.2"]  # 7.25 in its ".1f"
    x, y = plots.metrics.best.getData()
    assert (list(x), list(y)) == ([2], [7.25])  # the best epoch of the lower-is-better monitor
    assert plots.best_loss.getData()[0] is None or len(plots.best_loss.getData()[0]) == 0


def test_monitoring_the_loss_marks_the_validation_loss(qtbot, plots, regression_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(regression_run, run)
    record = json.loads((run / "run.json").read_text())
    record["parameters"]["monitor"] = "loss"
    (run / "run.json").write_text(json.dumps(record))
    open_run(plots, run)
    assert plots.metrics.best is None and all("★" not in t for t in plots.metrics.titles())
    x, _ = plots.best_loss.getData()
    assert len(x) == 1


def test_a_run_in_the_window_draws_its_tasks_metrics_live(qtbot, window, tmp_path):
    data = write_toy_regression_csv(tmp_path / "reg.csv")
    assert window.select_task("toy-regression")
    window.data_panel.set_path(str(data))
    qtbot.waitUntil(lambda: not window.data_panel.checking, timeout=60_000)
    assert window.params_form.set_values({"epochs": "3"}) == []
    with qtbot.waitSignal(window.runFinished, timeout=120_000) as finished:
        window.controls.start_action.trigger()
    assert finished.args[0].status == "completed"
    qtbot.waitUntil(lambda: window.plots.metric_points().get("r2") == 3, timeout=10_000)
    assert set(window.plots.metric_points()) == {"r2", "mae", "rmse"}
    assert window.plots.metrics.titles()[0].startswith("R² ")


@pytest.mark.parametrize("height", [420, 650])
def test_the_best_star_at_a_perfect_score_is_drawn_whole(qtbot, plots, tmp_path, height):
    from PySide6.QtCore import QPointF

    from trainlab_desktop.plots.metric_plots import STAR_SIZE
    from trainlab.api.events import EvalResult
    from trainlab.runfolder.index import MetricsWriter

    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"id": "r", "task": "image-classification", "status": "completed",
                                              "family": "classification", "parameters": {"monitor": "accuracy"}}))
    writer = MetricsWriter(run / "metrics.jsonl")
    for epoch, accuracy in ((1, 0.6), (2, 0.9), (3, 1.0)):
        writer.write(EvalResult(step=epoch, epoch=epoch, loss=1.0 / epoch, metrics={"accuracy": accuracy, "macro_f1": accuracy},
                                best=True, monitor="accuracy"))
    writer.close()
    plots.resize(1100, height)
    open_run(plots, run)
    plots.grab()
    x, y = plots.metrics.best.getData()
    assert (list(x), list(y)) == ([3], [1.0])
    view = plots.accuracy_plot.getViewBox()
    star = view.mapViewToScene(QPointF(3, 1.0))
    inside = view.sceneBoundingRect().adjusted(STAR_SIZE / 2, STAR_SIZE / 2, -STAR_SIZE / 2, -STAR_SIZE / 2)
    assert inside.contains(star), f"the star at {star} is cut by the plot's edge {view.sceneBoundingRect()}"


def test_opening_a_run_of_the_same_declarations_again_keeps_the_plots_and_shows_only_its_data(qtbot, plots, regression_run, tmp_path):
    # Rebuilding the plots costs the GUI thread ~40 ms (pyqtgraph PlotItems): the
    # largest stall of a run's start in bench/gui_latency.py before it was skipped.
    from trainlab.viewmodel.curves import RunCurves

    open_run(plots, regression_run)
    built = list(plots.metrics.plots)
    empty = tmp_path / "metrics.jsonl"
    empty.write_text("", encoding="utf-8")
    plots.reset(RunCurves.from_metrics(empty))
    plots.show_run_metrics(str(regression_run), "")  # the same task's declarations, no evaluations yet
    assert plots.metrics.plots == built  # the same PlotItem objects
    assert plots.metric_points() == {"r2": 0, "mae": 0, "rmse": 0}
    assert plots.metrics.best.getData()[0] is None or len(plots.metrics.best.getData()[0]) == 0
    # other declarations (the classification family's, before any run) do rebuild them
    plots.show_metrics((), "")
    assert plots.metrics.plots != built and [m.name for m in plots.metrics.shown] == ["accuracy", "macro_f1"]


def test_a_run_of_the_classification_family_starts_on_the_plots_already_built(qtbot, plots, tmp_path):
    # What run.json records of a metric (no help text) must not count as other declarations.
    from trainlab.viewmodel.curves import RunCurves

    run = train_toy(tmp_path, "toy-classification", epochs="1")
    built = list(plots.metrics.plots)  # the classification family's, before any run
    open_run(plots, run)
    assert plots.metrics.plots == built
    assert set(plots.metric_points()) == {"accuracy", "macro_f1"}


def test_after_a_run_the_title_tells_the_last_epoch_from_the_best(qtbot, plots, tmp_path):
    from trainlab.api.events import EvalResult
    from trainlab.runfolder.index import MetricsWriter

    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"id": "r", "task": "image-classification", "status": "completed",
                                              "family": "classification", "parameters": {"monitor": "accuracy"}}))
    writer = MetricsWriter(run / "metrics.jsonl")
    for epoch, accuracy, best in ((1, 0.6, True), (2, 0.9889, True), (3, 0.978, False)):
        writer.write(EvalResult(step=epoch, epoch=epoch, loss=1.0 / epoch, metrics={"accuracy": accuracy, "macro_f1": accuracy},
                                best=best, monitor="accuracy"))
    writer.close()
    open_run(plots, run)
    title = plots.metrics.titles()[0]
    # the last epoch's 97.8% beside the best's 98.89%, as the "Finished: accuracy 98.89%" line says it
    assert title.startswith("Accuracy last 97.8%") and title.endswith("★ best 98.89%"), title

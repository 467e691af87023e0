"""The results view by task family: regression, multi-label and a plugin's own family, from real runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QColor, QImage  # noqa: E402

from helpers import FIXTURE_PLUGINS, train_toy  # noqa: E402


@pytest.fixture(scope="module")
def regression_run(tmp_path_factory):
    return train_toy(tmp_path_factory.mktemp("reg"), "toy-regression", epochs="12")


@pytest.fixture(scope="module")
def multilabel_run(tmp_path_factory):
    return train_toy(tmp_path_factory.mktemp("ml"), "toy-multilabel", epochs="6")


@pytest.fixture
def results(qtbot, monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURE_PLUGINS))  # the toy tasks are installed, as the runs' plugin was
    from trainlab_desktop.results.page import ResultsView

    view = ResultsView()
    qtbot.addWidget(view)
    view.resize(1200, 760)
    view.show()
    qtbot.waitExposed(view)
    return view


def eval_json(run) -> dict:
    return json.loads((Path(run) / "eval.json").read_text(encoding="utf-8"))


def table_column(table, column):
    return [table.item(r, column).text() for r in range(table.rowCount())]


def test_a_regression_run_shows_predicted_against_true_residuals_and_worst_examples(qtbot, results, regression_run):
    report = eval_json(regression_run)
    with qtbot.waitSignal(results.loaded):
        assert results.load_run(regression_run)
    page = results.page
    assert results.family == "regression" and page.objectName() == "regressionResults"
    table = results.metrics_table
    assert table.value("R²") == f"{report['r2']:.3f}" and table.value("MAE") == f"{report['mae']:.4g}"
    assert table.value("Examples") == str(report["samples"])
    assert table.item(0, 0).text() == "R²" and table.item(0, 0).font().bold()  # the monitored metric

    # every kept (true, predicted) pair is a point, and y = x runs across them
    xs, ys = page.points.getData()
    assert len(xs) == len(report["scatter"]) and (xs[0], ys[0]) == tuple(report["scatter"][0])
    line_x, line_y = page.identity.getData()
    assert list(line_x) == list(line_y) and line_x[0] <= min(xs) and line_x[-1] >= max(xs)
    assert page.bar_counts() == report["residual_histogram"]["counts"]

    worst = page.worst_table
    assert worst.rowCount() == len(report["worst_examples"])
    first = report["worst_examples"][0]
    assert worst.item(0, 0).text() == first["example"]
    errors = [abs(e["error"]) for e in report["worst_examples"]]
    assert errors == sorted(errors, reverse=True) and worst.item(0, 3).text().lstrip("+") == f"{first['error']:.4g}"
    # choosing an example marks its point in the scatter
    worst.selectRow(1)
    marked_x, marked_y = page.marked.getData()
    second = report["worst_examples"][1]
    assert list(marked_x) == pytest.approx([second["true"]]) and list(marked_y) == pytest.approx([second["predicted"]])


def test_a_multilabel_run_shows_per_label_scores_and_wrong_label_sets(qtbot, results, multilabel_run):
    report = eval_json(multilabel_run)
    results.load_run(multilabel_run)
    page = results.page
    assert results.family == "multilabel" and page.objectName() == "multilabelResults"
    assert results.metrics_table.value("Micro F1") == f"{report['micro_f1']:.3f}"
    assert results.metrics_table.value("With wrong labels") == str(len(report["misclassified"]))
    labels = page.label_table
    assert table_column(labels, 0) == report["label_names"]
    assert table_column(labels, 5) == [f"{t:.3f}" for t in report["thresholds"]]
    assert table_column(labels, 4) == [str(row["support"]) for row in report["per_label"]]

    examples = page.example_table
    wrong = report["misclassified"]
    assert wrong and examples.rowCount() == len(wrong)
    assert examples.item(0, 1).text() == (", ".join(wrong[0]["true"]) or "–")
    assert examples.item(0, 2).text() == (", ".join(wrong[0]["predicted"]) or "–")
    # a label's row keeps only the examples that label is wrong on
    label = next(n for n in report["label_names"] if any((n in e["true"]) != (n in e["predicted"]) for e in wrong))
    row = report["label_names"].index(label)
    rect = labels.visualItemRect(labels.item(row, 0))
    qtbot.mouseClick(labels.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(labels.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    expected = [e for e in wrong if (label in e["true"]) != (label in e["predicted"])]
    assert page.label_filter.currentData() == label
    assert examples.rowCount() == len(expected) > 0
    assert all(label in examples.item(r, 3).text() for r in range(examples.rowCount()))
    assert f"“{label}”" in page.examples_title.text()


def test_a_report_without_family_takes_the_runs_then_its_tasks_family(qtbot, results, regression_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(regression_run, run)
    report = eval_json(run)
    del report["family"]  # as a plugin's own accumulator might write it
    (run / "eval.json").write_text(json.dumps(report), encoding="utf-8")
    record = json.loads((run / "run.json").read_text(encoding="utf-8"))
    assert record["family"] == "regression"  # what the engine recorded of the run
    results.load_run(str(run))
    assert results.family == "regression" and results.page.objectName() == "regressionResults"

    # a run.json from before the engine recorded it: the installed task says regression
    del record["family"], record["declared_metrics"]
    (run / "run.json").write_text(json.dumps(record), encoding="utf-8")
    results.load_run(str(run))
    assert results.family == "regression" and results.page.objectName() == "regressionResults"
    assert results.metrics_table.item(0, 0).text() == "R²"


def _image(path: Path, shade: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    image = QImage(64, 48, QImage.Format.Format_RGB32)
    image.fill(QColor(shade, 90, 200 - shade))
    assert image.save(str(path))
    return str(path)


def test_regression_image_examples_show_thumbnails(qtbot, results, tmp_path):
    run = tmp_path / "run"
    worst = [
        {"key": i, "example": _image(run / "images" / f"{i}.png", 40 * i), "true": 10.0 + i, "predicted": 10.0 - i,
         "error": -2.0 * i}
        for i in (3, 2, 1)
    ]
    report = {"family": "regression", "samples": 3, "loss": 0.1, "r2": 0.5, "mae": 2.0, "rmse": 2.2,
              "metrics": {"mae": 2.0, "rmse": 2.2, "r2": 0.5}, "scatter": [[w["true"], w["predicted"]] for w in worst],
              "worst_examples": worst}
    (run / "eval.json").write_text(json.dumps(report), encoding="utf-8")
    (run / "run.json").write_text(json.dumps({"id": "x", "task": "not-installed-here", "status": "completed"}))
    results.load_run(str(run))
    page = results.page
    # the task is not installed here: its family's order, R² first
    assert [results.metrics_table.item(r, 0).text() for r in range(3)] == ["R²", "MAE", "RMSE"]
    assert page.worst_table.item(0, 0).text() == "3.png"
    qtbot.waitUntil(lambda: results.thumbnails_pending() == 0, timeout=5000)
    pixmap = page.worst_table.item(0, 0).icon().pixmap(48, 48)
    assert (pixmap.width(), pixmap.height()) == (48, 36)  # the image scaled to fit, not the square placeholder
    assert page.worst_table.item(0, 0).toolTip() == worst[0]["example"]


def test_a_plugins_own_family_shows_every_declared_metric_per_split_and_its_curves(qtbot, results, tmp_path):
    from trainlab.api.events import EvalResult
    from trainlab.runfolder.index import MetricsWriter

    run = tmp_path / "run"
    run.mkdir()
    values = [(1, 0.40, 0.30), (2, 0.55, 0.35), (3, 0.61, 0.42), (4, 0.58, 0.47)]  # epoch, ndcg, recall_at_10
    writer = MetricsWriter(run / "metrics.jsonl")
    best = -1.0
    for epoch, ndcg, recall in values:
        writer.write(EvalResult(step=10 * epoch, epoch=epoch, loss=1.0 / epoch, metrics={"ndcg": ndcg, "recall_at_10": recall},
                                best=ndcg > best, monitor="ndcg"))
        best = max(best, ndcg)
    writer.close()
    own = {"family": "ranking", "samples": 50, "loss": 0.33, "ndcg": 0.61, "recall_at_10": 0.42,
           "metrics": {"ndcg": 0.61, "recall_at_10": 0.42}}
    (run / "eval.json").write_text(json.dumps({**own, "test": {**own, "ndcg": 0.57}}), encoding="utf-8")
    # as the engine records a run's declarations: the plugin need not be installed to read it right
    declared = [{"name": "ndcg", "title": "NDCG", "higher_is_better": True, "display": "score"}]
    (run / "run.json").write_text(json.dumps({"id": "r", "task": "a-ranker", "status": "completed", "family": "ranking",
                                              "declared_metrics": declared, "parameters": {"monitor": "ndcg"}}))
    results.load_run(str(run))
    page = results.page
    assert results.family == "ranking" and page.objectName() == "metricsResults"
    splits = page.split_table
    assert [splits.horizontalHeaderItem(c).text() for c in range(splits.columnCount())] == ["Metric", "Validation", "Test"]
    assert table_column(splits, 0) == ["NDCG", "recall_at_10", "Loss"]  # its recorded title, else its key
    assert table_column(splits, 1)[:2] == ["0.610", "0.42"] and table_column(splits, 2)[0] == "0.570"
    assert splits.item(0, 0).font().bold()  # monitored
    assert set(page.curves) == {"ndcg", "recall_at_10", "loss"}
    xs, ys = page.curves["recall_at_10"].getData()
    assert list(xs) == [1, 2, 3, 4] and list(ys) == pytest.approx([0.30, 0.35, 0.42, 0.47])
    best_x, best_y = page.best_markers["ndcg"].getData()
    assert (list(best_x), list(best_y)) == ([3], [pytest.approx(0.61)])  # the best epoch, not the last
    assert not math.isnan(page.curves["loss"].getData()[1][0])

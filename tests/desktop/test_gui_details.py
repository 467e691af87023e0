"""A plugin family's typed details in the window: the results page and try-it, from a real forecasting run.

toy-forecast (tests/fixtures/forecast) is of a family no built-in covers; its
evaluation reports a per-series table, the worst windows as example rows, an
error-by-step series drawn by a widget it registers under ``trainlab.views``,
a matrix figure, and a count of windows that is not a metric.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QColor, QImage  # noqa: E402

from helpers import FORECAST_PLUGIN, train_toy_forecast  # noqa: E402


@pytest.fixture(scope="module")
def forecast_run(tmp_path_factory):
    return train_toy_forecast(tmp_path_factory.mktemp("forecast"), epochs="3")


@pytest.fixture
def installed(monkeypatch):
    """toy-forecast and its view installed, as they were for the run."""
    import trainlab.pluginhost.host as host
    from trainlab_desktop.results import custom_views

    monkeypatch.syspath_prepend(str(FORECAST_PLUGIN))
    monkeypatch.setattr(host, "_registry", None)
    custom_views.forget_views()
    yield
    custom_views.forget_views()


@pytest.fixture
def results(qtbot, installed):
    from trainlab_desktop.results.page import ResultsView

    view = ResultsView()
    qtbot.addWidget(view)
    view.resize(1200, 900)
    view.show()
    qtbot.waitExposed(view)
    return view


def eval_json(run) -> dict:
    return json.loads((Path(run) / "eval.json").read_text(encoding="utf-8"))


def detail(report: dict, name: str) -> dict:
    return next(d for d in report["details"] if d["name"] == name)


def test_a_forecasting_run_shows_its_metrics_and_every_detail(qtbot, results, forecast_run):
    report = eval_json(forecast_run)
    with qtbot.waitSignal(results.loaded):
        assert results.load_run(forecast_run)
    page = results.page
    assert results.family == "forecasting" and page.objectName() == "metricsResults"
    metrics = results.metrics_table
    titles = [metrics.item(r, 0).text() for r in range(metrics.rowCount())]
    assert titles[:3] == ["MAE", "sMAPE", "Naive MAE"]
    assert metrics.value("sMAPE") == f"{report['smape']:.2%}"
    assert not any("windows" in t.lower() for t in titles)  # a count is a detail, not a metric
    assert set(page.details.blocks) == {"per_series", "worst_windows", "error_by_step", "error_map", "other_numbers"}
    assert page.details.table("other_numbers").column_texts("name") == ["windows"]
    assert page.details.table("other_numbers").column_texts("value") == [str(report["windows"])]

    per_series = page.details.table("per_series")
    rows = detail(report, "per_series")["rows"]
    assert per_series.column_texts("series") == [r["series"] for r in rows] == ["north", "south"]
    assert per_series.column_texts("smape") == [f"{r['smape']:.2%}" for r in rows]
    assert per_series.column_texts("windows") == [str(int(r["windows"])) for r in rows]

    worst = page.details.table("worst_windows")
    shown = [float(t) for t in worst.column_texts("mae")]
    assert len(shown) == len(detail(report, "worst_windows")["rows"]) and shown == sorted(shown, reverse=True)
    assert worst.item(0, 2).data(Qt.ItemDataRole.DecorationRole) is not None  # the window's series, drawn small
    worst.sortItems(3, Qt.SortOrder.AscendingOrder)  # any column sorts
    assert [float(t) for t in worst.column_texts("mae")] == sorted(shown)
    block = page.details.blocks["worst_windows"]
    worst.selectRow(0)
    plot = block.preview.parts["forecast"]  # the chosen window in full: given, true and forecast lines
    assert block.preview.isVisible() and len(plot.plots[0].listDataItems()) == 3

    steps = page.details.blocks["error_by_step"]  # drawn by the plugin's own widget
    assert steps.custom is not None and steps.custom.objectName() == "toyForecastSteps"
    assert steps.custom.text().startswith("step 1: ")
    matrix = page.details.blocks["error_map"].figure.matrix
    assert matrix.rowCount() == 2 and matrix.verticalHeaderItem(0).text() == "north"


def test_try_it_forecasts_a_row_of_named_fields_and_a_random_validation_window(qtbot, installed, forecast_run):
    from trainlab_desktop.tryit.page import TryItPanel

    panel = TryItPanel()
    qtbot.addWidget(panel)
    panel.resize(800, 600)
    panel.show()
    panel.set_run(forecast_run)
    labels = [panel.row_entry._layout.labelForField(f).text() for f in panel.row_entry.fields]
    assert panel.kind == "row" and labels == ["t-3", "t-2", "t-1", "t"]
    for field, value in zip(panel.row_entry.fields, ("10", "11", "12", "13")):
        field.setText(value)
    with qtbot.waitSignal(panel.predicted, timeout=60_000):
        qtbot.keyClick(panel.row_entry.fields[3], Qt.Key.Key_Return)
    assert panel.current_input == "10,11,12,13"
    summary = panel.output.shown_summary()
    assert summary.startswith("next: ") and len(summary.split(",")) == 3  # horizon 3, not raw JSON
    assert len(panel.output.plot_items) == 2  # the given values and the forecast, on a plot

    assert panel.sample_button.isEnabled()
    with qtbot.waitSignal(panel.predicted, timeout=60_000):
        qtbot.mouseClick(panel.sample_button, Qt.MouseButton.LeftButton)
    worst = [r["input"] for r in detail(eval_json(forecast_run), "worst_windows")["rows"]]
    assert panel.current_input in worst and panel.row_entry.value() == panel.current_input
    assert panel.output.shown_summary().startswith("next: ")
    truth = panel.output.grid.itemAtPosition(0, 0).widget().text()
    assert truth.startswith("True: ") and len(truth.split(",")) == 3


def _image(path: Path) -> str:
    image = QImage(200, 100, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    assert image.save(str(path))
    return path.name  # relative to the run folder


def test_detections_and_generated_texts_draw_from_eval_json_alone(qtbot, results, tmp_path):
    """The shapes the detection and text-generation families report, with no plugin installed."""
    from trainlab import Box, BoxedImage, Column, ExampleRows, Figure, Line, Series, Table

    run = tmp_path / "run"
    run.mkdir()
    picture = _image(run / "street.png")
    detections = ExampleRows("worst_images", "Worst images", columns=(
        Column("image", "Image", "image_boxes"), Column("ap", "AP", "number", "percent")), worst="ap", higher_is_worse=False,
        rows=[{"image": BoxedImage(picture, (Box(10, 10, 90, 90, "car", role="true"), Box(110, 20, 190, 80, "car", 0.9))),
               "ap": 0.5}, {"image": BoxedImage(picture), "ap": 0.25}])
    answers = ExampleRows("answers", columns=(
        Column("prompt", "Prompt"), Column("expected", "Expected"), Column("generated", "Generated"),
        Column("score", "Score", "number", "score")), worst="score", higher_is_worse=False,
        rows=[("What is 2+2? " * 8, "Four, as two and two make four.", "Five, I think, though I would not bet on it.", 0.1)])
    per_class = Table("per_class_ap", "AP per class", columns=(Column("label"), Column("ap", "AP", "number", "percent")),
                      rows=[{"label": "car", "ap": 0.5}])
    pr = Series("pr_car", "Precision-recall: car", x_label="recall", y_label="precision",
                lines=(Line((1.0, 0.8, 0.5), (0.0, 0.5, 1.0), "car"), Line((1.0, 0.6, 0.2), (0.0, 0.5, 1.0), "person")))
    chart = Figure("chart", "A chart", image=picture, caption="drawn by the plugin")
    custom = Table("custom", "Needs a view", view="not-installed", columns=(Column("a"),), rows=[{"a": "x"}])
    own = {"family": "detection", "samples": 2, "loss": 0.5, "map": 0.375, "metrics": {"map": 0.375},
           "details": [d.to_json() for d in (detections, answers, per_class, pr, chart, custom)]}
    (run / "eval.json").write_text(json.dumps(own), encoding="utf-8")
    (run / "run.json").write_text(json.dumps({"id": "d", "task": "not-installed", "status": "completed"}))
    results.load_run(str(run))
    details = results.page.details
    assert list(details.blocks) == ["worst_images", "answers", "per_class_ap", "pr_car", "chart", "custom"]

    images = details.table("worst_images")
    assert images.column_texts("ap") == ["25.00%", "50.00%"]  # the worst (lowest AP) first
    qtbot.waitUntil(lambda: results.thumbnails_pending() == 0, timeout=5000)
    images.selectRow(1)
    view = details.blocks["worst_images"].preview.parts["image"]
    shown = view.pixmap().toImage()
    scale = shown.width() / 200
    assert shown.pixelColor(int(10 * scale), int(50 * scale)) == QColor("#1f9d55")  # the true box's edge
    predicted = shown.pixelColor(int(190 * scale), int(50 * scale))
    assert predicted.red() > 200 and predicted.blue() < 60  # the predicted box's edge, orange
    assert "true" in details.blocks["worst_images"].preview.findChild(type(results.title), "boxLegend").text()

    texts = details.table("answers")
    texts.selectRow(0)
    preview = details.blocks["answers"].preview.parts
    assert preview["prompt"].toPlainText().startswith("What is 2+2?") and "generated" not in preview  # short answers stay in the table
    assert texts.column_texts("generated") == ["Five, I think, though I would not bet on it."]
    assert len(details.blocks["pr_car"].series.items) == 2
    assert not details.blocks["chart"].figure.picture.pixmap().isNull()
    note = details.blocks["custom"].findChild(type(results.title), "viewProblem")
    assert "not-installed" in note.text() and details.table("custom").column_texts("a") == ["x"]


def test_a_built_in_familys_extra_details_show_under_its_page(qtbot, results, tmp_path):
    from trainlab import Column, Table

    run = tmp_path / "run"
    run.mkdir()
    extra = Table("by_source", "By source", columns=(Column("source"), Column("accuracy", "Accuracy", "number", "percent")),
                  rows=[{"source": "scanner", "accuracy": 0.9}])
    report = {"family": "classification", "samples": 4, "loss": 0.2, "accuracy": 0.75, "macro_f1": 0.7,
              "metrics": {"accuracy": 0.75, "macro_f1": 0.7}, "label_names": ["a", "b"],
              "confusion_matrix": [[2, 0], [1, 1]], "details": [extra.to_json()]}
    (run / "eval.json").write_text(json.dumps(report), encoding="utf-8")
    (run / "run.json").write_text(json.dumps({"id": "c", "task": "not-installed", "status": "completed"}))
    results.load_run(str(run))
    assert results.page.objectName() == results.classification.objectName()
    assert results.extra_details.isVisible() and list(results.extra_details.blocks) == ["by_source"]
    assert results.extra_details.table("by_source").column_texts("accuracy") == ["90.00%"]

    shutil.copy(run / "eval.json", tmp_path / "kept.json")
    del report["details"]
    (run / "eval.json").write_text(json.dumps(report), encoding="utf-8")
    results.load_run(str(run))
    assert not results.extra_details.isVisible()


def test_the_forecast_examples_own_view_draws_its_worst_windows_in_the_results_page(qtbot, results, tmp_path, monkeypatch):
    """examples/trainlab-forecast's widget, found through its trainlab.views entry point as pip would install it."""
    import tomllib

    from helpers import ROOT
    from trainlab import Line
    from trainlab_desktop.results import custom_views

    example = ROOT / "examples" / "trainlab-forecast"
    project = tomllib.loads((example / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = tmp_path / "site" / "trainlab_forecast-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: trainlab-forecast\nVersion: 0.1.0\n")
    groups = {group: project["entry-points"][group] for group in ("trainlab.plugins", "trainlab.views")}
    (info / "entry_points.txt").write_text("".join(f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) for g, eps in groups.items()))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.syspath_prepend(str(example))
    custom_views.forget_views()

    from trainlab_forecast import trainlab_tasks

    (spec,) = trainlab_tasks()
    worst = next(d for d in spec.details if d.name == "worst_windows")
    rows = [{"series": "north", "start": s, "mae": mae, "input": "1,2,3,4,5,6,7,8",
             "forecast": [Line((1.0, 2.0), (-1, 0), "given"), Line((3.0, 4.0), (1, 2), "true"), Line((2.0, 5.0), (1, 2), "forecast", "dashed")]}
            for s, mae in ((5, 0.5), (9, 1.5))]
    run = tmp_path / "run"
    run.mkdir()
    report = {"family": "forecasting", "samples": 2, "loss": 1.0, "mae": 1.0, "metrics": {"mae": 1.0},
              "details": [worst.filled(rows).to_json()]}
    (run / "eval.json").write_text(json.dumps(report), encoding="utf-8")
    (run / "run.json").write_text(json.dumps({"id": "f", "task": "series-forecast", "status": "completed"}))
    results.load_run(str(run))
    block = results.page.details.blocks["worst_windows"]
    assert block.custom is not None and block.custom.objectName() == "forecastWindows" and block.table is None
    assert block.custom.captions == ["north from 9 \u00b7 MAE 1.5", "north from 5 \u00b7 MAE 0.5"]


def test_try_it_offers_a_detection_runs_listed_images_as_random_validation_examples(qtbot, tmp_path, monkeypatch):
    import trainlab_desktop.tryit.page as tryit
    from trainlab import Box, BoxedImage, Column, ExampleRows, InputSpec, Metric, TaskSpec

    run = tmp_path / "run"
    (run / "model").mkdir(parents=True)
    picture = _image(run / "street.png")
    rows = ExampleRows("worst_images", columns=(Column("image", kind="image_boxes"), Column("ap", kind="number")),
                       rows=[{"image": BoxedImage(picture, (Box(1, 1, 5, 5, "car", role="true"),)), "ap": 0.1, "labels": "car"},
                             {"image": BoxedImage("missing.png"), "ap": 0.2}],
                       worst="ap", higher_is_worse=False, input_column="image", truth_column="labels")
    report = {"family": "detection", "samples": 2, "map": 0.1, "metrics": {"map": 0.1}, "details": [rows.to_json()]}
    (run / "eval.json").write_text(json.dumps(report), encoding="utf-8")
    (run / "run.json").write_text(json.dumps({"id": "d", "task": "a-detector", "status": "completed"}))
    spec = TaskSpec("a-detector", "Detector", "pkg.task:Task", family="detection", metrics=(Metric("map"),),
                    input=InputSpec(kind="image"))
    monkeypatch.setattr(tryit, "task_spec", lambda task: spec)
    panel = tryit.TryItPanel()
    qtbot.addWidget(panel)
    panel.set_run(str(run))
    assert panel.sample_button.isEnabled()
    assert panel._eval_examples() == [(str(run / "street.png"), "True: car")]  # relative to the run folder; the missing one left out


@pytest.mark.parametrize("hint", ["text", "values", "table", "image"])
def test_try_it_draws_each_display_hint_under_the_summary(qtbot, tmp_path, hint):
    from dataclasses import dataclass

    from PySide6.QtWidgets import QLabel
    from trainlab import Box, BoxedImage, Column, Prediction, Table, Values
    from trainlab_desktop.results.details import BoxedImageView, DetailTable
    from trainlab_desktop.tryit.outputs import PredictionView

    picture = tmp_path / "p.png"
    _image(picture)
    shown = {
        "text": "The capital of France is Paris.",
        "values": Values((("p50", 12.5), ("p90", 14.0)), unit="kWh"),
        "table": Table("classes", columns=(Column("label"), Column("p", kind="number", display="percent")), rows=[("cat", 0.9)]),
        "image": BoxedImage(str(picture), (Box(10, 10, 50, 50, "car", 0.8),)),
    }[hint]

    @dataclass(frozen=True)
    class Answer(Prediction):
        kind = "answer"

        def to_json(self):
            return {"kind": self.kind}

        def summary(self):
            return "a summary line"

        def display(self):
            return shown

    view = PredictionView()
    qtbot.addWidget(view)
    view.show_prediction(Answer(), {"kind": "answer"})
    assert view.shown_summary() == "a summary line"
    widget = view.hint_widget
    if hint == "text":
        assert isinstance(widget, QLabel) and widget.text() == shown
    elif hint == "values":
        numbers = [label.text() for label in widget.findChildren(QLabel, "predictionNumber")]
        assert numbers == ["12.5 kWh", "14 kWh"]
    elif hint == "table":
        assert isinstance(widget, DetailTable) and widget.column_texts("p") == ["90.00%"]
    else:
        assert isinstance(widget, BoxedImageView) and widget.boxes[0].label == "car" and not widget.pixmap().isNull()

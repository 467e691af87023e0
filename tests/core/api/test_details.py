"""Typed evaluation details (plugin API 2.1): declared, filled, written into eval.json and read back."""

from __future__ import annotations

import json
import math

import pytest

from trainlab import (
    Box,
    BoxedImage,
    Column,
    ExampleRows,
    Figure,
    InputSpec,
    Line,
    Metric,
    MetricAccumulator,
    Series,
    Table,
    TaskSpec,
)
from trainlab.runfolder.eval_report import EvalRecord
from trainlab.runfolder.records import RunFileError

EVERY_KIND = (
    Table("per_class_ap", "AP per class", columns=(Column("label"), Column("ap", "AP", "number", "percent")),
          rows=[{"label": "car", "ap": 0.5}, {"label": "person", "ap": None}]),
    ExampleRows("worst", "Worst", columns=(
        Column("prompt"), Column("score", kind="number", unit="ms"), Column("picture", kind="image"),
        Column("boxes", kind="image_boxes"), Column("curve", kind="series")),
        rows=[("a prompt", 2.0, "a.png", BoxedImage("b.png", (Box(1, 2, 3, 4, "car", role="true"), Box(1, 2, 3, 5, "car", 0.8))),
               [1.0, 2.0, float("nan")]),
              {"prompt": "another", "score": 7.0, "hidden_input": "1,2,3"}],
        worst="score", total=40, input_column="hidden_input", truth_column="prompt"),
    Series("pr", "Precision-recall", lines=(Line((1.0, 0.5), (0.0, 1.0), "car", "steps"), Line((0.2, 0.1))),
           x_label="recall", y_label="precision", unit="%"),
    Figure("confusion", matrix=((1, 2), (3, float("inf"))), row_labels=("a", "b"), column_labels=("a", "b"), caption="c"),
    Figure("chart", image="chart.png", view="my-chart"),
)


def test_every_kind_of_detail_goes_through_eval_json_and_back():
    report = {"family": "detection", "samples": 40, "loss": 0.5, "map": 0.5, "metrics": {"map": 0.5},
              "details": [d.to_json() for d in EVERY_KIND]}
    text = json.dumps(EvalRecord.from_json(report).to_json())  # JSON as written: no NaN or infinity
    assert "NaN" not in text and "Infinity" not in text
    again = EvalRecord.from_json(json.loads(text)).primary
    assert [d.to_json() for d in again.details] == [d.to_json() for d in EVERY_KIND]
    worst = again.details[1]
    assert isinstance(worst, ExampleRows) and [r["prompt"] for r in worst.worst_first()] == ["another", "a prompt"]
    assert worst.rows[0]["boxes"].true_boxes[0].label == "car" and worst.rows[0]["boxes"].predicted_boxes[0].score == 0.8
    assert math.isnan(worst.rows[0]["curve"].lines[0].y[2])
    assert worst.example_inputs() == [("1,2,3", "another")]
    assert math.isinf(again.details[3].matrix[1][1]) and again.details[4].view == "my-chart"
    assert again.metrics == {"map": 0.5} and again.other_numbers == {}


def test_a_detail_of_a_kind_this_version_does_not_know_is_kept_as_written():
    future = {"kind": "video", "name": "clips", "frames": [1, 2]}
    report = EvalRecord.from_json({"family": "x", "samples": 1, "metrics": {}, "details": [future]})
    assert report.to_json()["details"] == [future]


def test_earlier_eval_json_files_read_as_before_with_their_details_typed():
    classification = {"accuracy": 0.5, "samples": 2, "label_names": ["a", "b"], "confusion_matrix": [[1, 0], [1, 0]],
                      "per_class": {"a": {"precision": 0.5, "recall": 1.0, "f1": 0.67, "support": 1}},
                      "misclassified": [{"key": 1, "example": "a text", "true": "b", "predicted": "a", "confidence": 0.9}]}
    report = EvalRecord.from_json(classification).primary
    assert report.details == () and report.metrics == {"accuracy": 0.5}
    per_class, wrong = report.view_details()
    assert per_class.rows == ({"label": "a", "precision": 0.5, "recall": 1.0, "f1": 0.67, "support": 1.0},)
    assert wrong.example_inputs() == [("a text", "b")] and wrong.columns[0].kind == "text"

    regression = {"family": "regression", "samples": 3, "r2": 0.5, "metrics": {"r2": 0.5}, "scatter": [[1, 2], [2, 2]],
                  "residual_histogram": {"edges": [-1, 0, 1], "counts": [1, 2]},
                  "worst_examples": [{"key": 0, "example": "1,2", "true": 1.0, "predicted": 3.0, "error": 2.0}]}
    names = [d.name for d in EvalRecord.from_json(regression).primary.view_details()]
    assert names == ["worst_examples", "scatter", "residual_histogram"]

    # a plugin API 2.0 report whose own "details" key is no list of typed details: kept as it was
    own = {"family": "anomaly", "samples": 4, "roc_auc": 0.9, "metrics": {"roc_auc": 0.9}, "anomalies": 2,
           "details": {"note": "free-form"}}
    read = EvalRecord.from_json(own)
    assert read.primary.details == () and read.to_json()["details"] == {"note": "free-form"}
    assert read.primary.other_numbers == {"anomalies": 2.0}  # a count, shown as a detail, not a metric
    assert [d.name for d in read.primary.view_details()] == ["other_numbers"]
    top5 = {"family": "classification", "samples": 9, "accuracy": 0.5, "top5_accuracy": 0.9, "metrics": {"accuracy": 0.5}}
    assert EvalRecord.from_json(top5).primary.other_numbers == {}  # the classic families' numbers stay metrics


def test_a_damaged_detail_is_named():
    bad = {"family": "x", "samples": 1, "metrics": {}, "details": [{"kind": "table", "name": "t", "columns": ["n"],
                                                                    "rows": "not rows"}]}
    with pytest.raises(RunFileError, match=r"'details'\[0\]: detail 't'"):
        EvalRecord.from_json(bad, "eval.json")
    with pytest.raises(ValueError, match="column 'ap' holds numbers, not 'high'"):
        Table("t", columns=(Column("ap", kind="number"),), rows=[{"ap": "high"}])


def test_declarations_are_checked_at_discovery():
    spec = TaskSpec("fc-task", "Forecast", "pkg.task:Task", family="forecasting", metrics=(Metric("mae"),),
                    input=InputSpec(kind="text", columns=("a", "a")), details=(
                        Table("per_series"), ExampleRows("worst", columns=(Column("x", kind="movie"),), worst="y"),
                        Series("mae"), Series("per_series")))
    problems = "\n".join(spec.validate())
    for expected in ("input columns name a column twice", "table 'per_series': no columns", "kind 'movie' is not one of",
                     "worst 'y' is not one of its columns", "detail 'mae' has a metric's name",
                     "detail 'per_series' is declared twice"):
        assert expected in problems
    assert Column("ap", kind="number", display="%%").validate() and not Column("ap", kind="number", display=".1%").validate()
    assert "2 x values for 1 y values" in Series("pr", lines=(Line((1.0,), (0.0, 1.0)),)).validate()[0]
    assert "input columns are for row inputs" in "\n".join(InputSpec(kind="text", columns=("a",)).validate())
    assert TaskSpec("a-b", "x", "a:b", family="regression").detail_specs()[0].name == "worst_examples"


class _Task:
    spec = TaskSpec("fc-task", "Forecast", "pkg.task:Task", family="forecasting", metrics=(Metric("mae"),),
                    details=(Table("per_series", columns=(Column("series"), Column("mae", kind="number"))),
                             Series("by_step", x_label="step")))


def test_an_accumulator_fills_its_declared_details_by_name():
    accumulator = MetricAccumulator(_Task(), "val")
    report = accumulator.report({"mae": 1.0}, windows=3, details={
        "per_series": [{"series": "a", "mae": 1.0}], "by_step": [Line((1.0, 2.0))],
        "extra": Figure(image="x.png"),  # complete, named by its key
    })
    assert [d["name"] for d in report["details"]] == ["per_series", "by_step", "extra"]
    assert report["details"][1]["x_label"] == "step" and report["windows"] == 3
    with pytest.raises(ValueError, match="detail 'nope' is not declared"):
        accumulator.report({"mae": 1.0}, details={"nope": []})

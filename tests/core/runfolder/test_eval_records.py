"""eval.json of every task family: regression and multi-label details read, round trip, damage named."""

from __future__ import annotations

import copy
import json

import pytest

from trainlab.runfolder.eval_report import EvalRecord, LabelSetExample, RegressionExample
from trainlab.runfolder.records import RunFileError

REGRESSION = {
    "family": "regression",
    "split": "val",
    "samples": 4,
    "loss": 0.12,
    "mae": 2.5,
    "rmse": 3.0,
    "r2": 0.9,
    "metrics": {"r2": 0.9, "mae": 2.5, "rmse": 3.0},
    "target": {"mean": 10.0, "std": 4.0, "min": 4.0, "max": 16.0},
    "scatter": [[4.0, 5.0], [8.0, 7.5], [12.0, 15.0], [16.0, 14.0]],
    "residual_histogram": {"edges": [-2.0, 0.0, 2.0, 4.0], "counts": [2, 1, 1]},
    "worst_examples": [
        {"key": 2, "example": "c.png", "true": 12.0, "predicted": 15.0, "error": 3.0},
        {"key": 3, "example": "d.png", "true": 16.0, "predicted": 14.0, "error": -2.0},
    ],
    "weights": "best",
    "step": 40,
}

MULTILABEL = {
    "family": "multilabel",
    "split": "val",
    "samples": 3,
    "loss": 0.3,
    "micro_f1": 0.8,
    "macro_f1": 0.7,
    "metrics": {"micro_f1": 0.8, "macro_f1": 0.7},
    "label_names": ["cat", "dog", "sofa"],
    "thresholds": [0.5, 0.35, 0.6],
    "labels_per_example": 1.33,
    "per_label": [
        {"label": "cat", "precision": 1.0, "recall": 0.5, "f1": 0.667, "support": 2, "predicted": 1, "threshold": 0.5},
        {"label": "dog", "precision": 0.5, "recall": 1.0, "f1": 0.667, "support": 1, "predicted": 2, "threshold": 0.35},
        {"label": "sofa", "precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1, "predicted": 1, "threshold": 0.6},
    ],
    "misclassified": [
        {"key": 0, "example": "a text", "true": ["cat", "sofa"], "predicted": ["dog", "sofa"],
         "scores": [["sofa", 0.9], ["dog", 0.6], ["cat", 0.3]]},
    ],
    "correct_examples": [{"key": 1, "example": "b text", "true": ["cat"], "predicted": ["cat"], "scores": [["cat", 0.8]]}],
}


def test_a_regression_report_reads_its_details_and_round_trips():
    evaluation = EvalRecord.from_json(copy.deepcopy(REGRESSION), "eval.json")
    assert list(evaluation.splits) == ["val"]  # its 'metrics' and 'target' objects are not splits
    val = evaluation.primary
    assert val.family == "regression" and val.shown_family == "regression"
    assert val.metric_names == ("r2", "mae", "rmse") and val.value("r2") == 0.9
    assert val.scatter[2] == (12.0, 15.0) and val.target["max"] == 16.0
    assert val.residual_histogram.counts == (2, 1, 1) and len(val.residual_histogram.edges) == 4
    worst = val.worst_examples[0]
    assert isinstance(worst, RegressionExample) and (worst.example, worst.true, worst.predicted) == ("c.png", 12.0, 15.0)
    assert evaluation.to_json() == REGRESSION


def test_a_multilabel_report_reads_label_sets_and_round_trips():
    evaluation = EvalRecord.from_json(copy.deepcopy(MULTILABEL), "eval.json")
    val = evaluation.primary
    assert val.metric_names == ("micro_f1", "macro_f1") and val.thresholds == (0.5, 0.35, 0.6)
    assert [row["label"] for row in val.per_label] == ["cat", "dog", "sofa"]
    wrong = val.misclassified[0]
    assert isinstance(wrong, LabelSetExample) and not wrong.correct
    assert wrong.missed == ("cat",) and wrong.unexpected == ("dog",) and wrong.scores[0] == ("sofa", 0.9)
    assert val.correct_examples[0].correct and val.misclassified_count == 1
    assert evaluation.to_json() == MULTILABEL


def test_a_report_from_before_families_is_classification():
    old = {"accuracy": 0.5, "macro_f1": 0.4, "loss": 1.0, "samples": 2, "label_names": ["a", "b"],
           "confusion_matrix": [[1, 0], [1, 0]]}
    val = EvalRecord.from_json(old).primary
    assert val.family == "" and val.shown_family == "classification" and val.metric_names == ("accuracy", "macro_f1")


def test_a_test_split_of_a_new_family_is_found_beside_the_first():
    data = {**copy.deepcopy(REGRESSION), "test": {**copy.deepcopy(REGRESSION), "split": "test", "r2": 0.5}}
    evaluation = EvalRecord.from_json(data, "eval.json")
    assert list(evaluation.splits) == ["val", "test"] and evaluation.splits["test"].value("r2") == 0.5
    assert evaluation.to_json() == data


@pytest.mark.parametrize(
    ("report", "change", "reason"),
    [
        (REGRESSION, {"scatter": [[1.0]]}, "'scatter' should be a list of [true, predicted] pairs"),
        (REGRESSION, {"residual_histogram": {"edges": [0, 1], "counts": [1, 2]}}, "2 edges for 2 counts"),
        (REGRESSION, {"worst_examples": [{"example": "x", "true": "big", "predicted": 1.0}]}, "'true' should be a number"),
        (REGRESSION, {"metrics": {"r2": "high"}}, "'metrics': 'r2' should be a number"),
        (MULTILABEL, {"thresholds": [0.5, "auto"]}, "'thresholds' should be a list of numbers"),
        (MULTILABEL, {"misclassified": [{"true": "cat", "predicted": []}]}, "'true' should be a list"),
        (MULTILABEL, {"misclassified": [{"true": [], "predicted": [], "scores": [["a"]]}]}, "[label, probability] pairs"),
    ],
)
def test_damaged_details_name_the_file_and_the_key(tmp_path, report, change, reason):
    path = tmp_path / "eval.json"
    with pytest.raises(RunFileError) as caught:
        EvalRecord.from_json(json.loads(json.dumps({**report, **change})), path)
    assert str(path) in str(caught.value) and reason in str(caught.value)

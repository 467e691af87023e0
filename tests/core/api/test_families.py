"""The task families' evaluation: what each accumulator computes from real tensors."""

from __future__ import annotations

import json
import math

import pytest
import torch

from trainlab import InputSpec, Metric, TaskSpec
from trainlab.api.taskbase import EvalBatch
from trainlab.api.families import ClassificationTask, MultiLabelTask, RegressionTask, accumulator_for
from trainlab.api.predictions import LabelScores, LabelSet, Number, as_prediction


def _spec(family: str, **extra) -> TaskSpec:
    return TaskSpec(id=f"t-{family}", title=family, factory="x:Y", family=family, **extra)


def test_spec_defaults_by_family_and_validation():
    assert _spec("regression").default_monitor() == "r2"
    assert _spec("regression").monitor_choices() == ("r2", "mae", "rmse", "loss")
    assert _spec("regression").higher_is_better("mae") is False and _spec("regression").higher_is_better("r2") is True
    assert _spec("multilabel").default_monitor() == "micro_f1"
    own = _spec("segmentation", metrics=(Metric("iou", "IoU", True, "score"),))
    assert own.validate() == [] and own.default_monitor() == "iou"
    assert any("must declare its metrics" in p for p in _spec("segmentation").validate())
    assert any("monitor 'nope'" in p for p in _spec("regression", monitor="nope").validate())
    assert any("'loss'" in p for p in _spec("x", metrics=(Metric("loss"),)).validate())
    assert any("input kind" in p for p in _spec("regression", input=InputSpec(kind="video")).validate())


def _batches(task, split, outputs, targets, keys=None, size=3):
    acc = task.metric_accumulator(split)
    for start in range(0, len(targets), size):
        o, t = outputs[start : start + size], targets[start : start + size]
        k = keys[start : start + size] if keys is not None else None
        acc.update(EvalBatch(loss_sum=torch.tensor(float(len(t))), outputs=o, targets=t, keys=k))
    return acc


def test_regression_metrics_match_their_definitions_in_target_units():
    task = RegressionTask(_spec("regression"), {})
    task.fit_target_scaling([10.0, 20.0, 30.0])
    truth = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 9.0])
    preds = torch.tensor([1.5, 2.0, 2.0, 4.0, 6.0, 7.0])
    acc = _batches(task, "val", preds, truth, keys=list(range(6)))
    report = acc.compute()
    err = preds - truth
    assert report["mae"] == pytest.approx(float(err.abs().mean()))
    assert report["rmse"] == pytest.approx(math.sqrt(float((err**2).mean())))
    ss_res, ss_tot = float((err**2).sum()), float(((truth - truth.mean()) ** 2).sum())
    assert report["r2"] == pytest.approx(1 - ss_res / ss_tot)
    assert report["metrics"] == {k: report[k] for k in ("r2", "mae", "rmse")}
    assert report["worst_examples"][0]["key"] == 5 and report["worst_examples"][0]["error"] == pytest.approx(-2.0)
    assert sum(report["residual_histogram"]["counts"]) == 6 and len(report["scatter"]) == 6
    assert report["samples"] == 6 and report["loss"] == pytest.approx(1.0)
    assert task.fitted_state() == {"target_mean": 20.0, "target_std": pytest.approx(8.16496580927726)}


def test_regression_task_trains_on_the_standardised_scale():
    task = RegressionTask(_spec("regression"), {})
    task.fit_target_scaling([100.0, 300.0])  # mean 200, std 100
    task.forward = lambda model, batch: (batch["pred"], batch["y"])
    loss, n = task.train_step(None, {"pred": torch.tensor([1.0, -1.0]), "y": torch.tensor([300.0, 100.0])}, None)
    assert n == 2 and float(loss) == pytest.approx(0.0)
    out = task.eval_step(None, {"pred": torch.tensor([0.5]), "y": torch.tensor([250.0])}, None)
    assert float(out.outputs[0]) == pytest.approx(250.0) and float(out.loss_sum) == pytest.approx(0.0)


def test_multilabel_metrics_and_auto_thresholds():
    spec = _spec("multilabel")
    task = MultiLabelTask(spec, {"threshold": "auto"})
    task.label_names = ["a", "b", "c"]
    targets = torch.tensor([[1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 0]])
    # label b is only ever scored 0.3 when present: 0.5 misses it, auto finds it
    probs = torch.tensor([[0.9, 0.1, 0.2], [0.8, 0.3, 0.1], [0.2, 0.3, 0.1], [0.1, 0.05, 0.4]])
    logits = torch.log(probs / (1 - probs))
    acc = _batches(task, "val", logits, targets, keys=["w", "x", "y", "z"], size=2)
    before = acc.compute()
    assert before["per_label"][1]["f1"] == 0.0 and before["thresholds"] == [0.5, 0.5, 0.5]
    # micro: tp=2 (a twice), fp=0, fn=2 (b twice)
    assert before["micro_f1"] == pytest.approx(2 * 2 / (2 * 2 + 0 + 2))
    assert before["macro_f1"] == pytest.approx((1.0 + 0.0) / 2)  # c never occurs: not averaged
    task.calibrate("val", acc)
    assert task.thresholds[1] <= 0.3 and task.thresholds[2] == 0.5
    after = acc.compute()
    assert after["per_label"][1]["f1"] == 1.0 and after["micro_f1"] == pytest.approx(1.0)
    assert task.fitted_state()["thresholds"] == task.thresholds
    assert before["misclassified"][0]["true"] == ["a", "b"] and before["misclassified"][0]["predicted"] == ["a"]


def test_classification_report_keeps_the_api_1_layout():
    task = ClassificationTask(_spec("classification"), {})
    task.label_names = ["cat", "dog"]
    logits = torch.tensor([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0]])
    report = _batches(task, "val", logits, torch.tensor([0, 1, 1])).compute()
    assert report["accuracy"] == pytest.approx(2 / 3) and report["metrics"]["accuracy"] == report["accuracy"]
    assert report["confusion_matrix"] == [[1, 0], [1, 1]] and report["family"] == "classification"
    assert set(report["metrics"]) == {"accuracy", "macro_f1"}


def test_accumulators_merge_as_one_pass():
    task = RegressionTask(_spec("regression"), {})
    truth, preds = torch.arange(10.0), torch.arange(10.0) * 1.1
    whole = _batches(task, "val", preds, truth).compute()
    first, second = _batches(task, "val", preds[:4], truth[:4]), _batches(task, "val", preds[4:], truth[4:])
    first.merge(second.state())
    merged = first.compute()
    assert merged["metrics"] == pytest.approx(whole["metrics"]) and merged["samples"] == 10


def test_an_evaluation_that_measures_no_loss_reports_none_across_processes():
    from trainlab.engine.distributed import _state_bytes, _state_from_bytes

    def unmeasured(task, outputs, targets):
        acc = task.metric_accumulator("val")
        acc.update(EvalBatch(loss_sum=None, outputs=outputs, targets=targets))
        return acc

    task = RegressionTask(_spec("regression"), {})
    truth, preds = torch.arange(6.0), torch.arange(6.0) + 0.5
    first, second = unmeasured(task, preds[:3], truth[:3]), unmeasured(task, preds[3:], truth[3:])
    assert first.loss is None and first.compute()["loss"] is None
    first.merge(_state_from_bytes(_state_bytes(second.state())))  # as the ranks send them
    merged = first.compute()
    assert merged["loss"] is None and merged["samples"] == 6 and merged["mae"] == pytest.approx(0.5)
    assert '"loss": null' in json.dumps(merged)  # eval.json says no loss, not 0
    # a rank that saw no example leaves None as None and a measured loss as it is
    empty = task.metric_accumulator("val")
    assert empty.state()["loss_sum"] is None
    alone = unmeasured(task, preds[:3], truth[:3])
    alone.merge(_state_from_bytes(_state_bytes(empty.state())))
    assert alone.compute()["loss"] is None
    measured = _batches(task, "val", preds[:3], truth[:3])  # a summed loss of 3 over 3 examples
    measured.merge(_state_from_bytes(_state_bytes(empty.state())))
    assert measured.compute()["loss"] == pytest.approx(1.0)

    classes = ClassificationTask(_spec("classification"), {})
    classes.label_names = ["cat", "dog"]
    report = unmeasured(classes, torch.tensor([[2.0, 0.0], [0.0, 2.0]]), torch.tensor([0, 0])).compute()
    assert report["loss"] is None and report["accuracy"] == pytest.approx(0.5)


def test_a_plain_task_of_an_unknown_family_must_bring_its_accumulator():
    from trainlab.api.taskbase import Task

    task = Task(_spec("segmentation", metrics=(Metric("iou"),)), {})
    with pytest.raises(NotImplementedError, match="metric_accumulator"):
        accumulator_for(task, "val")


def test_predictions_json_and_csv():
    scores = as_prediction([("cat", 0.9), ("dog", 0.1)])
    assert isinstance(scores, LabelScores) and scores.to_json()["label"] == "cat"
    assert scores.csv_row(3, []) == ["cat", "0.900000", "dog", "0.100000", "", ""]
    labels = LabelSet(("a", "c"), (("a", 0.9), ("b", 0.2), ("c", 0.7)))
    assert LabelSet.csv_header(1, ["a", "b", "c"]) == ["labels", "score_a", "score_b", "score_c"]
    assert labels.csv_row(1, ["a", "b", "c"]) == ["a;c", "0.900000", "0.200000", "0.700000"]
    assert Number(43.9538).to_json() == {"value": 43.9538} and as_prediction(2.5) == Number(2.5)

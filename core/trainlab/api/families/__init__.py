"""Task families: a base class, an evaluation and a prediction form each.

* ``classification``: ``ClassificationTask``, ``ClassificationMetrics``,
  predictions ``LabelScores``;
* ``regression``: ``RegressionTask``, ``RegressionMetrics``, ``Number``;
* ``multilabel``: ``MultiLabelTask``, ``MultiLabelMetrics``, ``LabelSet``;
* ``object-detection``: ``DetectionMetrics`` (COCO mAP from boxes), which a
  detection task returns from ``Task.metric_accumulator``.

Importing this package imports no torch; the classes do inside their methods.
A plugin of another family subclasses ``trainlab.Task`` and returns its own
``MetricAccumulator`` from ``Task.metric_accumulator``.
"""

from __future__ import annotations

from typing import Any

from trainlab.api.families.base import MetricAccumulator
from trainlab.api.families.classification import ClassificationMetrics, ClassificationTask
from trainlab.api.families.detection import DetectionMetrics
from trainlab.api.families.multilabel import MultiLabelMetrics, MultiLabelTask
from trainlab.api.families.regression import RegressionMetrics, RegressionTask

ACCUMULATORS: dict[str, type[MetricAccumulator]] = {
    "classification": ClassificationMetrics,
    "regression": RegressionMetrics,
    "multilabel": MultiLabelMetrics,
    "object-detection": DetectionMetrics,
}


def accumulator_for(task: Any, split: str) -> MetricAccumulator:
    """The built-in accumulator of ``task``'s family (a plain ``Task`` of a
    built-in family, such as a plugin API 1 task that subclassed ``Task``)."""
    family = getattr(task.spec, "family", "classification")
    cls = ACCUMULATORS.get(family)
    if cls is None:
        raise NotImplementedError(
            f"task {task.spec.id} is of family {family!r}, which TrainLab does not evaluate itself: "
            "its Task.metric_accumulator() must return a MetricAccumulator"
        )
    return cls(task, split)


__all__ = [
    "ACCUMULATORS",
    "ClassificationMetrics",
    "ClassificationTask",
    "DetectionMetrics",
    "MetricAccumulator",
    "MultiLabelMetrics",
    "MultiLabelTask",
    "RegressionMetrics",
    "RegressionTask",
    "accumulator_for",
]

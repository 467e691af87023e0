"""Single-label classification: the task base class and its evaluation.

The report keeps everything plugin API 1 wrote into eval.json (accuracy,
macro_f1, top5_accuracy with more than five classes, per-class precision,
recall, F1 and support, the confusion matrix, misclassified and correct
examples) and adds ``metrics`` and ``family``.
"""

from __future__ import annotations

from typing import Any, Sequence

from trainlab.api.families.base import MetricAccumulator
from trainlab.api.taskbase import EvalBatch, Task


class ClassificationMetrics(MetricAccumulator):
    """Softmax over the outputs (logits), then the classification report."""

    family = "classification"

    def compute(self) -> dict[str, Any]:
        import numpy as np

        from trainlab.api.metrics import classification_report

        label_names = list(self.task.label_names)
        keys = self.example_keys()
        if self.samples:
            probs = self.outputs.softmax(-1).numpy()
            targets = self.targets.numpy()
        else:
            probs, targets = np.zeros((0, len(label_names))), np.zeros(0)
        examples = self.describe(keys) if keys else None
        report = classification_report(probs, targets, label_names, loss=self.loss, examples=examples, keys=keys)
        declared = [m.name for m in self.task.spec.metric_specs()]
        metrics = {name: float(report[name]) for name in declared if name in report}
        report.update(family=self.family, samples=self.samples, metrics=metrics)
        report.setdefault("loss", None)  # a task whose evaluation measures no loss (EvalBatch.loss_sum None)
        return report


class ClassificationTask(Task):
    """A task whose model maps a batch to logits over ``label_names``.

    Implement ``forward(model, batch) -> (logits, targets)`` and optionally
    ``batch_keys(batch)``; the loss is cross-entropy, with the engine's class
    weights when class weighting is on.  Its predictor returns
    ``LabelScores`` (``trainlab.api.predictions``).
    """

    def forward(self, model: Any, batch: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def batch_keys(self, batch: Any) -> Sequence[Any] | None:
        return None

    def train_step(self, model, batch, ctx):
        import torch.nn.functional as F

        logits, targets = self.forward(model, batch)
        weight = ctx.class_weights
        if weight is not None:
            weight = weight.to(logits.dtype)
        loss = F.cross_entropy(logits, targets, weight=weight)
        return loss, int(targets.shape[0])

    def eval_step(self, model, batch, ctx):
        import torch.nn.functional as F

        logits, targets = self.forward(model, batch)
        loss_sum = F.cross_entropy(logits.float(), targets, reduction="sum")
        return EvalBatch(loss_sum=loss_sum, outputs=logits, targets=targets, keys=self.batch_keys(batch))

    def metric_accumulator(self, split: str) -> ClassificationMetrics:
        return ClassificationMetrics(self, split)

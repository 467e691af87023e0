"""Regression: one number per example, its task base class and its evaluation.

Targets are standardised inside the task (zero mean, unit variance on the
training split): the model learns on a well-scaled target whatever its units
(prices in thousands, concentrations in 1e-6), and every figure it reports is
back in the target's own units.  The scaling is the task's fitted state, saved
with the run for evaluation, resume and prediction.

The report: ``mae``, ``rmse``, ``r2`` (torchmetrics), the target's summary,
a sample of (true, predicted) pairs for a scatter plot, a residual histogram
and the worst examples.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from trainlab.api.families.base import MetricAccumulator, plain
from trainlab.api.taskbase import EvalBatch, Task

SCATTER_POINTS = 2000  # enough to see the shape; eval.json stays small
HISTOGRAM_BINS = 30
WORST_EXAMPLES = 100


class RegressionMetrics(MetricAccumulator):
    """MAE, RMSE and R^2 of the predictions, in the target's units."""

    family = "regression"

    def compute(self) -> dict[str, Any]:
        import numpy as np
        from torchmetrics.functional import mean_absolute_error, mean_squared_error, r2_score

        preds = self.outputs.reshape(-1).double()
        target = self.targets.reshape(-1).double()
        n = int(target.numel())
        if n == 0:
            return self.report({"mae": math.nan, "rmse": math.nan, "r2": math.nan})
        metrics = {
            "mae": float(mean_absolute_error(preds, target)),
            "rmse": float(mean_squared_error(preds, target, squared=False)),
            # R^2 needs two examples and some spread; NaN says "undefined" honestly
            "r2": float(r2_score(preds, target)) if n >= 2 and float(target.std()) > 0 else math.nan,
        }
        declared = {m.name for m in self.task.spec.metric_specs()}
        metrics = {k: v for k, v in metrics.items() if k in declared} or metrics
        p, t = preds.numpy(), target.numpy()
        residual = p - t
        pick = np.unique(np.linspace(0, n - 1, min(n, SCATTER_POINTS)).round().astype(int))
        counts, edges = np.histogram(residual, bins=HISTOGRAM_BINS)
        keys = self.example_keys()
        worst = np.argsort(-np.abs(residual), kind="stable")[:WORST_EXAMPLES]
        worst_keys = [keys[i] for i in worst] if keys else [int(i) for i in worst]
        described = self.describe(worst_keys) if keys else [str(k) for k in worst_keys]
        return self.report(
            metrics,
            target={"mean": float(t.mean()), "std": float(t.std()), "min": float(t.min()), "max": float(t.max())},
            scatter=[[float(t[i]), float(p[i])] for i in pick],
            residual_histogram={"edges": edges.tolist(), "counts": counts.tolist()},
            worst_examples=[
                {"key": plain(k), "example": text, "true": float(t[i]), "predicted": float(p[i]), "error": float(residual[i])}
                for k, text, i in zip(worst_keys, described, worst)
            ],
        )


class RegressionTask(Task):
    """A task whose model maps a batch to one number per example.

    Implement ``forward(model, batch) -> (predictions, targets)``: the model's
    raw output (one value per example, in standardised units) and the targets
    in the data's own units.  In ``prepare``, call
    ``fit_target_scaling(training_targets)``; the engine saves the scaling as
    fitted state.  The loss is the mean squared error on the standardised
    scale; evaluation and ``to_units`` give values in the target's units.
    Its predictor returns ``Number`` (``trainlab.api.predictions``).
    """

    target_mean: float = 0.0
    target_std: float = 1.0

    def fit_target_scaling(self, values: Sequence[float]) -> None:
        """Mean and spread of the training targets (a constant target keeps std 1)."""
        import numpy as np

        array = np.asarray(values, dtype=np.float64)
        if array.size == 0:
            return
        self.target_mean = float(array.mean())
        std = float(array.std())
        self.target_std = std if std > 0 and math.isfinite(std) else 1.0

    def standardise(self, targets: Any) -> Any:
        return (targets - self.target_mean) / self.target_std

    def to_units(self, predictions: Any) -> Any:
        """Model outputs (standardised) as values in the target's units."""
        return predictions * self.target_std + self.target_mean

    def forward(self, model: Any, batch: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def batch_keys(self, batch: Any) -> Sequence[Any] | None:
        return None

    def train_step(self, model, batch, ctx):
        import torch.nn.functional as F

        preds, targets = self.forward(model, batch)
        preds = preds.float().reshape(-1)
        loss = F.mse_loss(preds, self.standardise(targets.float().reshape(-1)))
        return loss, int(preds.shape[0])

    def eval_step(self, model, batch, ctx):
        import torch.nn.functional as F

        preds, targets = self.forward(model, batch)
        preds = preds.float().reshape(-1)
        targets = targets.float().reshape(-1)
        loss_sum = F.mse_loss(preds, self.standardise(targets), reduction="sum")
        return EvalBatch(loss_sum=loss_sum, outputs=self.to_units(preds), targets=targets, keys=self.batch_keys(batch))

    def metric_accumulator(self, split: str) -> RegressionMetrics:
        return RegressionMetrics(self, split)

    def fitted_state(self) -> dict[str, Any]:
        return {**super().fitted_state(), "target_mean": self.target_mean, "target_std": self.target_std}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        super().load_fitted_state(state)
        self.target_mean = float(state.get("target_mean", self.target_mean))
        self.target_std = float(state.get("target_std", self.target_std))

"""The runtime side of image-regression: a number per image (imported when a run starts).

The backbone gets a single-output head; ``RegressionTask`` standardises the
targets on the training split and reports MAE, RMSE and R^2 in the target's
units.  The exported model's programs give values in those units too
(``output_description``: the scaling is part of them).
"""

from __future__ import annotations

from typing import Any

from trainlab import DataSummary, RegressionTask, RunContext
from trainlab_plugins.image.base import ImageTask
from trainlab_plugins.image.folder import Splits
from trainlab_plugins.image.labels import NumberLabels


def _figures(values: list[float]) -> dict[str, float]:
    import statistics

    return {
        "mean": statistics.fmean(values),
        "std": statistics.pstdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
    }


class ImageRegressionTask(ImageTask, RegressionTask):
    """A table of images and numbers -> a CNN with one output; see docs/tasks/image-regression.md."""

    target_dtype = "float32"

    def label_reader(self) -> NumberLabels:
        return NumberLabels()

    def num_outputs(self) -> int:
        return 1

    def fit(self, found: Splits, ctx: RunContext) -> None:
        # Evaluating keeps the scaling the model was trained with (restored
        # fitted state); training and resuming fit it on the training split.
        if ctx.purpose != "evaluate" and found.items.get("train"):
            self.fit_target_scaling([target for _, target in found.items["train"]])

    def describe_targets(self, found: Splits, summary: DataSummary) -> None:
        summary.extra["target"] = {split: _figures([t for _, t in items]) for split, items in found.items.items() if items}
        train = summary.extra["target"].get("train")
        if train and train["min"] == train["max"]:
            summary.warnings.append(f"every training image has the label {train['min']:g}: there is nothing to learn")

    def output_description(self) -> dict[str, Any]:
        return {
            "kind": "value",
            "target_mean": self.target_mean,
            "target_std": self.target_std,
            "value": "the exported programs give the value in the target's units; the weights alone give "
            "(value - target_mean) / target_std",
        }

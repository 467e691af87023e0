"""The runtime of ``text-regression``: a number per text (or text pair).

The model is a BERT-family sequence model with one output
(``problem_type="regression"`` in its ``config.json``).  It learns the
target standardised on the training split (``RegressionTask``); the
exported model's output is on that scale too, and ``trainlab.json`` and
``task_state.json`` beside it hold the scaling: value = ``logits[:, 0] * std
+ mean``.  Every figure TrainLab reports is in the target's own units.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from trainlab import DataError, DataSummary, RegressionTask, RunContext
from trainlab_plugins.text.base import TextTask
from trainlab_plugins.text.data import TextSplit
from trainlab_plugins.text.labels import LabelKind, NumberLabel
from trainlab_plugins.text.predictor import NumberPredictor, TextModelRunner

# a validation split this much outside the training range gets a warning
OUTSIDE_RANGE_SHARE = 0.05


class TextRegressionTask(TextTask, RegressionTask):
    """Text regression with a BERT-family model from transformers."""

    problem_type = "regression"
    # dropout=auto: none on a pretrained encoder.  Dropout keeps a unit's mean
    # but widens its spread in training only, which the layer norms and
    # non-linearities after it turn into shifted activations at evaluation:
    # a classifier's argmax rarely minds, a head that outputs the number
    # itself reads the shift as error.
    auto_dropout = 0.0
    split_note = "held out {share} of {source} for validation, spread over the target's range"

    def label_kind(self) -> LabelKind:
        return NumberLabel()

    def fit_labels(self, label_names: Sequence[str] | None, ctx: RunContext) -> None:
        assert self.data is not None
        self.label_names = []
        train = self.data.splits.get("train")
        if train is None or ctx.purpose == "evaluate":
            return  # a trained run's scaling is its fitted state, restored by the engine
        values = np.asarray(train.labels, dtype=np.float64)
        if values.min() == values.max():
            raise DataError(f"{train.path}: every training target is {values[0]:g}; a regression needs targets that vary")
        self.fit_target_scaling(values)

    def head_labels(self) -> list[str]:
        return [self.columns.label]  # the output's name in config.json (id2label)

    def targets(self, split: TextSplit) -> np.ndarray:
        return np.asarray(split.labels, dtype=np.float32)

    def split_counts(self) -> dict[str, dict[str, int]]:
        assert self.data is not None
        return {name: {"rows": len(split)} for name, split in self.data.splits.items()}

    def family_summary(self, summary: DataSummary) -> None:
        assert self.data is not None
        stats = {}
        for name, split in self.data.splits.items():
            values = np.asarray(split.labels, dtype=np.float64)
            stats[name] = {
                "mean": float(values.mean()),
                "std": float(values.std()),
                "min": float(values.min()),
                "median": float(np.median(values)),
                "max": float(values.max()),
            }
        summary.extra["target"] = stats
        if "train" not in stats:
            return
        low, high = stats["train"]["min"], stats["train"]["max"]
        for name in ("val", "test"):
            split = self.data.splits.get(name)
            if split is None:
                continue
            outside = sum(1 for v in split.labels if v < low or v > high)
            if outside >= OUTSIDE_RANGE_SHARE * len(split):
                summary.warnings.append(
                    f"{outside} of {len(split)} {name} targets lie outside the training range [{low:g}, {high:g}]; "
                    "a model rarely predicts beyond the values it was trained on"
                )

    def count_lines(self, summary: DataSummary) -> list[str]:
        lines = []
        for name, stats in summary.extra.get("target", {}).items():
            lines.append(
                f"{name}: {summary.counts[name]['rows']} texts, target mean {stats['mean']:.4g}, sd {stats['std']:.4g}, "
                f"from {stats['min']:.4g} to {stats['max']:.4g}"
            )
        return lines

    def export_info(self) -> dict[str, Any]:
        return {
            "target_column": self.columns.label,
            "target_scaling": {"mean": self.target_mean, "std": self.target_std},
            "output": "standardised: value = logits[:, 0] * target_scaling.std + target_scaling.mean",
        }

    def load_predictor(self, model_dir: Path, device: Any) -> NumberPredictor:
        return NumberPredictor(TextModelRunner(Path(model_dir), device), self.to_units)

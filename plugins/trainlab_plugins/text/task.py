"""The runtime of ``text-classification``: a class per text, from BERT-family models.

What every text task shares (reading, tokens, batches, the model and its
export) is ``trainlab_plugins.text.base.TextTask``; this module adds the
labels: their order and checks, per-label counts, and the softmax predictor.
Imported only when a run starts (the factory path of the task descriptor),
so torch and transformers may load here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from trainlab import ClassificationTask, DataError, DataSummary, RunContext
from trainlab_plugins.text.base import TextTask
from trainlab_plugins.text.data import TextSplit, check_labels, label_order
from trainlab_plugins.text.labels import ClassLabel, LabelKind
from trainlab_plugins.text.predictor import LabelScoresPredictor, TextModelRunner


class TextClassificationTask(TextTask, ClassificationTask):
    """Sequence classification with a BERT-family model from transformers."""

    def label_kind(self) -> LabelKind:
        return ClassLabel()

    def fit_labels(self, label_names: Sequence[str] | None, ctx: RunContext) -> None:
        assert self.data is not None
        trained = label_names is not None
        if trained:
            self.label_names = list(label_names)
        else:
            self.label_names = label_order(self.data.splits["train"].labels)
            if len(self.label_names) < 2:
                only = self.label_names[0] if self.label_names else "none"
                raise DataError(
                    f"{self.data.splits['train'].path}: classification needs at least two labels in training; found only {only!r}"
                )
        check_labels(self.data, self.label_names, trained)

    def targets(self, split: TextSplit) -> np.ndarray:
        ids = {name: i for i, name in enumerate(self.label_names)}
        return np.asarray([ids[label] for label in split.labels], dtype=np.int64)

    def split_counts(self) -> dict[str, dict[str, int]]:
        assert self.data is not None
        counts = {}
        for name, split in self.data.splits.items():
            per_label = dict.fromkeys(self.label_names, 0)
            for label in split.labels:
                per_label[label] += 1
            counts[name] = per_label
        return counts

    def family_summary(self, summary: DataSummary) -> None:
        if "train" not in summary.counts:
            return
        warning = summary.imbalance_warning("train")
        if warning:
            summary.warnings.append(warning)
        for name in ("val", "test"):
            if name in summary.counts:
                absent = [label for label, n in summary.counts[name].items() if n == 0]
                if absent:
                    summary.warnings.append(f"{name} has no examples of: {', '.join(absent[:10])}")

    def count_lines(self, summary: DataSummary) -> list[str]:
        lines = []
        for split, per_label in summary.counts.items():
            shown = ", ".join(f"{label} {n}" for label, n in list(per_label.items())[:12])
            more = f", ... ({len(per_label)} labels)" if len(per_label) > 12 else ""
            lines.append(f"{split}: {sum(per_label.values())} texts ({shown}{more})")
        return lines

    def label_counts(self) -> list[int]:
        encoded = self.encoded.get("train")
        if encoded is None:
            return []
        return np.bincount(encoded.labels, minlength=len(self.label_names)).tolist()

    def load_predictor(self, model_dir: Path, device: Any) -> LabelScoresPredictor:
        return LabelScoresPredictor(TextModelRunner(Path(model_dir), device))

"""The runtime of ``text-multilabel``: any number of labels per text (none included).

The model has an output per label (``problem_type="multi_label_classification"``
in its ``config.json``, so transformers' pipelines apply a sigmoid per label);
the loss is binary cross-entropy per label (``MultiLabelTask``).  A label is
predicted when its probability reaches its threshold: ``threshold`` (0.5), or
with ``threshold=auto`` each label's own, chosen on the validation split at
the end of training and recorded with the model (``task_state.json``, and
``trainlab.json`` per label).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from trainlab import DataError, DataSummary, MultiLabelTask, RunContext, UsageError
from trainlab_plugins.text.base import TextTask
from trainlab_plugins.text.data import TextSplit, check_labels, label_order
from trainlab_plugins.text.labels import LabelKind, LabelSetKind
from trainlab_plugins.text.predictor import LabelSetPredictor, TextModelRunner

RARE_LABEL = 5  # fewer training texts than this: too few to learn a label from
SEPARATOR_SUSPECTS = (",", "|", "/")


class TextMultiLabelTask(TextTask, MultiLabelTask):
    """Multi-label text classification with a BERT-family model from transformers."""

    problem_type = "multi_label_classification"
    split_note = "held out {share} of {source} for validation, stratified by each text's rarest label"

    @property
    def separator(self) -> str:
        return str(self.params.get("label_separator") or ";")

    def label_kind(self) -> LabelKind:
        return LabelSetKind(self.separator)

    def fit_labels(self, label_names: Sequence[str] | None, ctx: RunContext) -> None:
        assert self.data is not None
        try:
            self.threshold_setting()
        except ValueError:
            value = self.params.get("threshold")
            raise UsageError(
                f"bad value for parameter threshold: {value!r}; use auto or a number between 0 and 1 (e.g. --set threshold=0.4)"
            ) from None
        trained = label_names is not None
        if trained:
            self.label_names = list(label_names)
        else:
            train = self.data.splits["train"]
            self.label_names = label_order([label for row in train.labels for label in row])
            if not self.label_names:
                raise DataError(
                    f"{train.path}: no training text has a label (column {self.columns.label!r}, "
                    f"labels joined by {self.separator!r}); choose the column with --set label_column=NAME"
                )
        check_labels(self.data, self.label_names, trained)

    def targets(self, split: TextSplit) -> np.ndarray:
        index = {name: j for j, name in enumerate(self.label_names)}
        hot = np.zeros((len(split), len(self.label_names)), dtype=np.float32)
        for i, row in enumerate(split.labels):
            hot[i, [index[label] for label in row]] = 1.0
        return hot

    def split_counts(self) -> dict[str, dict[str, int]]:
        return {
            name: dict(zip(self.label_names, (int(n) for n in encoded.labels.sum(axis=0))))
            for name, encoded in self.encoded.items()
        }

    def family_summary(self, summary: DataSummary) -> None:
        summary.extra["rows"] = {name: len(encoded) for name, encoded in self.encoded.items()}
        summary.extra["without_label"] = {name: int((encoded.labels.sum(axis=1) == 0).sum()) for name, encoded in self.encoded.items()}
        summary.extra["labels_per_text"] = {
            name: round(float(encoded.labels.sum(axis=1).mean()), 3) if len(encoded) else 0.0 for name, encoded in self.encoded.items()
        }
        if "train" not in summary.counts:
            return
        rare = [f"{label} ({n})" for label, n in summary.counts["train"].items() if n < RARE_LABEL]
        if rare:
            summary.warnings.append(
                f"labels with fewer than {RARE_LABEL} training texts: {', '.join(rare[:10])}; too few to learn them reliably"
            )
        for name in ("val", "test"):
            if name in summary.counts:
                absent = [label for label, n in summary.counts[name].items() if n == 0]
                if absent:
                    summary.warnings.append(f"{name} has no examples of: {', '.join(absent[:10])}")
        suspect = next((c for c in SEPARATOR_SUSPECTS if c != self.separator and any(c in name for name in self.label_names)), None)
        if suspect:
            example = next(name for name in self.label_names if suspect in name)
            summary.warnings.append(
                f"label {example!r} contains {suspect!r}; if it is several labels, use --set label_separator={suspect}"
            )

    def count_lines(self, summary: DataSummary) -> list[str]:
        lines = []
        for name, per_label in summary.counts.items():
            shown = ", ".join(f"{label} {n}" for label, n in list(per_label.items())[:12])
            more = f", ... ({len(per_label)} labels)" if len(per_label) > 12 else ""
            lines.append(
                f"{name}: {summary.extra['rows'][name]} texts, {summary.extra['labels_per_text'][name]:.2f} labels per text, "
                f"{summary.extra['without_label'][name]} without a label ({shown}{more})"
            )
        return lines

    def label_counts(self) -> list[int]:
        encoded = self.encoded.get("train")
        if encoded is None:
            return []
        return [int(n) for n in encoded.labels.sum(axis=0)]

    def export_info(self) -> dict[str, Any]:
        return {
            "label_column": self.columns.label,
            "label_separator": self.separator,
            "threshold": str(self.params.get("threshold", "0.5")),
            "thresholds": dict(zip(self.label_names, self.decision_thresholds())),
        }

    def load_predictor(self, model_dir: Path, device: Any) -> LabelSetPredictor:
        return LabelSetPredictor(TextModelRunner(Path(model_dir), device), self.decision_thresholds())

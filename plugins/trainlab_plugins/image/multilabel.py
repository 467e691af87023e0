"""The runtime side of image-multilabel: any number of labels per image (imported when a run starts).

One output per label; ``MultiLabelTask`` trains with binary cross-entropy,
decides each label at its threshold (``threshold``: a number, or ``auto``,
chosen per label on the validation split and recorded with the model) and
reports micro and macro F1 and each label's precision and recall.
"""

from __future__ import annotations

from typing import Any, Sequence

from trainlab import DataSummary, MultiLabelTask, RunContext, UsageError
from trainlab_plugins.image.base import ImageTask
from trainlab_plugins.image.folder import Splits
from trainlab_plugins.image.labels import LabelSets


class ImageMultiLabelTask(ImageTask, MultiLabelTask):
    """A table of images and label sets -> a CNN with one output per label; see docs/tasks/image-multilabel.md."""

    target_dtype = "float32"

    def label_reader(self) -> LabelSets:
        return LabelSets(str(self.params.get("label_separator", ";")))

    def _target_width(self) -> int:
        return len(self.label_names)

    def prepare(self, data_path: str, ctx: RunContext, label_names: Sequence[str] | None = None) -> DataSummary:
        try:
            self.threshold_setting()
        except ValueError as exc:
            raise UsageError(f"bad value for parameter threshold: {exc}") from None
        if not str(self.params.get("label_separator", ";")):
            raise UsageError("bad value for parameter label_separator: it must not be empty")
        return super().prepare(data_path, ctx, label_names)

    def describe_targets(self, found: Splits, summary: DataSummary) -> None:
        sizes = {split: [int(sum(t)) for _, t in items] for split, items in found.items.items()}
        summary.extra["images"] = {split: len(n) for split, n in sizes.items()}
        summary.extra["images_without_labels"] = {split: n.count(0) for split, n in sizes.items()}
        train = sizes.get("train", [])
        if train:
            summary.extra["labels_per_image"] = round(sum(train) / len(train), 3)
        counts = summary.counts
        if "val" in counts and "train" in counts:
            missing = [name for name in self.label_names if counts["train"].get(name) and not counts["val"].get(name)]
            if missing:
                summary.warnings.append(f"labels with no validation images: {', '.join(missing)}")
            always = [name for name in self.label_names if train and counts["train"].get(name) == len(train)]
            if always:
                summary.warnings.append(f"labels on every training image (nothing to tell apart): {', '.join(always)}")

    def output_description(self) -> dict[str, Any]:
        return {
            "kind": "logits",
            "activation": "sigmoid",
            "thresholds": self.decision_thresholds(),
            "threshold_setting": str(self.params.get("threshold", "0.5")),
            "value": "label j is predicted when sigmoid(output j) >= thresholds[j]",
        }

"""Multi-label classification: any number of labels per example.

The model gives one logit per label; the loss is binary cross-entropy per
label (with ``pos_weight`` from the label frequencies when class weighting
is on).  A label is predicted when its probability reaches its threshold:
the task parameter ``threshold`` is a number (default 0.5, every label) or
``auto``, in which case each label's threshold is chosen on the validation
split to maximise that label's F1 (``calibrate``) and recorded with the
model as fitted state.

The report: ``micro_f1`` (over every example-label decision), ``macro_f1``
(the mean F1 of the labels that occur in the split), per label precision,
recall, F1, support, how often it was predicted and its threshold (counts
from torchmetrics' stat scores), and the examples whose predicted set is
wrong.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from trainlab.api.families.base import MetricAccumulator, plain
from trainlab.api.taskbase import EvalBatch, Task

DEFAULT_THRESHOLD = 0.5
WRONG_EXAMPLES = 500
CORRECT_EXAMPLES = 50
SCORES_SHOWN = 5
# candidate thresholds for ``auto``: fine enough to matter, coarse enough not
# to overfit a small validation split
THRESHOLD_GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))


def parse_threshold(value: Any) -> float | None:
    """A number in (0, 1), or None for ``auto``; ValueError otherwise."""
    text = str(value).strip().lower()
    if text == "auto":
        return None
    number = float(text)
    if not 0.0 < number < 1.0:
        raise ValueError(f"threshold must be auto or a number between 0 and 1 (exclusive), not {value!r}")
    return number


def _f1(tp, fp, fn):
    import torch

    precision = torch.where(tp + fp > 0, tp / (tp + fp).clamp(min=1), torch.zeros_like(tp))
    recall = torch.where(tp + fn > 0, tp / (tp + fn).clamp(min=1), torch.zeros_like(tp))
    f1 = torch.where(precision + recall > 0, 2 * precision * recall / (precision + recall).clamp(min=1e-12), torch.zeros_like(tp))
    return precision, recall, f1


class MultiLabelMetrics(MetricAccumulator):
    """Sigmoid over the outputs (one logit per label), then per-label decisions."""

    family = "multilabel"

    def probabilities(self) -> Any:
        return self.outputs.sigmoid()

    def decisions(self, thresholds: Sequence[float]) -> Any:
        import torch

        return (self.probabilities() >= torch.tensor(list(thresholds), dtype=torch.float32)).int()

    def best_thresholds(self, grid: Sequence[float] = THRESHOLD_GRID) -> list[float]:
        """Per label, the grid threshold with the best F1 on this split (ties:
        the one nearest 0.5); a label absent from the split keeps 0.5."""
        probs = self.probabilities()
        targets = self.targets.int()
        n_labels = probs.shape[1] if probs.ndim == 2 else len(self.task.label_names)
        chosen = []
        for j in range(n_labels):
            if probs.numel() == 0 or int(targets[:, j].sum()) == 0:
                chosen.append(DEFAULT_THRESHOLD)
                continue
            best, best_f1 = DEFAULT_THRESHOLD, -1.0
            for threshold in sorted(grid, key=lambda t: abs(t - DEFAULT_THRESHOLD)):
                pred = (probs[:, j] >= threshold).int()
                tp = float(((pred == 1) & (targets[:, j] == 1)).sum())
                fp = float(((pred == 1) & (targets[:, j] == 0)).sum())
                fn = float(((pred == 0) & (targets[:, j] == 1)).sum())
                f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
                if f1 > best_f1 + 1e-12:
                    best, best_f1 = threshold, f1
            chosen.append(float(best))
        return chosen

    def compute(self) -> dict[str, Any]:
        import torch
        from torchmetrics.functional.classification import multilabel_stat_scores

        names = list(self.task.label_names)
        n_labels = len(names)
        thresholds = list(self.task.decision_thresholds())
        if self.samples == 0 or n_labels == 0:
            return self.report({"micro_f1": math.nan, "macro_f1": math.nan}, label_names=names, thresholds=thresholds, per_label=[])
        probs = self.probabilities()
        targets = self.targets.int()
        preds = self.decisions(thresholds)
        # rows of [tp, fp, tn, fn, support] per label
        stats = multilabel_stat_scores(preds, targets, num_labels=n_labels, threshold=0.5, average="none").double()
        tp, fp, fn, support = stats[:, 0], stats[:, 1], stats[:, 3], stats[:, 4]
        precision, recall, f1 = _f1(tp, fp, fn)
        _, _, micro = _f1(tp.sum(), fp.sum(), fn.sum())
        present = support > 0
        macro = float(f1[present].mean()) if bool(present.any()) else math.nan
        per_label = [
            {
                "label": names[j],
                "precision": float(precision[j]),
                "recall": float(recall[j]),
                "f1": float(f1[j]),
                "support": int(support[j]),
                "predicted": int(tp[j] + fp[j]),
                "threshold": float(thresholds[j]),
            }
            for j in range(n_labels)
        ]
        metrics = {"micro_f1": float(micro), "macro_f1": macro}
        declared = {m.name for m in self.task.spec.metric_specs()}
        metrics = {k: v for k, v in metrics.items() if k in declared} or metrics
        wrong_count = (preds != targets).sum(dim=1)
        # most wrong first; among equals, the most confident mistakes first
        confidence = (probs - 0.5).abs().mean(dim=1)
        order = sorted(range(self.samples), key=lambda i: (-int(wrong_count[i]), -float(confidence[i])))
        wrong = [i for i in order if int(wrong_count[i])][:WRONG_EXAMPLES]
        right = [i for i in order if not int(wrong_count[i])][:CORRECT_EXAMPLES]
        keys = self.example_keys()
        chosen = wrong + right
        described = self.describe([keys[i] for i in chosen]) if keys else [str(i) for i in chosen]
        text = dict(zip(chosen, described))

        def example(i: int) -> dict[str, Any]:
            top = torch.argsort(probs[i], descending=True)[:SCORES_SHOWN].tolist()
            return {
                "key": plain(keys[i]) if keys else i,
                "example": text[i],
                "true": [names[j] for j in range(n_labels) if int(targets[i, j])],
                "predicted": [names[j] for j in range(n_labels) if int(preds[i, j])],
                "scores": [[names[j], float(probs[i, j])] for j in top],
            }

        return self.report(
            metrics,
            label_names=names,
            thresholds=thresholds,
            per_label=per_label,
            labels_per_example=float(targets.sum(dim=1).double().mean()),
            misclassified=[example(i) for i in wrong],
            correct_examples=[example(i) for i in right],
        )


class MultiLabelTask(Task):
    """A task whose model maps a batch to one logit per label of ``label_names``.

    Implement ``forward(model, batch) -> (logits [n, labels], targets [n,
    labels] of 0/1)`` and optionally ``batch_keys(batch)``.  Declare the
    ``threshold`` parameter (``Param("threshold", "str", "0.5", ...)``: a
    number, or ``auto``).  Its predictor returns ``LabelSet``
    (``trainlab.api.predictions``); ``decision_thresholds()`` gives the
    threshold of each label.
    """

    thresholds: list[float] | None = None  # fitted (auto) or fixed; None until known

    def threshold_setting(self) -> float | None:
        """The ``threshold`` parameter: a number, or None for ``auto``."""
        return parse_threshold(self.params.get("threshold", DEFAULT_THRESHOLD))

    def decision_thresholds(self) -> list[float]:
        n = len(self.label_names)
        if self.thresholds is not None and len(self.thresholds) == n:
            return list(self.thresholds)
        fixed = self.threshold_setting()
        return [fixed if fixed is not None else DEFAULT_THRESHOLD] * n

    def forward(self, model: Any, batch: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def batch_keys(self, batch: Any) -> Sequence[Any] | None:
        return None

    def _pos_weight(self, ctx: Any, like: Any) -> Any:
        if not bool(ctx.params.get("class_weighting")):
            return None
        cached = getattr(self, "_pos_weight_cache", None)
        if cached is None:
            import torch

            counts = torch.tensor([float(c) for c in self.label_counts()] or [0.0] * like.shape[1])
            total = float(len(self.dataset("train")))
            # negatives per positive, bounded so a label seen once cannot dominate
            cached = ((total - counts) / counts.clamp(min=1.0)).clamp(min=1.0, max=100.0)
            self._pos_weight_cache = cached
        return cached.to(device=like.device, dtype=like.dtype)

    def train_step(self, model, batch, ctx):
        import torch.nn.functional as F

        logits, targets = self.forward(model, batch)
        targets = targets.to(logits.dtype)
        loss = F.binary_cross_entropy_with_logits(logits, targets, pos_weight=self._pos_weight(ctx, logits))
        return loss, int(targets.shape[0])

    def eval_step(self, model, batch, ctx):
        import torch.nn.functional as F

        logits, targets = self.forward(model, batch)
        logits = logits.float()
        per_example = F.binary_cross_entropy_with_logits(logits, targets.float(), reduction="none").mean(dim=1)
        return EvalBatch(loss_sum=per_example.sum(), outputs=logits, targets=targets, keys=self.batch_keys(batch))

    def metric_accumulator(self, split: str) -> MultiLabelMetrics:
        return MultiLabelMetrics(self, split)

    def calibrate(self, split: str, accumulator: Any) -> None:
        if self.threshold_setting() is None and isinstance(accumulator, MultiLabelMetrics):
            self.thresholds = accumulator.best_thresholds()

    def fitted_state(self) -> dict[str, Any]:
        state = dict(super().fitted_state())
        if self.thresholds is not None:
            state["thresholds"] = list(self.thresholds)
        return state

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        super().load_fitted_state(state)
        if state.get("thresholds") is not None:
            self.thresholds = [float(t) for t in state["thresholds"]]

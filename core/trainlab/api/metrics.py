"""Classification metrics from predicted probabilities (numpy only)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

MAX_MISCLASSIFIED = 1000
CORRECT_PER_CLASS = 20


def classification_report(
    probs: np.ndarray,
    targets: np.ndarray,
    label_names: Sequence[str],
    *,
    loss: float | None = None,
    examples: Sequence[str] | None = None,
    keys: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """accuracy, macro_f1, per-class table, confusion matrix, top-5, examples."""
    probs = np.asarray(probs, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.int64)
    n_classes = len(label_names)
    n = int(targets.shape[0])
    preds = probs.argmax(axis=1) if n else np.zeros(0, dtype=np.int64)
    confusion = np.zeros((n_classes, n_classes), dtype=np.int64)
    np.add.at(confusion, (targets, preds), 1)
    tp = np.diag(confusion).astype(np.float64)
    support = confusion.sum(axis=1).astype(np.float64)
    predicted = confusion.sum(axis=0).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(predicted > 0, tp / predicted, 0.0)
        recall = np.where(support > 0, tp / support, 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    present = support > 0
    report: dict[str, Any] = {
        "samples": n,
        "accuracy": float(tp.sum() / n) if n else 0.0,
        # macro over the classes present in this split (sklearn's labels=present)
        "macro_f1": float(f1[present].mean()) if present.any() else 0.0,
        "label_names": list(label_names),
        "per_class": [
            {
                "label": label_names[i],
                "precision": float(precision[i]),
                "recall": float(recall[i]),
                "f1": float(f1[i]),
                "support": int(support[i]),
            }
            for i in range(n_classes)
        ],
        "confusion_matrix": confusion.tolist(),
    }
    if loss is not None:
        report["loss"] = float(loss)
    if n_classes > 5 and n:
        top5 = np.argsort(-probs, axis=1)[:, :5]
        report["top5_accuracy"] = float((top5 == targets[:, None]).any(axis=1).mean())
    confidence = probs[np.arange(n), preds] if n else np.zeros(0)
    names = list(examples) if examples is not None else [str(k) for k in (keys if keys is not None else range(n))]
    key_list = list(keys) if keys is not None else list(range(n))

    def item(i: int) -> dict[str, Any]:
        return {
            "key": _plain(key_list[i]),
            "example": names[i],
            "true": label_names[targets[i]],
            "predicted": label_names[preds[i]],
            "confidence": float(confidence[i]),
        }

    wrong = np.flatnonzero(preds != targets)
    wrong = wrong[np.argsort(-confidence[wrong], kind="stable")][:MAX_MISCLASSIFIED]
    report["misclassified"] = [item(int(i)) for i in wrong]
    correct = []
    for c in range(n_classes):
        right = np.flatnonzero((preds == targets) & (targets == c))
        right = right[np.argsort(-confidence[right], kind="stable")][:CORRECT_PER_CLASS]
        correct += [item(int(i)) for i in right]
    report["correct_examples"] = correct
    return report


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)

"""The object-detection family's evaluation: COCO mAP from boxes.

Each ``EvalBatch`` of a detection task carries, per image, ``outputs`` a
dict of predicted ``boxes`` (XYXY pixels), ``scores`` and ``labels``
(1..n, 0 being the background) and ``targets`` a dict of true ``boxes``,
``labels`` and ``iscrowd`` (crowd boxes: a match to one is neither a true
nor a false positive), both as lists (``trainlab.ExampleList``).

``state()`` flattens a pass into tensors (boxes of all images end to end and
each image's count) so that the ranks of a run over several GPUs send their
shares as safetensors; ``merge`` cuts them back into images.  ``compute``
runs torchmetrics' ``MeanAveragePrecision`` (the faster-coco-eval backend,
the COCO evaluation's figures) once on every image of the split:

* ``map`` (mAP@0.5:0.95), ``map50``, ``map75`` and ``mar_100`` (recall
  with at most 100 detections an image), the metrics a detection task
  declares (``trainlab_plugins.detection.METRICS``);
* details: per-class AP, AP50 and recall; precision-recall curves at IoU
  0.5 per class; the images the model got most wrong (missed and false
  boxes at IoU 0.5 and score ``threshold``), with their true and predicted
  boxes, worst first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trainlab.api.details import Box, BoxedImage
from trainlab.api.families.base import MetricAccumulator

WORST_IMAGES = 50  # images listed in the worst-images detail
SHOWN_SCORE = 0.3  # predictions counted as found from this score (and drawn from it until the window's slider moves)
KEPT_SCORE = 0.05  # predictions kept with a worst image, so that a lower threshold can show them


def _boxes_by_image(boxes: Any, counts: Any) -> list[Any]:
    return list(boxes.split([int(c) for c in counts.tolist()])) if len(counts) else []


class DetectionMetrics(MetricAccumulator):
    """Collects one split's predicted and true boxes; computes COCO mAP."""

    family = "object-detection"

    def __init__(self, task: Any, split: str) -> None:
        super().__init__(task, split)
        self.predictions: list[dict[str, Any]] = []
        self.truths: list[dict[str, Any]] = []
        self.extra: dict[str, Any] = {}  # what the task adds to the report (the training loss by part)

    # -- the engine's side -------------------------------------------------
    def update(self, batch: Any) -> None:
        self.add_loss(batch.loss_sum)
        for output, target in zip(batch.outputs, batch.targets):
            self.predictions.append({k: output[k].detach().float().cpu() if k != "labels" else output[k].detach().cpu().long()
                                     for k in ("boxes", "scores", "labels")})  # fmt: skip
            self.truths.append({
                "boxes": target["boxes"].detach().float().cpu(),
                "labels": target["labels"].detach().cpu().long(),
                "iscrowd": target.get("iscrowd", target["labels"].new_zeros(len(target["labels"]))).detach().cpu().bool(),
            })  # fmt: skip
        self.samples += len(batch.outputs)
        if batch.keys is None:
            self._has_keys = False
        else:
            self.keys.extend(int(k) for k in batch.keys)

    def state(self) -> dict[str, Any]:
        import torch

        def cat(rows: list[dict[str, Any]], key: str, shape: tuple[int, ...], dtype: Any) -> Any:
            return torch.cat([r[key] for r in rows]) if rows else torch.zeros(shape, dtype=dtype)

        return {
            "pred_boxes": cat(self.predictions, "boxes", (0, 4), torch.float32),
            "pred_scores": cat(self.predictions, "scores", (0,), torch.float32),
            "pred_labels": cat(self.predictions, "labels", (0,), torch.int64),
            "pred_counts": torch.tensor([len(r["labels"]) for r in self.predictions], dtype=torch.int64),
            "true_boxes": cat(self.truths, "boxes", (0, 4), torch.float32),
            "true_labels": cat(self.truths, "labels", (0,), torch.int64),
            "true_crowd": cat(self.truths, "iscrowd", (0,), torch.bool).to(torch.uint8),
            "true_counts": torch.tensor([len(r["labels"]) for r in self.truths], dtype=torch.int64),
            "keys": list(self.keys) if self._has_keys else None,
            "loss_sum": self.loss_sum,
            "samples": self.samples,
            "extra": self.extra,
        }

    def merge(self, state: dict[str, Any]) -> None:
        counts = state["pred_counts"]
        for boxes, scores, labels in zip(_boxes_by_image(state["pred_boxes"], counts),
                                         _boxes_by_image(state["pred_scores"], counts),
                                         _boxes_by_image(state["pred_labels"], counts)):  # fmt: skip
            self.predictions.append({"boxes": boxes, "scores": scores, "labels": labels})
        counts = state["true_counts"]
        for boxes, labels, crowd in zip(_boxes_by_image(state["true_boxes"], counts),
                                        _boxes_by_image(state["true_labels"], counts),
                                        _boxes_by_image(state["true_crowd"], counts)):  # fmt: skip
            self.truths.append({"boxes": boxes, "labels": labels, "iscrowd": crowd.bool()})
        if state.get("keys") is None:
            self._has_keys = False
        else:
            self.keys.extend(int(k) for k in state["keys"])
        self.merge_loss(state.get("loss_sum"))
        self.samples += int(state["samples"])
        if state.get("extra") and not self.extra:
            self.extra = dict(state["extra"])

    # -- the report ------------------------------------------------------------
    def class_names(self) -> list[str]:
        return [str(n) for n in getattr(self.task, "label_names", [])]

    def mean_average_precision(self) -> dict[str, Any]:
        """torchmetrics' COCO figures over the whole split (per class too, with precision arrays)."""
        from torchmetrics.detection import MeanAveragePrecision

        metric = MeanAveragePrecision(box_format="xyxy", iou_type="bbox", class_metrics=True,
                                      extended_summary=True, backend="faster_coco_eval")  # fmt: skip
        if self.predictions:
            metric.update(self.predictions, self.truths)
        return metric.compute()

    def compute(self) -> dict[str, Any]:
        result = self.mean_average_precision()
        metrics = {
            name: max(0.0, float(result[key]))  # -1: no true box of any class in the split
            for name, key in (("map", "map"), ("map50", "map_50"), ("map75", "map_75"), ("mar_100", "mar_100"))
        }
        names = self.class_names()
        per_class = self._per_class(result, names)
        details: dict[str, Any] = {}
        declared = {d.name for d in self.task.spec.detail_specs()} if getattr(self.task, "spec", None) else set()
        if "per_class" in declared:
            details["per_class"] = per_class
        if "pr_curves" in declared:
            details["pr_curves"] = self._curves(result, names)
        if "worst_images" in declared:
            details["worst_images"] = self._worst_images(names)
        extra = {"per_class_ap": {row["class"]: row["ap"] for row in per_class}}
        extra.update(self.extra)
        return self.report(metrics, details=details or None, **extra)

    def _per_class(self, result: dict[str, Any], names: Sequence[str]) -> list[dict[str, Any]]:
        import torch

        classes = result.get("classes")
        classes = [int(c) for c in torch.atleast_1d(classes).tolist()] if classes is not None else []
        ap = torch.atleast_1d(result["map_per_class"]).tolist()
        recall = torch.atleast_1d(result["mar_100_per_class"]).tolist()
        precision = result.get("precision")  # (IoU thresholds, recall points, classes, areas, max detections)
        boxes = {c: 0 for c in classes}
        for truth in self.truths:
            for label in truth["labels"].tolist():
                boxes[label] = boxes.get(label, 0) + 1
        rows = []
        for i, label in enumerate(classes):
            ap50 = None
            if precision is not None and precision.dim() == 5 and i < precision.shape[2]:
                curve = precision[0, :, i, 0, -1]
                ap50 = float(curve[curve > -1].mean()) if bool((curve > -1).any()) else None
            name = names[label - 1] if 0 < label <= len(names) else str(label)
            rows.append({"class": name, "ap": _or_none(ap[i] if i < len(ap) else -1), "ap50": ap50,
                         "recall": _or_none(recall[i] if i < len(recall) else -1), "boxes": boxes.get(label, 0)})  # fmt: skip
        return rows

    def _curves(self, result: dict[str, Any], names: Sequence[str]) -> list[dict[str, Any]]:
        """Precision against recall at IoU 0.5, a line per class (COCO's 101 recall points)."""
        import torch

        precision = result.get("precision")
        classes = result.get("classes")
        if precision is None or precision.dim() != 5 or classes is None:
            return []
        recall_points = [i / 100 for i in range(precision.shape[1])]
        lines = []
        for i, label in enumerate(torch.atleast_1d(classes).tolist()):
            if i >= precision.shape[2]:
                break
            curve = precision[0, :, i, 0, -1].tolist()
            if all(p < 0 for p in curve):
                continue
            name = names[int(label) - 1] if 0 < int(label) <= len(names) else str(label)
            lines.append({"x": recall_points, "y": [max(0.0, p) for p in curve], "label": name})
        return lines

    def _worst_images(self, names: Sequence[str]) -> list[dict[str, Any]]:
        """The images with the most missed and false boxes (IoU 0.5, scores from ``SHOWN_SCORE``)."""
        from torchvision.ops import box_iou

        keys = self.example_keys() or list(range(len(self.truths)))
        paths = self.describe(keys)
        rows = []
        for index, (pred, truth) in enumerate(zip(self.predictions, self.truths)):
            shown = pred["scores"] >= SHOWN_SCORE
            p_boxes, p_labels, p_scores = pred["boxes"][shown], pred["labels"][shown], pred["scores"][shown]
            matched_true: set[int] = set()
            false_positives = 0
            if len(p_boxes) and len(truth["boxes"]):
                iou = box_iou(p_boxes, truth["boxes"])
                for p in p_scores.argsort(descending=True).tolist():
                    best, best_iou = -1, 0.5
                    for t in range(len(truth["boxes"])):
                        same = int(truth["labels"][t]) == int(p_labels[p])
                        if same and t not in matched_true and float(iou[p, t]) >= best_iou:
                            best, best_iou = t, float(iou[p, t])
                    if best >= 0:
                        matched_true.add(best)
                    else:
                        false_positives += 1
            else:
                false_positives = len(p_boxes)
            counted = [t for t in range(len(truth["boxes"])) if not bool(truth["iscrowd"][t])]
            missed = sum(1 for t in counted if t not in matched_true)
            label = lambda value: names[int(value) - 1] if 0 < int(value) <= len(names) else str(int(value))
            boxes = [Box(*[float(v) for v in b.tolist()], label=label(lab), role="true")
                     for b, lab in zip(truth["boxes"], truth["labels"])]  # fmt: skip
            kept = pred["scores"] >= KEPT_SCORE
            boxes += [Box(*[float(v) for v in b.tolist()], label=label(lab), score=float(s), role="predicted")
                      for b, lab, s in zip(pred["boxes"][kept], pred["labels"][kept], pred["scores"][kept])]  # fmt: skip
            rows.append({"image": BoxedImage(str(paths[index]) if index < len(paths) else str(keys[index]), tuple(boxes)),
                         "errors": missed + false_positives, "missed": missed, "false_positives": false_positives})  # fmt: skip
        rows.sort(key=lambda r: -r["errors"])
        return rows[:WORST_IMAGES]


def _or_none(value: float) -> float | None:
    return None if value < 0 else float(value)

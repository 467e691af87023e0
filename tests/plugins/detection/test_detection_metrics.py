"""object-detection's evaluation: COCO AP as computed by hand, as pycocotools computes it, and merged across ranks."""

from __future__ import annotations

import pytest
import torch
from trainlab import DetectionMetrics, EvalBatch, ExampleList
from trainlab.engine.distributed import _state_bytes, _state_from_bytes
from trainlab_plugins.detection import SPEC


class _Task:
    spec = SPEC
    label_names = ("cell", "dust")

    def describe_examples(self, split, keys):
        return [f"img{k}.png" for k in keys]


def _batch(preds, truths, keys):
    outputs = ExampleList({"boxes": torch.tensor(b, dtype=torch.float32).reshape(-1, 4), "scores": torch.tensor(s),
                           "labels": torch.tensor(lab, dtype=torch.int64)} for b, s, lab in preds)  # fmt: skip
    targets = ExampleList({"boxes": torch.tensor(b, dtype=torch.float32).reshape(-1, 4), "labels": torch.tensor(lab, dtype=torch.int64),
                           "iscrowd": torch.zeros(len(lab), dtype=torch.bool)} for b, lab in truths)  # fmt: skip
    return EvalBatch(loss_sum=None, outputs=outputs, targets=targets, keys=keys)  # as the task's: detectors give no loss in evaluation


def test_ap_equals_the_hand_computed_value():
    # One class, two true boxes; the model finds the first (score 0.9), adds a false box (0.8), misses the second.
    # Precision 1 up to recall 0.5, nothing beyond: 51 of COCO's 101 recall points (0, 0.01, ..., 0.5) at precision 1.
    acc = DetectionMetrics(_Task(), "val")
    acc.update(_batch([([[10, 10, 30, 30], [60, 60, 80, 80]], [0.9, 0.8], [1, 1])],
                      [([[10, 10, 30, 30], [40, 0, 60, 20]], [1, 1])], [0]))  # fmt: skip
    report = acc.compute()
    assert report["map"] == pytest.approx(51 / 101, abs=1e-6)
    assert report["map50"] == pytest.approx(51 / 101, abs=1e-6)
    assert report["mar_100"] == pytest.approx(0.5, abs=1e-6)
    per_class = next(d for d in report["details"] if d["name"] == "per_class")["rows"]
    assert per_class[0]["class"] == "cell" and per_class[0]["boxes"] == 2
    worst = next(d for d in report["details"] if d["name"] == "worst_images")["rows"][0]
    assert (worst["missed"], worst["false_positives"], worst["errors"]) == (1, 1, 2)
    assert worst["image"]["image"] == "img0.png" and len(worst["image"]["boxes"]) == 4


def _random_case(seed: int, images: int = 12):
    gen = torch.Generator().manual_seed(seed)
    preds, truths = [], []
    for _ in range(images):
        n = int(torch.randint(1, 5, (1,), generator=gen))
        xy = torch.rand(n, 2, generator=gen) * 80
        wh = torch.rand(n, 2, generator=gen) * 30 + 5
        true = torch.cat([xy, xy + wh], 1)
        labels = torch.randint(1, 3, (n,), generator=gen)
        jitter = torch.randn(n, 4, generator=gen) * 3
        extra = torch.cat([xy.flip(0), xy.flip(0) + wh], 1)
        boxes = torch.cat([true + jitter, extra])
        scores = torch.rand(2 * n, generator=gen)
        plabels = torch.cat([labels, torch.randint(1, 3, (n,), generator=gen)])
        preds.append((boxes.tolist(), scores.tolist(), plabels.tolist()))
        truths.append((true.tolist(), labels.tolist()))
    return preds, truths


def test_the_faster_backend_gives_pycocotools_figures():
    pytest.importorskip("pycocotools")
    from torchmetrics.detection import MeanAveragePrecision

    preds, truths = _random_case(3)
    acc = DetectionMetrics(_Task(), "val")
    acc.update(_batch(preds, truths, list(range(len(preds)))))
    ours = acc.mean_average_precision()
    reference = MeanAveragePrecision(box_format="xyxy", iou_type="bbox", backend="pycocotools")
    reference.update(acc.predictions, acc.truths)
    theirs = reference.compute()
    for key in ("map", "map_50", "map_75", "mar_100"):
        assert float(ours[key]) == pytest.approx(float(theirs[key]), abs=1e-6), key
    assert 0.05 < float(ours["map"]) < 0.95  # a case that tells right from wrong


def test_two_ranks_shares_merge_to_the_one_process_report():
    preds, truths = _random_case(5)
    whole = DetectionMetrics(_Task(), "val")
    whole.update(_batch(preds, truths, list(range(12))))
    merged = DetectionMetrics(_Task(), "val")
    for part in (range(0, 12, 2), range(1, 12, 2)):  # batches dealt out to two ranks
        share = DetectionMetrics(_Task(), "val")
        part = list(part)
        share.update(_batch([preds[i] for i in part], [truths[i] for i in part], part))
        merged.merge(_state_from_bytes(_state_bytes(share.state())))  # as the ranks send them
    a, b = whole.compute(), merged.compute()
    assert a["metrics"] == b["metrics"] and a["samples"] == b["samples"] == 12
    assert a["loss"] is None and b["loss"] is None  # no rank measured a loss: none, not 0
    assert a["per_class_ap"] == b["per_class_ap"]

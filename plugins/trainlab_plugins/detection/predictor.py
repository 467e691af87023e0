"""``trainlab predict`` and try-it for a detection model folder: images in, boxes out."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from trainlab import DataError

from trainlab_plugins.detection.dataset import decode
from trainlab_plugins.detection.networks import build_detector, detect_tiled, drop_repeats_across_classes
from trainlab_plugins.detection.predictions import DetectedBoxes, Detection

BATCH = 8


def load_detector(model_dir: Path, device: Any) -> tuple[torch.nn.Module, dict[str, Any]]:
    from safetensors.torch import load_file

    meta = json.loads((model_dir / "model.json").read_text(encoding="utf-8"))
    model = build_detector(meta["architecture"], len(meta["classes"]), int(meta["image_size"]), score_thresh=0.05, detections_per_img=100)
    model.load_state_dict(load_file(str(model_dir / "model.safetensors")))
    return model.to(device).eval(), meta


def make_predictor(
    model_dir: Path, device: Any, threshold: float | None = None, cross_class_iou: float | None = None
) -> Callable[[list[str], int], list[Any]]:
    """Boxes for images; ``threshold`` and ``cross_class_iou`` default to the folder's model.json
    (a folder written before the latter existed keeps every box)."""
    model, meta = load_detector(model_dir, device)
    classes, ids = list(meta["classes"]), list(meta["category_ids"])
    cutoff = float(meta.get("score_threshold", 0.3) if threshold is None else threshold)
    overlap = float(meta.get("cross_class_iou", 1.0) if cross_class_iou is None else cross_class_iou)
    tile = int(meta.get("tile") or 0)

    def load(path: str) -> torch.Tensor | DataError:
        try:
            return decode(path)
        except (OSError, ValueError) as exc:
            return DataError(f"cannot read image {path}: {exc}")  # this input only

    def predict(inputs: list[str], top_k: int) -> list[Any]:
        results: list[Any] = []
        for start in range(0, len(inputs), BATCH):
            paths = inputs[start : start + BATCH]
            loaded = [load(p) for p in paths]
            images = [x.to(device).float().div_(255.0) for x in loaded if isinstance(x, torch.Tensor)]
            outputs = iter([])
            if images:
                with torch.inference_mode():
                    outputs = iter([detect_tiled(model, x, tile) for x in images] if tile else model(images))
            for path, image in zip(paths, loaded):
                if isinstance(image, DataError):
                    results.append(image)
                    continue
                out = drop_repeats_across_classes(next(outputs), overlap)
                keep = out["scores"] >= cutoff
                boxes = tuple(
                    Detection(classes[int(lab) - 1], float(score), tuple(float(v) for v in box.tolist()), ids[int(lab) - 1])
                    for box, score, lab in zip(out["boxes"][keep].cpu(), out["scores"][keep].cpu(), out["labels"][keep].cpu())
                    if 0 < int(lab) <= len(classes)
                )
                results.append(DetectedBoxes(path, int(image.shape[-1]), int(image.shape[-2]), boxes))
        return results

    return predict

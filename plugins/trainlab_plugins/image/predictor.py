"""Predictions from a model folder alone (model.json + model.safetensors), for every image family.

The folder's ``output`` description says how the outputs read: softmax
logits (classification: the top-k labels with their probabilities, as
``(label, probability)`` pairs, read by the engine as ``LabelScores``),
sigmoid logits with a threshold per label (multi-label: ``LabelSet``), or a
standardised value with its scaling (regression: ``Number`` in the target's
units).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch

from trainlab import DataError, LabelSet, Number
from trainlab_plugins.image.decode import UnreadableImage, load_rgb
from trainlab_plugins.image.export import exported_module, load_model_folder
from trainlab_plugins.image.transforms import eval_transform

BATCH = 64


def normalise(pixels: torch.Tensor, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    """uint8 NCHW -> float32 (x / 255 - mean) / std, in one pass on the tensor's device."""
    scale = torch.tensor([255.0 * s for s in std], device=pixels.device).view(1, -1, 1, 1)
    shift = torch.tensor([255.0 * m for m in mean], device=pixels.device).view(1, -1, 1, 1)
    return (pixels.float() - shift) / scale


def _reader(meta: Mapping[str, Any]) -> Callable[[torch.Tensor, int], list[Any]]:
    """outputs of a batch, top_k -> one prediction per image, as the folder's family reads them."""
    labels = list(meta["label_names"])
    output = meta.get("output") or {}
    if output.get("kind") == "value":
        return lambda values, top_k: [Number(float(v)) for v in values.reshape(-1).tolist()]
    if output.get("activation") == "sigmoid":
        thresholds = [float(t) for t in output.get("thresholds") or [0.5] * len(labels)]

        def label_sets(logits: torch.Tensor, top_k: int) -> list[Any]:
            rows = logits.float().sigmoid().tolist()
            return [
                LabelSet(
                    tuple(name for name, p, t in zip(labels, row, thresholds) if p >= t),
                    tuple(zip(labels, row)),
                )
                for row in rows
            ]

        return label_sets

    def top_labels(logits: torch.Tensor, top_k: int) -> list[Any]:
        k = max(1, min(int(top_k), len(labels)))
        values, indices = torch.softmax(logits.float(), dim=1).topk(k, dim=1)
        return [[(labels[i], float(p)) for p, i in zip(vs, ix)] for vs, ix in zip(values.tolist(), indices.tolist())]

    return top_labels


def make_predictor(model_dir: str | Path, device: Any) -> Callable[[list[str], int], list[Any]]:
    network, meta = load_model_folder(model_dir, device)
    model = exported_module(network, meta.get("output") or {}).to(device)  # a value comes back in the target's units
    pre = meta["preprocessing"]
    transform = eval_transform(int(pre["image_size"]), float(pre["crop_fraction"]))
    read = _reader(meta)
    side = int(pre["resize"])

    def load(path: str) -> torch.Tensor | DataError:
        try:
            return transform(load_rgb(path, side))
        except (UnreadableImage, OSError) as exc:
            return DataError(f"cannot read image {path}: {exc}")  # this input only

    def predict(inputs: list[str], top_k: int) -> list[Any]:
        results: list[Any] = []
        # PIL releases the GIL while decoding, so a few threads keep the model fed.
        with ThreadPoolExecutor(max_workers=4) as pool:
            for start in range(0, len(inputs), BATCH):
                loaded = list(pool.map(load, inputs[start : start + BATCH]))
                images = [x for x in loaded if isinstance(x, torch.Tensor)]
                rows: list[Any] = []
                if images:
                    with torch.inference_mode():
                        outputs = model(normalise(torch.stack(images).to(device), pre["mean"], pre["std"])).cpu()
                    rows = read(outputs, top_k)
                rows_left = iter(rows)
                results.extend(x if isinstance(x, DataError) else next(rows_left) for x in loaded)
        return results

    return predict

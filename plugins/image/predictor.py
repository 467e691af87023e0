"""Predictions from a model folder alone (model.json + model.safetensors)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from trainlab import DataError
from trainlab.plugins.image.decode import UnreadableImage, load_rgb
from trainlab.plugins.image.export import load_model_folder
from trainlab.plugins.image.transforms import eval_transform

BATCH = 64


def normalise(pixels: torch.Tensor, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    """uint8 NCHW -> float32 (x / 255 - mean) / std, in one pass on the tensor's device."""
    scale = torch.tensor([255.0 * s for s in std], device=pixels.device).view(1, -1, 1, 1)
    shift = torch.tensor([255.0 * m for m in mean], device=pixels.device).view(1, -1, 1, 1)
    return (pixels.float() - shift) / scale


def make_predictor(model_dir: str | Path, device: Any) -> Callable[[list[str], int], list[list[tuple[str, float]]]]:
    model, meta = load_model_folder(model_dir, device)
    pre = meta["preprocessing"]
    transform = eval_transform(int(pre["image_size"]), float(pre["crop_fraction"]))
    labels = list(meta["label_names"])
    side = int(pre["resize"])

    def load(path: str) -> torch.Tensor | DataError:
        try:
            return transform(load_rgb(path, side))
        except (UnreadableImage, OSError) as exc:
            return DataError(f"cannot read image {path}: {exc}")  # this input only

    def predict(inputs: list[str], top_k: int) -> list[list[tuple[str, float]] | DataError]:
        k = max(1, min(int(top_k), len(labels)))
        results: list[list[tuple[str, float]] | DataError] = []
        # PIL releases the GIL while decoding, so a few threads keep the model fed.
        with ThreadPoolExecutor(max_workers=4) as pool:
            for start in range(0, len(inputs), BATCH):
                loaded = list(pool.map(load, inputs[start : start + BATCH]))
                images = [x for x in loaded if isinstance(x, torch.Tensor)]
                rows: list[list[tuple[str, float]]] = []
                if images:
                    with torch.inference_mode():
                        logits = model(normalise(torch.stack(images).to(device), pre["mean"], pre["std"]))
                        probs = torch.softmax(logits.float(), dim=1)
                        values, indices = probs.topk(k, dim=1)
                    rows = [[(labels[i], float(p)) for p, i in zip(vs, ix)]
                            for vs, ix in zip(values.tolist(), indices.tolist())]
                rows_left = iter(rows)
                results.extend(x if isinstance(x, DataError) else next(rows_left) for x in loaded)
        return results

    return predict

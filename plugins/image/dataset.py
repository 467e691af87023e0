"""The dataset and batch collation (picklable, for loader worker processes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from trainlab.plugins.image.decode import UnreadableImage, load_rgb


class ImageFolderDataset:
    """``items[i] = (path, target)``; yields (uint8 CHW, target, i, error).

    The target is what the task's family learns: a class index, a number, or
    a tuple of 0/1 per label (multi-label).

    A file that cannot be decoded yields ``error = (path, reason)`` and no
    pixels: the collator drops it and the task counts it, so one broken file
    never stops a run.
    """

    def __init__(self, items: Sequence[tuple[str, int]], transform: Callable[[Any], torch.Tensor], decode_side: int):
        self.items = list(items)
        self.transform = transform
        self.decode_side = decode_side

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int):
        path, label = self.items[index]
        try:
            pixels = self.transform(load_rgb(path, self.decode_side))
        except UnreadableImage as exc:
            return None, label, index, (path, str(exc))
        except Exception as exc:  # noqa: BLE001 - a transform failing on one odd file must not end the run
            return None, label, index, (path, f"{type(exc).__name__}: {exc}")
        return pixels, label, index, None


@dataclass(frozen=True)
class SkippedFiles:
    """(path, reason) of the files a batch lost.

    Not a list on purpose: the engine splits tensors and lists of a batch into
    micro-batches (out-of-memory retry) and leaves other objects whole.
    """

    entries: tuple[tuple[str, str], ...] = ()


class ImageBatchCollator:
    """Stacks samples into ``{"pixels", "labels", "keys", "skipped"}``.

    ``labels`` holds the targets: int64 class indices by default, float32
    numbers (``target_dtype="float32"``), or float32 rows of
    ``target_width`` 0/1 values (multi-label).
    """

    def __init__(self, image_size: int, target_dtype: str = "int64", target_width: int = 0):
        self.image_size = image_size
        self.target_dtype = target_dtype
        self.target_width = target_width

    def __call__(self, samples: Sequence[tuple]) -> dict[str, Any]:
        good = [s for s in samples if s[3] is None]
        skipped = [s[3] for s in samples if s[3] is not None]
        if good:
            pixels = torch.stack([s[0] for s in good])
        else:
            pixels = torch.empty((0, 3, self.image_size, self.image_size), dtype=torch.uint8)
        return {
            "pixels": pixels,
            "labels": self._targets([s[1] for s in good]),
            "keys": torch.tensor([s[2] for s in good], dtype=torch.long),
            "skipped": SkippedFiles(tuple(skipped)),
        }

    def _targets(self, targets: list[Any]) -> torch.Tensor:
        dtype = getattr(torch, self.target_dtype)
        if not targets and self.target_width:
            return torch.zeros((0, self.target_width), dtype=dtype)
        return torch.tensor(targets, dtype=dtype)

"""The dataset and batch collation (picklable, for loader worker processes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from trainlab_plugins.image.decode import UnreadableImage, load_rgb


class DecodedImages:
    """Images of one split kept in memory as uint8 tensors, each stored on its first use.

    ``budget`` bytes at most: once an image would overflow it, the rest are
    decoded each time they are read (``full``), as without the cache.  It
    lives with the dataset of one preparation of the data; preparing again
    (another run, a changed data set) starts an empty one.

    With ``shared`` (a uint8 array from ``RunContext.shared_array`` holding
    every image at ``side`` px and then one ready byte per image) the ranks
    of a run on one machine keep one copy between them: an image decoded by
    any rank is read by all, its ready byte set after its pixels are written.
    """

    def __init__(self, size: int, budget: int, shared: torch.Tensor | None = None, side: int = 0):
        self.entries: list[torch.Tensor | None] = [None] * size
        self.budget = int(budget)
        self.used = 0
        self.full = False
        self.pixels: torch.Tensor | None = None
        self.ready: torch.Tensor | None = None
        if shared is not None:
            item = 3 * side * side
            self.pixels = shared[: size * item].view(size, 3, side, side)
            self.ready = shared[size * item : size * item + size]

    @staticmethod
    def shared_bytes(size: int, side: int) -> int:
        """The length of the shared array for ``size`` images of ``side`` px: pixels, then a ready byte each."""
        return size * (3 * side * side + 1)

    def get(self, index: int) -> torch.Tensor | None:
        if self.ready is not None:
            return self.pixels[index] if self.ready[index] else None
        return self.entries[index]

    def put(self, index: int, pixels: torch.Tensor) -> None:
        if self.pixels is not None and pixels.shape == self.pixels.shape[1:] and pixels.dtype == torch.uint8:
            self.pixels[index].copy_(pixels)
            self.ready[index] = 1  # after the pixels: the other ranks read it once they see this
            self.used += pixels.numel()
            return
        size = pixels.numel() * pixels.element_size()
        if self.used + size > self.budget:
            self.full = True
            return
        self.entries[index] = pixels
        self.used += size

    @property
    def shared(self) -> bool:
        return self.ready is not None

    @property
    def stored(self) -> int:
        if self.ready is not None:
            return int(self.ready.sum())  # by every rank of the machine
        return sum(e is not None for e in self.entries)


class ImageFolderDataset:
    """``items[i] = (path, target)``; yields (uint8 CHW, target, i, error).

    The target is what the task's family learns: a class index, a number, or
    a tuple of 0/1 per label (multi-label).

    A file that cannot be decoded yields ``error = (path, reason)`` and no
    pixels: the collator drops it and the task counts it, so one broken file
    never stops a run.

    With a cache (``keep_decoded``) the transform runs in two parts: the
    fixed one (decoding, resizing, and for evaluation the crop) once per
    image, its tensor kept; the random one (augmentation) on that tensor at
    every read.
    """

    def __init__(self, items: Sequence[tuple[str, int]], transform: Callable[[Any], torch.Tensor], decode_side: int):
        self.items = list(items)
        self.transform = transform
        self.decode_side = decode_side
        self.cache: DecodedImages | None = None
        self._fixed: Callable[[Any], torch.Tensor] | None = None
        self._random: Callable[[torch.Tensor], torch.Tensor] | None = None

    def keep_decoded(
        self,
        budget: int,
        fixed: Callable[[Any], torch.Tensor],
        random: Callable[[torch.Tensor], torch.Tensor] | None,
        shared: torch.Tensor | None = None,
        side: int = 0,
    ) -> DecodedImages:
        self.cache = DecodedImages(len(self.items), budget, shared, side)
        self._fixed, self._random = fixed, random
        return self.cache

    def __getstate__(self) -> dict[str, Any]:
        # A worker process would fill a copy of its own: workers decode, uncached.
        state = dict(self.__dict__)
        state["cache"] = None
        return state

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int):
        path, label = self.items[index]
        try:
            pixels = self._read(index, path)
        except UnreadableImage as exc:
            return None, label, index, (path, str(exc))
        except Exception as exc:  # noqa: BLE001 - a transform failing on one odd file must not end the run
            return None, label, index, (path, f"{type(exc).__name__}: {exc}")
        return pixels, label, index, None

    def _read(self, index: int, path: str) -> torch.Tensor:
        cache = self.cache
        if cache is None:
            return self.transform(load_rgb(path, self.decode_side))
        pixels = cache.get(index)
        if pixels is None:
            pixels = self._fixed(load_rgb(path, self.decode_side))
            cache.put(index, pixels)
        return self._random(pixels) if self._random is not None else pixels

    def decode_uncached(self, index: int):
        """``self[index]`` as without the cache, storing nothing (measuring the decoding cost)."""
        cache, self.cache = self.cache, None
        try:
            return self[index]
        finally:
            self.cache = cache


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

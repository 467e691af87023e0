"""Batch order and dynamic padding for token sequences.

Padding every text to ``max_length`` wastes most of the compute on short
texts, and so does padding randomly drawn batches to their longest member (a
batch of 32 nearly always holds one long text).  Length-grouped batching
puts texts of similar length together and shuffles the *batches*, as
Hugging Face's ``LengthGroupedSampler`` does: shuffle, cut into mega-batches
of 50 batches, sort each by length, cut into batches, shuffle the batches.
The order depends only on (seed, epoch), so a resumed run sees the same
batches.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

MEGABATCH_BATCHES = 50


def _rng(seed: int, epoch: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(epoch), 0x7E47])


def _chunks(order: Sequence[int], batch_size: int) -> list[list[int]]:
    return [list(map(int, order[i : i + batch_size])) for i in range(0, len(order), batch_size)]


def random_batches(n: int, batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """Plain shuffled batches (length grouping off)."""
    return _chunks(_rng(seed, epoch).permutation(n), batch_size)


def length_grouped_batches(lengths: Sequence[int], batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """Batches of similar length in random order; the longest batch first.

    The batch holding the longest text comes first so that a batch too big
    for the GPU shows at the first step, not an hour in.
    """
    lengths = np.asarray(lengths)
    rng = _rng(seed, epoch)
    order = rng.permutation(len(lengths))
    span = batch_size * MEGABATCH_BATCHES
    batches: list[list[int]] = []
    for start in range(0, len(order), span):
        mega = order[start : start + span]
        # stable sort of a shuffled slice: equal lengths stay shuffled
        mega = mega[np.argsort(-lengths[mega], kind="stable")]
        batches += _chunks(mega, batch_size)
    permutation = rng.permutation(len(batches))
    batches = [batches[i] for i in permutation]
    if batches:
        longest = max(range(len(batches)), key=lambda b: (lengths[batches[b]].max(), -b))
        batches.insert(0, batches.pop(longest))
    return batches


def sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Evaluation batches by decreasing length: the least padding, fixed order."""
    lengths = np.asarray(lengths)
    return _chunks(np.argsort(-lengths, kind="stable"), batch_size)


class PadCollator:
    """Pads a list of ``EncodedSplit`` items to the longest one in the batch.

    Picklable (loader workers).  ``multiple`` rounds the padded length up
    (8 suits tensor cores on CUDA).  ``max_length`` pads everything to that
    length instead (the slow way; kept for the benchmark).
    """

    def __init__(self, pad_id: int, multiple: int = 1, max_length: int | None = None):
        self.pad_id = int(pad_id)
        self.multiple = max(1, int(multiple))
        self.max_length = max_length

    def __call__(self, items: list[tuple[np.ndarray, np.ndarray | None, Any, int]]) -> dict[str, Any]:
        import torch

        lengths = np.fromiter((len(item[0]) for item in items), dtype=np.int64, count=len(items))
        width = int(self.max_length or lengths.max())
        width = -(-width // self.multiple) * self.multiple
        ids = np.full((len(items), width), self.pad_id, dtype=np.int64)
        with_types = items[0][1] is not None
        types = np.zeros((len(items), width), dtype=np.int64) if with_types else None
        for row, (item_ids, item_types, _, _) in enumerate(items):
            ids[row, : len(item_ids)] = item_ids
            if types is not None:
                types[row, : len(item_types)] = item_types
        mask = (np.arange(width)[None, :] < lengths[:, None]).astype(np.int64)
        batch = {
            "input_ids": torch.from_numpy(ids),
            "attention_mask": torch.from_numpy(mask),
            "labels": _targets([item[2] for item in items]),
            "keys": [item[3] for item in items],
        }
        if types is not None:
            batch["token_type_ids"] = torch.from_numpy(types)
        return batch


def _targets(values: list[Any]) -> Any:
    """The batch's targets as one tensor: class ids as int64 (what cross-entropy
    takes), numbers and multi-hot rows as they were stored (float32)."""
    import torch

    array = np.asarray(values)
    if array.dtype.kind in "iub":
        array = array.astype(np.int64)
    return torch.from_numpy(np.ascontiguousarray(array))

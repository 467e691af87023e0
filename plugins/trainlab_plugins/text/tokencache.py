"""Tokenise each split once per run and keep the token ids compactly.

The seed tokenised every batch of every epoch; here the fast tokenizer runs
once over a split (in chunks, in Rust), and the ids live in one flat int32
array with offsets, so a dataset item is a slice and the dataset pickles
cheaply into loader workers.  Lengths before truncation are kept for the
summary (length statistics, how many texts ``max_length`` cuts).
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from trainlab_plugins.text.data import TextSplit

CHUNK = 2048  # texts per tokenizer call: bounds the memory of the Python lists


@dataclass
class EncodedSplit:
    """Token ids of one split: ``ids[offsets[i]:offsets[i+1]]`` is example i."""

    ids: np.ndarray  # int32, flat
    offsets: np.ndarray  # int64, n + 1
    type_ids: np.ndarray | None  # int8, flat; only for text pairs
    labels: np.ndarray  # the targets: int64 class ids [n], float32 values [n] or multi-hot rows [n, labels]
    full_lengths: np.ndarray  # int32, n: tokens before truncation

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray | None, Any, int]:
        start, end = self.offsets[index], self.offsets[index + 1]
        types = None if self.type_ids is None else self.type_ids[start:end]
        return self.ids[start:end], types, self.labels[index], int(index)


@contextmanager
def _quiet_length_warning() -> Iterator[None]:
    # Tokenising without truncation (to measure true lengths) makes the
    # tokenizer warn about every long text; the summary reports them instead.
    logger = logging.getLogger("transformers.tokenization_utils_base")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _encode(tokenizer: Any, texts: Sequence[str], pairs: Sequence[str] | None, type_ids: bool, **kwargs) -> dict:
    return tokenizer(
        list(texts),
        None if pairs is None else list(pairs),
        add_special_tokens=True,
        return_attention_mask=False,
        return_token_type_ids=type_ids,
        **kwargs,
    )


def encode_split(tokenizer: Any, split: TextSplit, targets: np.ndarray, max_length: int, use_type_ids: bool) -> EncodedSplit:
    """Tokenise a split once; texts longer than ``max_length`` are truncated.

    ``targets``: one row per text, in the task family's form (kept as given).
    """
    with_types = use_type_ids and split.pairs is not None
    ids: list[np.ndarray] = []
    types: list[np.ndarray] = []
    full_lengths: list[int] = []
    with _quiet_length_warning():
        for start in range(0, len(split), CHUNK):
            texts = split.texts[start : start + CHUNK]
            pairs = None if split.pairs is None else split.pairs[start : start + CHUNK]
            enc = _encode(tokenizer, texts, pairs, with_types, truncation=False)
            rows = enc["input_ids"]
            row_types = enc["token_type_ids"] if with_types else None
            long = [i for i, row in enumerate(rows) if len(row) > max_length]
            full_lengths += [len(row) for row in rows]
            if long:
                # only the long ones go through the tokenizer's own truncation
                # (it knows the model's special-token template and pair rules)
                cut = _encode(
                    tokenizer,
                    [texts[i] for i in long],
                    None if pairs is None else [pairs[i] for i in long],
                    with_types,
                    truncation=True,
                    max_length=max_length,
                )
                for j, i in enumerate(long):
                    rows[i] = cut["input_ids"][j]
                    if row_types is not None:
                        row_types[i] = cut["token_type_ids"][j]
            ids += [np.asarray(row, dtype=np.int32) for row in rows]
            if row_types is not None:
                types += [np.asarray(row, dtype=np.int8) for row in row_types]
    lengths = np.fromiter((len(row) for row in ids), dtype=np.int64, count=len(ids))
    offsets = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return EncodedSplit(
        ids=np.concatenate(ids) if ids else np.zeros(0, dtype=np.int32),
        offsets=offsets,
        type_ids=np.concatenate(types) if types else None,
        labels=np.asarray(targets),
        full_lengths=np.asarray(full_lengths, dtype=np.int32),
    )


def length_stats(encoded: EncodedSplit, max_length: int) -> dict[str, Any]:
    """Token length statistics (special tokens included) and the truncation count."""
    full = encoded.full_lengths
    if len(full) == 0:
        return {"examples": 0}
    return {
        "examples": int(len(full)),
        "mean": round(float(full.mean()), 1),
        "median": int(np.median(full)),
        "p95": int(np.percentile(full, 95)),
        "max": int(full.max()),
        "truncated": int((full > max_length).sum()),
        "max_length": int(max_length),
    }

"""Tokenise each split once per run and keep the token ids compactly.

The seed tokenised every batch of every epoch; here the fast tokenizer runs
once over a split (in chunks, in Rust), and the ids live in one flat int32
array with offsets, so a dataset item is a slice and the dataset pickles
cheaply into loader workers.  Lengths before truncation are kept for the
summary (length statistics, how many texts ``max_length`` cuts).

Only a bounded prefix of each text is tokenised: ``PREFIX_CHARS_PER_TOKEN``
characters per ``max_length`` token.  Past a margin, characters beyond the
prefix cannot change the first ``max_length`` tokens (a tokenizer reads a
text word by word, and the words the cut touches lie past the kept tokens),
so the ids are those of the whole text, and tokenising costs memory in
proportion to ``max_length``, never to the longest text.  A text whose
prefix yields too few tokens to be sure (long runs of spaces, a giant
unknown word) is tokenised again with a longer prefix.  A cut text's
length counts the tokens of its prefix: more than ``max_length``, which is
what the truncation count needs, and a floor of its true length (the
statistics' maximum is one).
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from trainlab_plugins.text.data import TextSplit

CHUNK = 2048  # texts per tokenizer call: bounds the memory of the Python lists
CHUNK_CHARS = 1 << 20  # and characters per call
PREFIX_CHARS_PER_TOKEN = 16  # characters of a text tokenised per max_length token
# tokens past max_length a cut text's prefix must yield: the word the cut
# splits (and a pre-tokeniser's view of the characters around it) lies beyond them
CUT_MARGIN_TOKENS = 128


@dataclass
class EncodedSplit:
    """Token ids of one split: ``ids[offsets[i]:offsets[i+1]]`` is example i."""

    ids: np.ndarray  # int32, flat
    offsets: np.ndarray  # int64, n + 1
    type_ids: np.ndarray | None  # int8, flat; only for text pairs
    labels: np.ndarray  # the targets: int64 class ids [n], float32 values [n] or multi-hot rows [n, labels]
    full_lengths: np.ndarray  # int32, n: tokens before truncation (of a bounded prefix: see the module's notes)

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


def prefix_chars(max_length: int) -> int:
    """How many characters of a text (and of its pair) are tokenised for ``max_length`` tokens."""
    return PREFIX_CHARS_PER_TOKEN * (max_length + CUT_MARGIN_TOKENS)


def _chunks(split: TextSplit, limit: int) -> Iterator[range]:
    """Row ranges of at most ``CHUNK`` texts and about ``CHUNK_CHARS`` characters (each text counted to ``limit``)."""
    start, chars = 0, 0
    for i, text in enumerate(split.texts):
        size = min(len(text), limit) + (min(len(split.pairs[i]), limit) if split.pairs is not None else 0)
        if i > start and (i - start >= CHUNK or chars + size > CHUNK_CHARS):
            yield range(start, i)
            start, chars = i, 0
        chars += size
    if start < len(split.texts):
        yield range(start, len(split.texts))


def _count(tokenizer: Any, text: str, pair: str | None, max_length: int, limit: int, with_types: bool) -> tuple[dict, int, str, str | None]:
    """One cut row tokenised again with a longer prefix until its count is sure (or the whole row is read)."""
    while True:
        limit *= 4
        first = text[:limit]
        second = None if pair is None else pair[:limit]
        enc = _encode(tokenizer, [first], None if second is None else [second], with_types, truncation=False)
        whole = len(first) == len(text) and (pair is None or len(second) == len(pair))
        if whole or len(enc["input_ids"][0]) > max_length + CUT_MARGIN_TOKENS:
            return enc, len(enc["input_ids"][0]), first, second


def cut_for_truncation(tokenizer: Any, text: str, pair: str | None, max_length: int) -> tuple[str, str | None]:
    """Prefixes of ``text`` (and ``pair``) that truncate to the same first ``max_length`` tokens as the whole.

    For a caller that tokenises with ``truncation=True`` itself (prediction):
    the tokenizer reads every character it is given before it truncates, and
    truncating a pair costs it memory in the product of the two lengths.
    """
    limit = prefix_chars(max_length)
    if len(text) <= limit and (pair is None or len(pair) <= limit):
        return text, pair
    first, second = text[:limit], None if pair is None else pair[:limit]
    enc = _encode(tokenizer, [first], None if second is None else [second], False, truncation=False)
    if len(enc["input_ids"][0]) > max_length + CUT_MARGIN_TOKENS:
        return first, second
    _, _, first, second = _count(tokenizer, text, pair, max_length, limit, False)
    return first, second


def encode_split(tokenizer: Any, split: TextSplit, targets: np.ndarray, max_length: int, use_type_ids: bool) -> EncodedSplit:
    """Tokenise a split once; texts longer than ``max_length`` are truncated.

    ``targets``: one row per text, in the task family's form (kept as given).
    Each text is read to ``prefix_chars(max_length)`` characters (more when
    that prefix is not enough to be sure of the truncated ids).
    """
    with_types = use_type_ids and split.pairs is not None
    limit = prefix_chars(max_length)
    ids: list[np.ndarray] = []
    types: list[np.ndarray] = []
    full_lengths: list[int] = []
    with _quiet_length_warning():
        for rows_range in _chunks(split, limit):
            texts = [text[:limit] for text in split.texts[rows_range.start : rows_range.stop]]
            whole_texts = split.texts[rows_range.start : rows_range.stop]
            pairs = None if split.pairs is None else [pair[:limit] for pair in split.pairs[rows_range.start : rows_range.stop]]
            whole_pairs = None if split.pairs is None else split.pairs[rows_range.start : rows_range.stop]
            enc = _encode(tokenizer, texts, pairs, with_types, truncation=False)
            rows = enc["input_ids"]
            row_types = enc["token_type_ids"] if with_types else None
            for i, row in enumerate(rows):
                cut = len(texts[i]) < len(whole_texts[i]) or (pairs is not None and len(pairs[i]) < len(whole_pairs[i]))
                if cut and len(row) <= max_length + CUT_MARGIN_TOKENS:
                    again, _, texts[i], second = _count(
                        tokenizer, whole_texts[i], None if whole_pairs is None else whole_pairs[i], max_length, limit, with_types
                    )
                    if pairs is not None:
                        pairs[i] = second
                    rows[i] = again["input_ids"][0]
                    if row_types is not None:
                        row_types[i] = again["token_type_ids"][0]
            long = [i for i, row in enumerate(rows) if len(row) > max_length]
            full_lengths += [len(row) for row in rows]
            if long:
                # only the long ones go through the tokenizer's own truncation
                # (it knows the model's special-token template and pair rules)
                cut_enc = _encode(
                    tokenizer,
                    [texts[i] for i in long],
                    None if pairs is None else [pairs[i] for i in long],
                    with_types,
                    truncation=True,
                    max_length=max_length,
                )
                for j, i in enumerate(long):
                    rows[i] = cut_enc["input_ids"][j]
                    if row_types is not None:
                        row_types[i] = cut_enc["token_type_ids"][j]
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

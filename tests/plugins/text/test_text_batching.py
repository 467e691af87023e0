"""Length-grouped batch order and dynamic padding."""

import numpy as np
import torch

from trainlab_plugins.text.batching import PadCollator, length_grouped_batches, random_batches, sorted_batches


def lognormal_lengths(n=1024, seed=0):
    rng = np.random.default_rng(seed)
    return np.clip(np.rint(rng.lognormal(3.0, 0.7, n)), 4, 128).astype(int)


def padded_slots(batches, lengths):
    return sum(len(b) * max(lengths[i] for i in b) for b in batches)


def test_every_example_once_per_epoch():
    lengths = lognormal_lengths(1000)
    batches = length_grouped_batches(lengths, 32, seed=7, epoch=1)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(1000))
    assert all(len(b) <= 32 for b in batches)


def test_order_depends_only_on_seed_and_epoch():
    lengths = lognormal_lengths()
    assert length_grouped_batches(lengths, 32, seed=7, epoch=2) == length_grouped_batches(lengths, 32, seed=7, epoch=2)
    assert length_grouped_batches(lengths, 32, seed=7, epoch=2) != length_grouped_batches(lengths, 32, seed=7, epoch=3)
    assert length_grouped_batches(lengths, 32, seed=7, epoch=2) != length_grouped_batches(lengths, 32, seed=8, epoch=2)


def test_grouping_cuts_padding_and_still_shuffles_batches():
    lengths = lognormal_lengths()
    grouped = length_grouped_batches(lengths, 32, seed=1, epoch=1)
    shuffled = random_batches(len(lengths), 32, seed=1, epoch=1)
    # far fewer padded token slots than random batches, close to the real tokens
    assert padded_slots(grouped, lengths) < 0.5 * padded_slots(shuffled, lengths)
    assert padded_slots(grouped, lengths) < 1.2 * lengths.sum()
    # batches are not simply in length order: the sequence of batch maxima is shuffled
    maxima = [max(lengths[i] for i in b) for b in grouped[1:]]
    assert maxima != sorted(maxima) and maxima != sorted(maxima, reverse=True)


def test_the_longest_batch_comes_first():
    lengths = lognormal_lengths()
    for epoch in range(1, 4):
        first = length_grouped_batches(lengths, 32, seed=3, epoch=epoch)[0]
        assert lengths.argmax() in first


def test_evaluation_batches_are_sorted_and_complete():
    lengths = lognormal_lengths(100)
    batches = sorted_batches(lengths, 16)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(100))
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)


def item(ids, label=0, key=0, types=None):
    return np.asarray(ids, dtype=np.int32), None if types is None else np.asarray(types, dtype=np.int8), label, key


def test_collator_pads_to_the_longest_and_masks_padding():
    batch = PadCollator(pad_id=0)([item([2, 7, 3], 1, 5), item([2, 9, 9, 9, 3], 0, 6)])
    assert batch["input_ids"].tolist() == [[2, 7, 3, 0, 0], [2, 9, 9, 9, 3]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]
    assert batch["labels"].tolist() == [1, 0] and batch["keys"] == [5, 6]
    assert batch["input_ids"].dtype == torch.long and "token_type_ids" not in batch


def test_collator_rounds_up_and_carries_pair_type_ids():
    batch = PadCollator(pad_id=0, multiple=8)([item([2, 5, 3, 6, 3], types=[0, 0, 0, 1, 1])])
    assert batch["input_ids"].shape == (1, 8)
    assert batch["token_type_ids"].tolist() == [[0, 0, 0, 1, 1, 0, 0, 0]]
    fixed = PadCollator(pad_id=0, max_length=16)([item([2, 3])])
    assert fixed["input_ids"].shape == (1, 16)

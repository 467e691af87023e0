"""Batches whose examples do not stack: counted and split by example, never along a tensor's channels."""

from __future__ import annotations

import torch
from trainlab import ExampleList
from trainlab.api.batches import batch_size_of, move_to_device, split_batch


def _detection_batch(n: int = 5):
    images = ExampleList(torch.rand(3, 20 + 4 * i, 30) for i in range(n))
    targets = ExampleList({"boxes": torch.tensor([[1.0, 1.0, 9.0, 9.0]] * (i + 1)), "labels": torch.ones(i + 1, dtype=torch.long)}
                          for i in range(n))  # fmt: skip
    return images, targets


def test_an_example_list_counts_examples_not_channels():
    images, targets = _detection_batch(5)
    assert batch_size_of((images, targets)) == 5
    assert batch_size_of(list(images)) == 3  # a plain list reads its first tensor's dimension 0: the channels
    assert batch_size_of({"images": images, "keys": torch.arange(5)}) == 5


def test_split_gives_whole_examples_and_weights_that_add_up():
    images, targets = _detection_batch(5)
    pieces = split_batch((images, targets), 2)
    assert [batch_size_of(p) for p in pieces] == [2, 3]
    assert all(isinstance(part, ExampleList) for piece in pieces for part in piece)
    rejoined = [img for piece in pieces for img in piece[0]]
    assert all(a is b for a, b in zip(rejoined, images)) and len(rejoined) == 5
    assert [len(t["labels"]) for piece in pieces for t in piece[1]] == [1, 2, 3, 4, 5]
    # the loop weighs each micro-batch's mean loss by its share of the examples: the same mean as whole
    per_example = torch.tensor([float(len(t["labels"])) for t in targets])
    whole = per_example.mean()
    sizes = [batch_size_of(p) for p in pieces]
    parts = [torch.tensor([float(len(t["labels"])) for t in p[1]]).mean() * s / sum(sizes) for p, s in zip(pieces, sizes)]
    assert torch.isclose(sum(parts), whole)


def test_moving_keeps_the_example_list():
    images, targets = _detection_batch(2)
    moved = move_to_device((images, targets), torch.device("cpu"))
    assert isinstance(moved[0], ExampleList) and isinstance(moved[1], ExampleList)
    assert moved[1][1]["boxes"].shape == (2, 4)

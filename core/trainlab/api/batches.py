"""Moving and splitting batches of nested tensors (dicts, tuples, lists).

A batch's examples are along dimension 0 of its tensors, unless the task
says otherwise: a task whose examples do not stack (images of different
sizes, a dict of boxes per image, as detectors take them) returns them in an
``ExampleList``, one item per example.  The engine counts such a list by its
length and splits it by slicing it, and never slices the tensors inside it
(whose dimension 0 is an image's channels or a box count).
"""

from __future__ import annotations

from typing import Any


class ExampleList(list):
    """A batch's examples, one item each (a tensor, a dict of tensors, ...).

    ``collate`` returns its unstackable parts as these, for example
    ``(ExampleList(images), ExampleList(targets))``: ``batch_size_of`` is the
    list's length and ``split_batch`` gives each micro-batch a slice of it,
    the examples whole.  Moving to a device keeps the type.
    """


def move_to_device(batch: Any, device: Any, non_blocking: bool = True) -> Any:
    import torch

    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, dict):
        return {k: move_to_device(v, device, non_blocking) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # namedtuple
        return type(batch)(*(move_to_device(v, device, non_blocking) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(move_to_device(v, device, non_blocking) for v in batch)
    return batch


def batch_size_of(batch: Any) -> int:
    import torch

    if isinstance(batch, ExampleList):
        return len(batch)
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0])
    if isinstance(batch, dict):
        for value in batch.values():
            size = batch_size_of(value)
            if size:
                return size
    if isinstance(batch, (list, tuple)):
        for value in batch:
            size = batch_size_of(value)
            if size:
                return size
    return 0


def split_batch(batch: Any, parts: int) -> list[Any]:
    """Split every tensor (and list) along dim 0 into ``parts`` micro-batches
    (an ``ExampleList`` by its items).

    Used when CUDA runs out of memory: the same examples go through as
    smaller micro-batches with more gradient accumulation.
    """
    size = batch_size_of(batch)
    parts = max(1, min(parts, size or 1))
    bounds = [round(i * size / parts) for i in range(parts + 1)]
    return [_slice(batch, bounds[i], bounds[i + 1]) for i in range(parts) if bounds[i + 1] > bounds[i]]


def _slice(batch: Any, start: int, stop: int) -> Any:
    import torch

    if isinstance(batch, ExampleList):
        return ExampleList(batch[start:stop])
    if isinstance(batch, torch.Tensor):
        return batch[start:stop]
    if isinstance(batch, dict):
        return {k: _slice(v, start, stop) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(_slice(v, start, stop) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(_slice(v, start, stop) for v in batch) if _is_structure(batch) else batch[start:stop]
    return batch


def _is_structure(seq: Any) -> bool:
    """A tuple/list of per-field values (tensors, lists) rather than a list of examples."""
    import torch

    return any(isinstance(v, (torch.Tensor, dict, list, tuple)) for v in seq)

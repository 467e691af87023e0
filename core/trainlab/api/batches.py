"""Moving and splitting batches of nested tensors (dicts, tuples, lists)."""

from __future__ import annotations

from typing import Any


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
    """Split every tensor (and list) along dim 0 into ``parts`` micro-batches.

    Used when CUDA runs out of memory: the same examples go through as
    smaller micro-batches with more gradient accumulation.
    """
    size = batch_size_of(batch)
    parts = max(1, min(parts, size or 1))
    bounds = [round(i * size / parts) for i in range(parts + 1)]
    return [_slice(batch, bounds[i], bounds[i + 1]) for i in range(parts) if bounds[i + 1] > bounds[i]]


def _slice(batch: Any, start: int, stop: int) -> Any:
    import torch

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

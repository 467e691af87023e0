"""The DataLoaders of a run's splits, made once and fed each pass's batches.

Training and evaluation share one ``SplitLoaders``: the training loop asks it
for the train split each epoch, the evaluator for val and test.
"""

from __future__ import annotations

import os
from typing import Any

from trainlab.api.taskbase import RunContext, Task
from trainlab.engine import distributed


class _BatchList:
    """A batch sampler whose batches are replaced before each pass."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []

    def __iter__(self):
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


class InProcessBatches:
    """What a DataLoader without workers and without pinning does, without its iterator machinery.

    Each batch of the sampler is fetched as the DataLoader would fetch it
    (``dataset.__getitems__(batch)`` where the dataset has it, else one
    ``dataset[i]`` per index) and collated, in the training thread.  Nothing
    else differs: a DataLoader without workers draws its base seed from its
    own generator, not the global ones, so skipping it changes no random
    stream (and resume stays exact).  What it saves a batch matters on the
    short steps of small models (a profile of bench/task_families.py's MLP
    shows it).
    """

    def __init__(self, dataset: Any, collate: Any, sampler: _BatchList):
        import torch

        self.dataset, self.collate, self.sampler = dataset, collate, sampler
        self.generator = torch.Generator()  # seeded per pass like a DataLoader's (unused without workers)
        getitems = getattr(dataset, "__getitems__", None)
        self._fetch = getitems if getitems else (lambda batch: [dataset[i] for i in batch])

    def __iter__(self):
        fetch, collate = self._fetch, self.collate
        for batch in self.sampler.batches:
            yield collate(fetch(batch))

    def __len__(self) -> int:
        return len(self.sampler)


class SplitLoaders:
    """One DataLoader per split, for as long as the run (or evaluation) lasts."""

    def __init__(self, task: Task, ctx: RunContext):
        self.task = task
        self.ctx = ctx
        self.seed = ctx.seed
        self._loaders: dict[str, tuple[Any, _BatchList]] = {}

    def loader(self, split: str, batches: list[list[int]], epoch: int):
        """The split's DataLoader, made once per run and fed this pass's batches.

        Reusing it keeps ``persistent_workers`` alive across epochs (spawned
        workers re-import torch otherwise).  Its generator is re-seeded per
        epoch: creating the iterator must not draw from the global RNG, or a
        resume in mid-epoch would diverge.
        """
        entry = self._loaders.get(split)
        if entry is None:
            entry = self._loaders[split] = self._make(split)
        loader, sampler = entry
        sampler.batches = batches
        loader.generator.manual_seed(self.seed * 7919 + epoch)
        return loader

    def _make(self, split: str) -> tuple[Any, _BatchList]:
        import torch

        options = dict(self.task.loader_options(split, self.ctx))
        group = distributed.current()
        if group is not None and options.get("num_workers", 0) > 0:  # the ranks of a machine share its cores
            share = max(0, (os.cpu_count() or 1) // max(1, group.local_world_size) - 1)
            options["num_workers"] = min(int(options["num_workers"]), share)
        if options.get("num_workers", 0) > 0 and self.ctx.multiprocessing_context and "multiprocessing_context" not in options:
            options["multiprocessing_context"] = self.ctx.multiprocessing_context
        if options.get("num_workers", 0) == 0:
            options.pop("persistent_workers", None)
            options.pop("prefetch_factor", None)
        sampler = _BatchList()
        if options.get("num_workers", 0) == 0 and not options.get("pin_memory"):
            return InProcessBatches(self.task.dataset(split), self.task.collate, sampler), sampler
        loader = torch.utils.data.DataLoader(
            self.task.dataset(split),
            batch_sampler=sampler,
            collate_fn=self.task.collate,
            generator=torch.Generator(),
            **options,
        )
        return loader, sampler

    def close(self) -> None:
        """Shut loader workers down (persistent ones live until their loader goes)."""
        self._loaders.clear()

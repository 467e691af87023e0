"""A loss that is a mean over the task's own units (a language model's trained tokens) stays one
across the ranks of a group: a two-rank step's gradient is a one-process step's on the same batch."""

from __future__ import annotations

import copy
import os

from helpers import run_two_ranks

# two global batches of four examples, one accumulated step; ranks hold examples 0, 2 and 1, 3 of each,
# and rank 0's examples hold far more trained tokens than rank 1's
TRAINED = [[12, 1, 11, 2], [9, 0, 12, 3]]
LENGTH = 12


class _TokenTask:
    """A per-token classifier whose loss is the mean over trained tokens, as text-generation's."""

    def to_device(self, batch, ctx):
        return batch

    def train_step(self, model, batch, ctx):
        import torch.nn.functional as F

        mask = batch["mask"]
        loss = F.cross_entropy(model(batch["x"][mask]), batch["y"][mask], reduction="sum")
        return loss / mask.sum().clamp(min=1), int(mask.shape[0])

    def loss_weight(self, batch):
        return int(batch["mask"].sum())


def _data():
    import torch

    gen = torch.Generator().manual_seed(5)
    batches = []
    for counts in TRAINED:
        mask = torch.zeros(len(counts), LENGTH, dtype=torch.bool)
        for row, count in enumerate(counts):
            mask[row, :count] = True
        batches.append({"x": torch.randn(len(counts), LENGTH, 4, generator=gen), "y": torch.randint(0, 3, (len(counts), LENGTH), generator=gen), "mask": mask})
    return batches


def _step(trainer, group, span):
    trainer._try_group(group, span)
    return [p.grad.clone() for p in trainer.model.parameters()]


def _trainer(model, strategy, micro_splits):
    """The loop's step, on its own: the Trainer's step methods over a model, a strategy and the task."""
    import torch
    from trainlab.engine.loop import Trainer
    from trainlab.engine.position import LoopPosition

    trainer = Trainer.__new__(Trainer)
    trainer.task, trainer.model, trainer.strategy = _TokenTask(), model, strategy
    trainer.ctx = type("Ctx", (), {"precision": "fp32"})()
    trainer.device = torch.device("cpu")
    trainer.train_model = strategy.setup_model(model)
    trainer.scaler = torch.amp.GradScaler("cpu", enabled=False)
    trainer.position = LoopPosition()
    trainer.position.micro_splits = micro_splits
    trainer._apply_gradients = lambda: None  # the gradients stay, to be compared
    return trainer


def _rank(rank: int, port: int, queue) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    import torch
    import torch.distributed as dist
    from torch import nn
    from trainlab.engine.distributed import RankGroup
    from trainlab.engine.strategy import DataParallel, SingleProcess

    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    alone = copy.deepcopy(model)
    batches = _data()
    strategy = DataParallel(RankGroup(rank, 2, rank, 2, "gloo", "cpu"))
    order = strategy.train_batches([[0, 1, 2, 3], [4, 5, 6, 7]])
    mine = [{k: v[[i % 4 for i in rows]] for k, v in batches[n].items()} for n, rows in enumerate(order)]
    results = {"rows": order}
    for splits in (1, 2):  # whole batches, and each split in two micro-batches (as after an out-of-memory)
        model.zero_grad(set_to_none=True)
        results[f"group {splits}"] = [g.tolist() for g in _step(_trainer(model, strategy, splits), mine, (0, 2))]
    # the whole step in one process: the mean over every trained token of both batches
    results["alone"] = [g.tolist() for g in _step(_trainer(alone, SingleProcess(), 1), batches, (0, 2))]
    dist.destroy_process_group()
    queue.put((rank, results))


def test_two_ranks_weigh_their_losses_by_trained_tokens_as_one_process_does():
    import torch

    got = run_two_ranks(_rank)
    assert got[0]["rows"] == [[0, 2], [4, 6]] and got[1]["rows"] == [[1, 3], [5, 7]]
    alone = [torch.tensor(g) for g in got[0]["alone"]]
    # the same step weighed by examples (each rank's token mean counted once): what the group did before
    batches = _data()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    task = _TokenTask()
    for half in ((0, 2), (1, 3)):
        for batch in batches:
            part = {k: v[list(half)] for k, v in batch.items()}
            (task.train_step(model, part, None)[0] / 4).backward()
    by_examples = [p.grad for p in model.parameters()]
    assert max(float((a - b).abs().max()) for a, b in zip(alone, by_examples)) > 1e-2  # the test can tell them apart
    for rank in (0, 1):
        for splits in (1, 2):
            grads = [torch.tensor(g) for g in got[rank][f"group {splits}"]]
            error = max(float((a - b).abs().max()) for a, b in zip(grads, alone))
            assert error < 1e-6, (rank, splits, error)

"""The step's out-of-memory flags ride in the gradients' all-reduce on CPU groups (two gloo processes).

``DataParallel.setup_model`` (the DDP strategy) gives DDP a communication hook that appends the flags to
the first bucket; these tests check that the gradients are still the ranks'
mean, that every rank reads every rank's flag, and that no collective of
their own goes out.
"""

from __future__ import annotations

import copy
import os

from helpers import run_two_ranks


def _rank(rank: int, port: int, queue) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    import torch
    import torch.distributed as dist
    from torch import nn

    from trainlab.engine.distributed import RankGroup
    from trainlab.engine.strategy import DataParallel

    dist.init_process_group("gloo", rank=rank, world_size=2)
    ddp = DataParallel(RankGroup(rank, 2, rank, 2, "gloo", "cpu"))
    torch.manual_seed(0)  # the same weights on both ranks
    # 1 MB + 2 MB of weights: once DDP rebuilds its buckets after the first
    # backward, more than its first bucket holds, so the flags share the first
    # bucket's all-reduce and the others go through the default hook
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 4))
    plain = copy.deepcopy(model)  # the same weights, for the local gradients
    wrapped = ddp.setup_model(model)

    calls: list[str] = []
    real_all_reduce = dist.all_reduce

    def counting(tensor, *args, **kwargs):
        calls.append(f"{tensor.numel()}")
        return real_all_reduce(tensor, *args, **kwargs)

    dist.all_reduce = counting
    torch.manual_seed(100 + rank)  # each rank its own examples
    x, y = torch.randn(8, 256), torch.randint(0, 4, (8,))
    results = {}
    try:
        for step, mine in enumerate((rank == 1, False)):
            calls.clear()
            pending = ddp.send_out_of_memory_flag(mine)
            nn.functional.cross_entropy(wrapped(x), y).backward()
            results[f"ranks {step}"] = ddp.out_of_memory_ranks(pending)
            results[f"all-reduced {step}"] = [int(size) for size in calls]
            if step == 0:
                reduced = [p.grad.detach().clone() for p in model.parameters()]
            wrapped.zero_grad(set_to_none=True)
        # a backward that nobody gave flags to: zeros go in the bucket, and a bool still works
        nn.functional.cross_entropy(wrapped(x), y).backward()
        results["after a backward without flags"] = ddp.out_of_memory_ranks(rank == 0)
    finally:
        dist.all_reduce = real_all_reduce

    # the local gradient of each rank, averaged by hand: what DDP's own all-reduce gives
    wrapped.zero_grad(set_to_none=True)
    nn.functional.cross_entropy(plain(x), y).backward()
    mean_error = 0.0
    for got, param in zip(reduced, plain.parameters()):
        local = param.grad.detach().clone()
        dist.all_reduce(local)
        mean_error = max(mean_error, float((got - local / 2).abs().max()))
    results["largest gradient error"] = mean_error
    results["gradient elements"] = sum(p.numel() for p in model.parameters())
    queue.put((rank, results))
    dist.barrier()
    dist.destroy_process_group()


def test_the_flags_travel_with_the_gradients_which_stay_the_ranks_mean():
    got = run_two_ranks(_rank)
    for rank in (0, 1):
        results = got[rank]
        assert results["ranks 0"] == [1]  # rank 1's flag, read on both
        assert results["ranks 1"] == []
        assert results["after a backward without flags"] == [0]  # one all-reduce of its own, as asked
        # the buckets' all-reduces and no other: the gradients and the two flags with them
        for step in (0, 1):
            assert sum(results[f"all-reduced {step}"]) == results["gradient elements"] + 2, results
        assert results["largest gradient error"] < 1e-6

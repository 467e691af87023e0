"""The ranks meet once a step, in the gradients' all-reduce, and nowhere else (two gloo processes).

Two other meeting points used to come every step: the stop/pause agreement
(a collective every rank waited for) and DDP's broadcast of the batch-norm
statistics before each forward.  These tests check that the agreement now
travels while the steps go on and is still acted on after the same step by
every rank, and that batch-norm statistics are broadcast only when someone
reads them, with the values DDP's default would give.
"""

from __future__ import annotations

import multiprocessing
import os

from helpers import run_two_ranks


def _join(rank: int, port: int) -> object:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    import datetime

    import torch.distributed as dist

    from trainlab.engine.distributed import RankGroup

    # a short limit: a rank left waiting in a collective fails the test in seconds, not minutes
    dist.init_process_group("gloo", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=30))
    return RankGroup(rank, 2, rank, 2, "gloo", "cpu")


def _agreement_rank(rank: int, port: int, zero_went_on, queue) -> None:
    import torch.distributed as dist

    from trainlab.engine import distributed
    from trainlab.api.callbacks import RunControl
    from trainlab.engine.distributed import AgreedControl

    group = _join(rank, port)
    distributed.AGREE_SECONDS = 0.0  # rank 0 proposes the shortest interval: one step
    control = AgreedControl(RunControl())
    results: dict[str, object] = {}
    # Step 1: rank 0 starts the agreement and goes on; rank 1 joins it only once
    # rank 0 has returned.  An agreement that waited would wait for ever here.
    if rank == 0:
        group.agree_if_due(control, 1)
        zero_went_on.set()
    else:
        results["rank 0 went on before rank 1 joined"] = zero_went_on.wait(20)
        group.agree_if_due(control, 1)
    stopped_after = None
    for step in range(2, 12):
        if rank == 1 and step == 4:
            control.own.request_stop("asked on rank 1")
        group.agree_if_due(control, step)
        if control.stop_requested:
            stopped_after = step
            break
    results["stopped after"] = stopped_after
    results["reason"] = control.own.stop_reason
    # an agreement now (an epoch's end) after one still on its way: same sequence on both
    control.own.resume()
    results["agree now"] = group.agree(control)
    queue.put((rank, results))
    dist.barrier()
    dist.destroy_process_group()


def test_the_agreement_travels_while_the_ranks_step_and_both_stop_after_the_same_step():
    event = multiprocessing.get_context("spawn").Event()
    got = run_two_ranks(_agreement_rank, event)
    assert got[1]["rank 0 went on before rank 1 joined"] is True
    # asked on rank 1 before step 4's agreement started; acted on one interval (one step) later
    assert got[0]["stopped after"] == got[1]["stopped after"] == 5
    assert got[1]["reason"] == "asked on rank 1"
    assert got[0]["reason"] == "stopped on another rank"
    assert got[0]["agree now"] == got[1]["agree now"] == 0


def _norm_model(extra_buffer: bool = False):
    import torch
    from torch import nn
    from torch.nn.utils.parametrizations import spectral_norm

    torch.manual_seed(0)  # the same weights on both ranks
    head = nn.Linear(16, 3)
    # spectral norm: buffers (its power iteration's vectors) that a training forward reads and
    # updates, not a batch norm's; DDP must keep broadcasting them
    return nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), spectral_norm(head) if extra_buffer else head)


def _buffers_rank(rank: int, port: int, queue) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from trainlab.engine.strategy import DataParallel

    group = _join(rank, port)
    model = _norm_model()
    reference = _norm_model()  # the same network under DDP's defaults (a broadcast before every forward)
    ddp = DataParallel(group)
    wrapped = ddp.setup_model(model)
    plain = DistributedDataParallel(reference)
    broadcasts = []
    real_sync = wrapped._sync_buffers
    wrapped._sync_buffers = lambda: (broadcasts.append(1), real_sync())[1]
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, reference)]
    torch.manual_seed(100 + rank)  # each rank its own examples
    batches = [(torch.randn(8, 6) * (1 + rank), torch.randint(0, 3, (8,))) for _ in range(4)]

    def step(net, optimizer, x, y):
        torch.nn.functional.cross_entropy(net(x), y).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    results: dict[str, object] = {}
    for x, y in batches[:3]:
        ddp.begin_step(wrapped)
        step(wrapped, optimizers[0], x, y)
        step(plain, optimizers[1], x, y)
    results["broadcasts while every batch norm trains"] = len(broadcasts)
    mean = model[1].running_mean.clone()
    both = group.gather_json(mean.tolist())
    results["statistics differ between the ranks"] = both[0] != both[1]
    # what rank 0 holds (and writes) is what DDP's default gives rank 0
    results["rank 0's statistics as under DDP's default"] = bool(torch.equal(mean, reference[1].running_mean)) if rank == 0 else None
    ddp.sync_buffers(model)  # before an evaluation
    results["after sync, both hold rank 0's"] = group.gather_json(model[1].running_mean.tolist())
    results["a second sync sends nothing"] = (ddp.sync_buffers(model), ddp._buffers_differ)[1]

    # a training step makes them differ again; then a batch norm in eval mode inside training
    # reads them: DDP broadcasts rank 0's before that step, and not again while they stay equal
    x, y = batches[3]
    ddp.begin_step(wrapped)
    step(wrapped, optimizers[0], x, y)
    model[1].eval()
    counts = []
    for _ in range(2):
        ddp.begin_step(wrapped)
        step(wrapped, optimizers[0], x, y)
        counts.append(len(broadcasts))
    results["broadcasts with a batch norm in eval mode"] = counts
    results["read in eval mode, both hold rank 0's"] = group.gather_json(model[1].running_mean.tolist())

    counted, other = _norm_model(extra_buffer=True), DataParallel(group)
    other.setup_model(counted)
    results["another buffer keeps DDP's broadcast"] = not other._norms
    queue.put((rank, results))
    dist.barrier()
    dist.destroy_process_group()


def test_batch_norm_statistics_are_broadcast_only_when_read_with_ddp_defaults_values():
    got = run_two_ranks(_buffers_rank)
    for rank in (0, 1):
        results = got[rank]
        assert results["broadcasts while every batch norm trains"] == 0
        assert results["statistics differ between the ranks"] is True  # each rank's own batches: nothing sent
        assert results["after sync, both hold rank 0's"][0] == results["after sync, both hold rank 0's"][1]
        assert results["a second sync sends nothing"] is False
        assert results["broadcasts with a batch norm in eval mode"] == [1, 1]
        assert results["read in eval mode, both hold rank 0's"][0] == results["read in eval mode, both hold rank 0's"][1]
        assert results["another buffer keeps DDP's broadcast"] is True
    assert got[0]["rank 0's statistics as under DDP's default"] is True

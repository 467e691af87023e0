"""RunContext.shared_array: one copy per machine for the ranks of a run (two gloo processes here)."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import pytest

from trainlab.engine.shared_memory import SHARED_FOLDER, SharedArrays
from helpers import run_two_ranks

pytestmark = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64") or not SHARED_FOLDER.is_dir(),
    reason="shared arrays are offered on x86-64 with /dev/shm",
)


def _rank(rank: int, port: int, fits: list[bool], machines: int, queue) -> None:
    # machines=2: each process is the one rank of its own machine (node), as in --nnodes 2
    local_rank, local_world = (0, 1) if machines == 2 else (rank, 2)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1",
                      GROUP_RANK=str(rank if machines == 2 else 0))  # fmt: skip
    import torch
    import torch.distributed as dist

    from trainlab.engine.distributed import RankGroup

    dist.init_process_group("gloo", rank=rank, world_size=2)
    group = RankGroup(rank, 2, local_rank, local_world, "gloo", "cpu")
    shared = SharedArrays(group)
    array = shared.make("decoded images: train", (4,), torch.uint8, fits=fits[rank])
    seen = None
    if array is not None:
        if rank == 1:
            array.copy_(torch.tensor([1, 2, 3, 4], dtype=torch.uint8))
        group.barrier()
        seen = array.tolist()
        second = shared.make("decoded images: val", (2, 3), torch.float32)  # another, after the first
        second[rank].fill_(rank + 1.5)
        group.barrier()
        seen = [seen, second.tolist()]
    queue.put((rank, seen))
    group.barrier()
    dist.destroy_process_group()


def _run(fits: list[bool], machines: int = 1) -> dict[int, object]:
    return run_two_ranks(_rank, fits, machines)


def _ours() -> set[str]:
    return {p.name for p in Path(SHARED_FOLDER).glob("trainlab-*")}


def test_two_ranks_map_one_array_and_leave_nothing_in_dev_shm():
    before = _ours()
    got = _run([True, True])
    # rank 0 reads what rank 1 wrote: one copy between them
    assert got[0] == got[1] == [[1, 2, 3, 4], [[1.5, 1.5, 1.5], [2.5, 2.5, 2.5]]]
    assert _ours() == before  # unlinked once every rank had mapped it


def test_one_rank_that_says_it_does_not_fit_makes_every_rank_keep_its_own():
    before = _ours()
    got = _run([True, False])
    assert got == {0: None, 1: None}
    assert _ours() == before


def test_ranks_alone_on_their_machines_take_part_and_share_nothing():
    # A run over two machines with one rank each: both still join the collective, and answer None.
    before = _ours()
    assert _run([True, True], machines=2) == {0: None, 1: None}
    assert _ours() == before


def test_one_process_alone_shares_nothing():
    import torch

    from trainlab import RunContext

    assert SharedArrays(None).make("x", (4,), torch.uint8) is None
    ctx = RunContext(device=torch.device("cpu"), precision="fp32", seed=0, run_dir=None, params={})
    assert ctx.shared_array("x", (4,), torch.uint8) is None and ctx.processes_on_this_machine == 1

"""RunContext.shared_array: one copy per machine for the ranks of a run (two gloo processes here)."""

from __future__ import annotations

import multiprocessing
import os
import platform
import socket
from pathlib import Path

import pytest

from trainlab.engine.shared_memory import SHARED_FOLDER, SharedArrays

pytestmark = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64") or not SHARED_FOLDER.is_dir(),
    reason="shared arrays are offered on x86-64 with /dev/shm",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank: int, port: int, fits: list[bool], queue) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    import torch
    import torch.distributed as dist

    from trainlab.engine.distributed import RankGroup

    dist.init_process_group("gloo", rank=rank, world_size=2)
    group = RankGroup(rank, 2, rank, 2, "gloo", "cpu")
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


def _run(fits: list[bool]) -> dict[int, object]:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    port = _free_port()
    procs = [context.Process(target=_rank, args=(rank, port, fits, queue)) for rank in (0, 1)]
    for proc in procs:
        proc.start()
    got = dict(queue.get(timeout=120) for _ in procs)
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    return got


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


def test_one_process_alone_shares_nothing():
    import torch

    from trainlab import RunContext

    assert SharedArrays(None).make("x", (4,), torch.uint8) is None
    ctx = RunContext(device=torch.device("cpu"), precision="fp32", seed=0, run_dir=None, params={})
    assert ctx.shared_array("x", (4,), torch.uint8) is None and ctx.processes_on_this_machine == 1

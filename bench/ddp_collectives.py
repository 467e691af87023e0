"""What the ranks' small collectives cost: the stop/pause agreement, the telemetry gather, the
out-of-memory flag before each optimizer step.

Two gloo ranks on this machine (one thread each), each a real ``RankGroup``
over a real process group, time each call ``--calls`` times, after a warm-up;
rank 0 prints the medians (the ranks enter each call together, as in a run,
where the step's gradient all-reduce has just lined them up).  What a run pays:

* the agreement (``RankGroup.agree``, timed here as a call that waits):
  after each epoch and while paused.  During an epoch it is started about
  every 0.1 s of training (``AGREE_SECONDS``) and acted on one interval
  later (``agree_if_due``), so the ranks do not wait for it there;
* the telemetry gather: once per telemetry interval (5 s by default), so
  ``gather_us / 5`` microseconds per second of training;
* the out-of-memory flag's own all-reduce: once per optimizer step on GPU
  groups (on the gloo control group, while the backward computes).  CPU
  groups send the flags in the gradients' first bucket instead
  (``FlagsInBucket``) and pay no collective for them.

    python bench/ddp_collectives.py [--calls 2000] [--quick] [--json]
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from pairs import bench_parser, emit, speaker


def _rank(rank: int, port: int, calls: int, queue) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    import torch
    import torch.distributed as dist

    from trainlab.engine import distributed
    from trainlab.api.callbacks import RunControl
    from trainlab.engine.distributed import AgreedControl, RankGroup
    from trainlab.engine.strategy import DataParallel

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    group = RankGroup(rank, 2, rank, 2, "gloo", "cpu")
    group.device_records()  # the hosts, as a run learns them
    control = AgreedControl(RunControl())
    ddp = DataParallel(group)  # the out-of-memory flags are the DDP strategy's
    timings: dict[str, float] = {}
    distributed.AGREE_SECONDS = 0.0  # agree_if_due: one step between agreements, each call acts on one and starts one
    steps = iter(range(1, 10**9))
    for name, call in (
        ("agree_us", lambda: group.agree(control)),
        ("agree_if_due_us", lambda: group.agree_if_due(control, next(steps))),
        ("gather_us", group.gather_telemetry),
        ("oom_flag_us", lambda: ddp.out_of_memory_ranks(False)),
    ):
        for _ in range(max(10, calls // 10)):  # warm-up
            call()
        seen = []
        for _ in range(calls):
            group.barrier()  # enter together, as a run's ranks are after a step's all-reduce
            started = time.perf_counter()
            call()
            seen.append(time.perf_counter() - started)
        timings[name] = statistics.median(seen) * 1e6
        group.agree(control)  # acts on an agreement still on its way (agree_if_due's last) before the next calls
    if rank == 0:
        queue.put(timings)
    dist.destroy_process_group()


def main() -> int:
    parser = bench_parser(__doc__, "200 calls of each")
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    if args.quick:
        args.calls = 200
    say = speaker(args)
    import torch.multiprocessing as mp

    from trainlab.engine.torchrun import free_port

    context = mp.get_context("spawn")
    queue = context.Queue()
    port = free_port()
    procs = [context.Process(target=_rank, args=(rank, port, args.calls, queue)) for rank in (0, 1)]
    for proc in procs:
        proc.start()
    timings = queue.get(timeout=600)
    for proc in procs:
        proc.join(60)
    result = {
        **timings,
        "gather_us_per_second_at_5s": timings["gather_us"] / 5.0,
        "agree_if_due_us_per_second": timings["agree_if_due_us"] / 0.1,
        "calls": args.calls,
        "cores": os.cpu_count(),
        "load_average": os.getloadavg(),
    }
    say(f"agreement that waits {timings['agree_us']:.0f} us (after each epoch, while paused); "
          f"agreement between steps {timings['agree_if_due_us']:.0f} us (x10 a second: {result['agree_if_due_us_per_second']:.0f} us/s); "
          f"telemetry gather {timings['gather_us']:.0f} us (every 5 s: {result['gather_us_per_second_at_5s']:.0f} us/s); "
          f"out-of-memory flag's own all-reduce {timings['oom_flag_us']:.0f} us (per optimizer step on GPUs; none on CPU groups); "
          f"load average {result['load_average'][0]:.1f} on {os.cpu_count()} cores")  # fmt: skip
    return emit("ddp_collectives", args, result)


if __name__ == "__main__":
    sys.exit(main())

"""Two gloo processes on this machine for tests that drive the engine's rank group directly."""

from __future__ import annotations

import multiprocessing

from trainlab.engine.torchrun import free_port


def run_two_ranks(target, *args) -> dict[int, object]:
    """Spawn ``target(rank, port, *args, queue)`` for ranks 0 and 1; return what each put on the queue.

    Each rank puts one ``(rank, result)`` pair; a rank that exits non-zero fails the test.
    """
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    port = free_port()
    procs = [context.Process(target=target, args=(rank, port, *args, queue)) for rank in (0, 1)]
    for proc in procs:
        proc.start()
    try:
        got = dict(queue.get(timeout=120) for _ in procs)
    finally:
        for proc in procs:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()
    for proc in procs:
        assert proc.exitcode == 0, f"rank {procs.index(proc)} exited with {proc.exitcode}"
    return got

"""Arrays that the processes of one run on one machine share (``RunContext.shared_array``).

The ranks of a run over several GPUs of a machine each prepare the task
and so each would keep their own copy of what a task holds in memory (the
image task's decoded images): N ranks, N copies, each decoded by its own
rank. A shared array is one copy per machine, in POSIX shared memory
(``/dev/shm``), that every rank of the machine maps and fills.

It is collective: every rank of the run asks for the same arrays, with the
same names and shapes, in the same order (a task's ``prepare`` is such a
place: it runs the same in every rank), whatever its own machine holds (a
machine with one rank of a run over several still takes part, and answers
None). Per machine:

1. every rank says whether the array fits its own budget (``fits``);
2. if every rank of the machine says so, the machine's local rank 0 makes
   the file and reserves its memory up front (``posix_fallocate``: a
   shared-memory folder that is too small fails here, with ENOSPC, not as a
   SIGBUS in the middle of a run);
3. the other ranks of the machine map it; then local rank 0 unlinks it, so
   nothing is left in ``/dev/shm`` whatever happens to the run later: the
   memory goes back to the system when the last rank exits.

Any failure on the way (no ``/dev/shm``, not enough of it, one rank could not
map it) makes every rank of that machine answer None, and the task keeps
private copies (or none) as it would alone. One process alone answers None
without a collective.

Reads and writes are plain tensor copies without a lock: the task must only
store what any rank would store for the same key (a cache of a fixed
transform), and mark it ready after writing it. A rank that sees the mark
before the pixels on a weakly ordered CPU could read a torn entry, so
sharing is offered on x86-64 only, whose stores become visible in order.
"""

from __future__ import annotations

import hashlib
import os
import platform
import socket
from pathlib import Path
from typing import Any, Sequence

SHARED_FOLDER = Path("/dev/shm")
ORDERED_STORES = ("x86_64", "amd64")  # machines whose stores other cores see in program order
MADE = "ok"  # what a machine's local rank 0 says once it made the shared file


def _run_key() -> str:
    """What every rank of one run on one machine has in common, and no other run has."""
    # the rendezvous address and port are unique among the runs alive at a time (the store holds the port)
    parts = [os.environ.get(name, "") for name in ("TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK")]
    return hashlib.sha256("\0".join([socket.gethostname(), *parts]).encode()).hexdigest()[:16]


def _usable() -> bool:
    return platform.machine().lower() in ORDERED_STORES and SHARED_FOLDER.is_dir() and os.access(SHARED_FOLDER, os.W_OK)


class SharedArrays:
    """The shared arrays of one process of a run (``RunContext.shared_array`` calls ``make``)."""

    def __init__(self, group: Any):
        self.group = group
        self.count = 0

    def make(self, name: str, shape: Sequence[int], dtype: Any, fits: bool = True) -> Any:
        import torch

        group = self.group
        if group is None or group.world_size < 2:  # the run's size, the same on every rank: no collective
            return None
        self.count += 1
        numel = 1
        for side in shape:
            numel *= int(side)
        nbytes = numel * torch.empty((), dtype=dtype).element_size()
        host = f"{socket.gethostname()}/{os.environ.get('GROUP_RANK', '')}"  # this machine's ranks (a node of the run)
        path = SHARED_FOLDER / f"trainlab-{_run_key()}-{self.count}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
        # 1. every rank's view; the machine's local rank 0 makes the file if all of them agree
        # (a machine with one rank of the run has nothing to share: it says no, and answers None)
        alone = group.local_world_size < 2
        views = group.gather_json({"host": host, "fits": bool(fits) and not alone and _usable() and nbytes > 0})
        mine = [v for v in views if v["host"] == host]
        made = ""
        if group.local_rank == 0 and all(v["fits"] for v in mine):
            made = _create(path, nbytes)
        made_by = {v["host"]: v["made"] for v in group.gather_json({"host": host, "made": made, "local_rank": group.local_rank})
                   if v["local_rank"] == 0}  # fmt: skip
        tensor, failed = None, ""
        if made_by.get(host) == MADE:
            try:
                tensor = torch.from_file(str(path), shared=True, size=numel, dtype=dtype).view(*shape)
            except Exception as exc:  # noqa: BLE001 - whatever it is, the other ranks must hear of it, not hang
                failed = f"{type(exc).__name__}: {exc}"
        # 2. every rank of the machine mapped it (or none uses it); then it leaves the folder
        mapped = group.gather_json({"host": host, "ok": tensor is not None or made_by.get(host) != MADE, "why": failed})
        if group.local_rank == 0 and made == MADE:
            path.unlink(missing_ok=True)
        if made_by.get(host) != MADE or not all(v["ok"] for v in mapped if v["host"] == host):
            return None
        return tensor


def _create(path: Path, nbytes: int) -> str:
    """``MADE``, or why the file could not be made with its memory reserved."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    try:
        os.posix_fallocate(fd, 0, nbytes)
    except OSError as exc:
        os.close(fd)
        path.unlink(missing_ok=True)
        return f"{type(exc).__name__}: {exc}"
    os.close(fd)
    return MADE

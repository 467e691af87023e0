"""The persistent run queue across the machine's GPUs (docs/queue-and-sweeps.md).

* ``store``: the queue itself, one SQLite file under the TrainLab home
  (``QueueStore``, ``QueueEntry``), and how no run starts twice;
* ``leases``: machine-wide GPU leases by UUID, and the engine's hook that
  makes every run hold the lease of its GPU (``hold_device_lease``);
* ``locks``: the file locks underneath, released when their process dies;
* ``scheduler``: starting what fits, noticing what died, driving sweeps;
* ``runner``: the process that runs one entry;
* ``execution``: running a request here or over k GPUs, and where a
  restarted run starts from;
* ``actions``: add, pause, cancel, continue, move (the CLI and the window);
* ``commands``: ``trainlab queue``.

Nothing here imports torch at import time, nor Qt ever.
"""

"""Runs that wait their turn: the persistent run queue across the machine's GPUs,
and offline hyperparameter sweeps whose trials are runs (docs/queue-and-sweeps.md).

The queue:

* ``queue_store``: the queue itself, one SQLite file under the TrainLab home
  (``QueueStore``, ``QueueEntry``), and how no run starts twice;
* ``scheduler``: starting what fits, noticing what died, driving sweeps;
* ``entry_process``: the process that runs one entry;
* ``execution``: running a request here or over k GPUs, and where a
  restarted run starts from;
* ``queue_actions``: add, pause, cancel, continue, move (the CLI and the window);
* ``queue_board``: the queue as the window's queue view sees it.

Sweeps:

* ``sweep_space``: ``--space`` items checked against the task's parameter schema;
* ``sweep_study``: a named study in its own journal file: ask, tell, the
  pruner's reports (``TrialPruning``), the summary;
* ``sweep_foreground``: a sweep run by the ``trainlab sweep`` process itself;
* ``sweep_board``: one study as the window's sweep views see it.

The GPU leases every run holds are the engine's (``trainlab.engine.gpu_leases``),
the file locks under them ``trainlab.system.locks``; the commands
``trainlab queue`` and ``trainlab sweep`` are the CLI's. Nothing here imports
torch at import time, nor Qt ever. Optuna is imported only when a study is opened.
"""

"""Offline hyperparameter sweeps with Optuna (docs/queue-and-sweeps.md).

* ``space``: ``--space`` items checked against the task's parameter schema;
* ``study``: a named study in its own journal file: ask, tell, the pruner's
  reports (``TrialPruning``), the summary;
* ``foreground``: a sweep run by the ``trainlab sweep`` process itself;
* ``commands``: ``trainlab sweep`` (``--queue`` hands it to the run queue,
  whose scheduler asks the study for trials as GPUs come free).

Optuna is imported only when a study is opened.
"""

"""How a run's training is spread over processes: the strategy the loop calls.

The loop (``trainlab.engine.loop``) knows what a step is: the task's batches,
forward and backward, accumulation, clipping, the optimizer and schedule.
The strategy knows what spreading the work over processes changes, and the
loop calls it at a few points, as Lightning's strategies are called:

* ``setup_model`` / ``make_optimizer``: the model as the task's
  ``train_step`` sees it (DDP's wrapper), and the optimizer made after that
  wrapping (a sharding strategy must wrap first, then hand the optimizer its
  shards).
* ``fitting``: around the whole of training (hooks in, and what the final
  evaluations need after).
* ``train_batches`` / ``step_share`` / ``unit_share``: this process's share
  of an epoch's batches, and the weight of its examples (or of the task's
  units, a language model's trained tokens) in the group's mean loss.
* ``begin_step`` / ``no_sync`` / ``backward`` / ``piece_out_of_memory`` /
  ``step_out_of_memory``: one optimizer step, and the decision, together,
  about an out-of-memory in it.
* ``control_view`` / ``after_step`` / ``after_epoch`` / ``hold_paused``: stop
  and pause as every process agreed.
* ``before_evaluation`` / ``eval_batches`` / ``reduce_accumulator``: the
  state an evaluation reads made the same everywhere, each process's share,
  and the shares combined.
* ``is_main`` / ``barrier`` / ``checkpoint_meta`` / ``save_checkpoint`` /
  ``restore_process_state``: who writes, and what a checkpoint holds.

``SingleProcess`` (``base``) is a run in one process (every method the plain
case); ``DataParallel`` (``ddp``) is one rank of a torchrun group, through
DDP; ``FullySharded`` (``fsdp``, ``sharding=fsdp``) is one rank of a group
whose model is sharded across the ranks (FSDP2): it keeps DDP's batches and
agreements and overrides the model's side, checkpoints (the full state
gathered to rank 0, which writes), their loading (``read_checkpoint``,
``load_weights``, ``restore_training_state``) and ``final_model`` (the whole
model back for the export).  ``for_run`` picks one.
"""

from __future__ import annotations

from typing import Any

from trainlab.engine import distributed
from trainlab.engine.strategy.base import SingleProcess, Strategy
from trainlab.engine.strategy.ddp import DataParallel
from trainlab.engine.strategy.fsdp import FullySharded, sharding_problem

__all__ = ["DataParallel", "FullySharded", "SingleProcess", "Strategy", "for_run", "sharding_problem"]


def for_run(engine: Any = None, precision: str = "fp32") -> Strategy:
    """The strategy of this process's run (``engine``: its ``EngineParams``): in a torchrun group
    FSDP2 under ``sharding=fsdp``, else DDP; one process alone otherwise."""
    group = distributed.current()
    if group is None:
        return SingleProcess()
    if engine is not None and engine.sharding == "fsdp":
        return FullySharded(group, precision=precision, offload=engine.fsdp_offload)
    return DataParallel(group)

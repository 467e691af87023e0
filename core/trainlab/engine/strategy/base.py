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
* ``train_batches`` / ``step_share``: this process's share of an epoch's
  batches, and the weight of its examples in the group's mean loss.
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

``SingleProcess`` is a run in one process (every method the plain case);
``DataParallel`` is one rank of a torchrun group, through DDP.  ``for_run``
picks one.  A sharding strategy (FSDP2) is a third: it overrides
``setup_model``, ``make_optimizer`` and ``save_checkpoint`` (gathering the
full state on every rank, rank 0 writing).
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Any, Callable, Iterator

from trainlab.api.errors import RunFailed
from trainlab.engine import distributed
from trainlab.engine.checkpoint import save_checkpoint
from trainlab.engine.device import is_out_of_memory


class Strategy:
    """What the loop asks about the processes of a run; this base is one process alone."""

    world_size = 1
    rank = 0

    @property
    def is_main(self) -> bool:
        """Whether this process writes the run folder (checkpoints, the export, run.json)."""
        return True

    # -- the model and the optimizer ---------------------------------------------
    def setup_model(self, model: Any) -> Any:
        """The model as the task's ``train_step`` gets it; evaluation and checkpoints use ``model`` itself."""
        return model

    def make_optimizer(self, build: Callable[[], Any]) -> Any:
        """The optimizer, made once ``setup_model`` has run (``build`` reads the model's parameters)."""
        return build()

    @contextmanager
    def fitting(self, model: Any) -> Iterator[None]:
        """Around ``Trainer.fit``."""
        yield

    # -- batches -----------------------------------------------------------------
    def train_batches(self, order: list[list[int]]) -> list[list[int]]:
        """This process's batches of an epoch, from the group's order (batches of ``batch_size x world_size``)."""
        return order

    def step_share(self, span: tuple[int, int], examples: int) -> tuple[float, int]:
        """(weight of this process's loss, the group's examples) for the batches ``span`` of the epoch,
        of which this process holds ``examples``."""
        return 1.0, examples

    # -- one step ------------------------------------------------------------------
    def begin_step(self, train_model: Any) -> None:
        """Before a step's first forward."""

    def no_sync(self, train_model: Any, last: bool) -> Any:
        """The context of one micro-batch's forward and backward (inner ones skip a group's all-reduce)."""
        return nullcontext()

    def backward(self, loss: Any, scaler: Any, last: bool) -> None:
        """The backward of one micro-batch's (weighted) loss through the gradient scaler."""
        scaler.scale(loss).backward()

    def piece_out_of_memory(self, exc: BaseException, last: bool) -> None:
        """A micro-batch ran out of memory (``exc``): raise to redo the step alone, return to let the
        step end with the others (``step_out_of_memory`` then says who ran out)."""
        raise exc

    def step_out_of_memory(self, synced: bool, stand_in: Callable[[], Any]) -> list[int]:
        """After a step's micro-batches: the processes that ran out of memory in it (every process
        gets the same list; non-empty: every process redoes the step with smaller micro-batches).
        ``synced``: this process's synchronising backward ran; ``stand_in`` computes a loss of a few
        examples, for a process that must still take part in the step's collectives."""
        return []

    # -- stop and pause ------------------------------------------------------------
    def control_view(self, own: Any) -> Any:
        """What the loop reads for stop and pause (a ``RunControl``, or the group's agreed view of it)."""
        return own

    def after_step(self, control: Any, step: int) -> None:
        """After each optimizer step (where a group agrees, now and then, on stop and pause)."""

    def after_epoch(self, control: Any) -> None:
        """After each epoch's evaluation and checkpoint."""

    def hold_paused(self, control: Any) -> None:
        """Wait while paused (until resumed or stopped)."""
        while not control.wait_while_paused(0.5):
            pass

    # -- evaluation ----------------------------------------------------------------
    def before_evaluation(self, model: Any) -> None:
        """Make what an evaluation reads of ``model`` the same in every process."""

    def eval_batches(self, order: list[list[int]]) -> list[list[int]]:
        """This process's share of an evaluation's batches."""
        return order

    def reduce_accumulator(self, task: Any, split: str, accumulator: Any) -> Any:
        """An evaluation's accumulator holding every process's share."""
        return accumulator

    # -- checkpoints ---------------------------------------------------------------
    def barrier(self) -> None:
        """Wait until every process reaches this point."""

    def checkpoint_meta(self, which: str) -> dict[str, Any]:
        """What a checkpoint keeps of the processes beside the model's state (collective in a group)."""
        return {}

    def save_checkpoint(self, path: Any, model: Any, meta: dict[str, Any], **training_state: Any) -> None:
        """Every process calls it; the main one writes, and all go on together."""
        if self.is_main:
            save_checkpoint(path, model, meta, **training_state)
        self.barrier()

    def restore_process_state(self, meta: dict[str, Any]) -> str:
        """This process's own state (random generators) from a checkpoint's meta; a note when it has none."""
        return ""


class SingleProcess(Strategy):
    """A run in one process, on one device."""


class DataParallel(Strategy):
    """One rank of a torchrun group: DDP over the ranks of ``group``.

    Each rank trains on its share of every global batch (``RankGroup.shard_batches``)
    and DDP averages the gradients; the ranks agree on stop and pause
    (``AgreedControl``) and on out-of-memory, so that they always step together.
    """

    def __init__(self, group: distributed.RankGroup):
        self.group = group
        self.world_size = group.world_size
        self.rank = group.rank
        self._real_sizes: list[int] = []  # per batch of the epoch: this rank's examples (0: a padding repeat)
        self._global_sizes: list[int] = []  # per batch: the group's examples
        self._forwards = 0  # the model's forwards entered (see fitting)
        self._forwards_at_step = 0
        self._train_model: Any = None
        self._oom_flags: Any = None  # this step's out-of-memory flags, once given

    @property
    def is_main(self) -> bool:
        return self.group.writer

    def setup_model(self, model: Any) -> Any:
        self._train_model = self.group.wrap(model)
        return self._train_model

    @contextmanager
    def fitting(self, model: Any) -> Iterator[None]:
        # Count the model's forwards: DDP syncs the buffers before one, and a
        # stand-in step must know whether that was done (_stand_in_backward).
        counting = model.register_forward_pre_hook(self._count_forward)
        try:
            yield
        finally:
            counting.remove()  # gone before the export traces the model
        self.group.sync_buffers(model)  # the final evaluations read every rank's batch-norm statistics

    def _count_forward(self, module: Any, args: Any) -> None:
        self._forwards += 1

    def train_batches(self, order: list[list[int]]) -> list[list[int]]:
        order, self._real_sizes, self._global_sizes = self.group.shard_batches(order)
        return order

    def step_share(self, span: tuple[int, int], examples: int) -> tuple[float, int]:
        # DDP averages the ranks' gradients; scaling by this rank's share of
        # the group's examples makes that the mean over the group's batch
        # (ranks may hold one example more or less, a padding repeat none).
        real = sum(self._real_sizes[span[0] : span[1]])
        counted = sum(self._global_sizes[span[0] : span[1]])
        return self.world_size * real / max(1, counted), counted

    def begin_step(self, train_model: Any) -> None:
        self.group.before_step(train_model)
        self._forwards_at_step = self._forwards
        self._oom_flags = None  # given by backward before the synchronising one

    def no_sync(self, train_model: Any, last: bool) -> Any:
        return distributed.RankGroup.no_sync(train_model, last)

    def backward(self, loss: Any, scaler: Any, last: bool) -> None:
        if last:
            # Every out-of-memory this step can recover from has happened by
            # now: the flags' all-reduce runs while the backward computes.
            self._oom_flags = self.group.send_out_of_memory_flag(False)
        try:
            scaler.scale(loss).backward()
        except Exception as exc:
            exc._trainlab_in_backward = True  # type: ignore[attr-defined]
            raise

    def piece_out_of_memory(self, exc: BaseException, last: bool) -> None:
        if not is_out_of_memory(exc):
            raise exc
        if last and getattr(exc, "_trainlab_in_backward", False):
            # Part of the all-reduce may have gone out: this rank cannot
            # rejoin it, and the others fail within the collective timeout.
            raise RunFailed(
                f"rank {self.rank} ran out of memory while the gradients were being synchronised: "
                "lower --batch-size, use a smaller model or --precision bf16/fp16"
            ) from None

    def step_out_of_memory(self, synced: bool, stand_in: Callable[[], Any]) -> list[int]:
        flags = self._oom_flags
        if not synced:  # the others wait in this step's all-reduce: join it with nothing to add
            flags = self.group.send_out_of_memory_flag(True)
            self._stand_in_backward(stand_in, buffers_synced=self._forwards > self._forwards_at_step)
        return self.group.out_of_memory_ranks(flags)

    def _stand_in_backward(self, stand_in: Callable[[], Any], *, buffers_synced: bool) -> None:
        """A backward through the DDP wrapper that adds nothing: a few examples, weight 0.

        A rank that ran out of memory before its synchronising backward still
        takes part in the step's all-reduce, so no rank waits for it; the
        step is then thrown away on every rank (``out_of_memory_ranks``).
        DDP broadcasts the buffers (batch-norm statistics) before the first
        forward of a step: when one of this step's forwards began, that
        broadcast is done and the stand-in must not make a second one, which
        no other rank would match.
        """
        if buffers_synced:
            self._train_model.require_forward_param_sync = False  # DDP's own switch for that broadcast
        try:
            (stand_in() * 0.0).backward()
        except Exception as exc:
            if not is_out_of_memory(exc):
                raise
        else:
            return
        # a rank that cannot take part fails; the others within the collective timeout
        raise RunFailed(f"rank {self.rank} ran out of memory even for two examples: lower --batch-size or use a smaller model")

    def control_view(self, own: Any) -> Any:
        return distributed.AgreedControl(own)  # stop and pause as the ranks agreed, never one rank alone

    def after_step(self, control: Any, step: int) -> None:
        self.group.agree_if_due(control, step)

    def after_epoch(self, control: Any) -> None:
        self.group.agree(control)

    def hold_paused(self, control: Any) -> None:
        self.group.hold_paused(control)

    def before_evaluation(self, model: Any) -> None:
        self.group.sync_buffers(model)  # each rank scores its share with rank 0's batch-norm statistics

    def eval_batches(self, order: list[list[int]]) -> list[list[int]]:
        return self.group.eval_batches(order)  # whole batches dealt out: each example on one rank, none padded

    def reduce_accumulator(self, task: Any, split: str, accumulator: Any) -> Any:
        return self.group.merge_accumulator(task, split, accumulator)

    def barrier(self) -> None:
        self.group.barrier()

    def checkpoint_meta(self, which: str) -> dict[str, Any]:
        return {"rank_rng": self.group.rank_rng_states()} if which == "last" else {}

    def restore_process_state(self, meta: dict[str, Any]) -> str:
        if self.group.restore_rank_rng(meta.get("rank_rng", [])):
            return ""
        return f"rank {self.rank}: the checkpoint has no random state of its own (another world size); it continues from rank 0's"


def for_run() -> Strategy:
    """The strategy of this process's run: DDP in a torchrun group, else one process."""
    group = distributed.current()
    return DataParallel(group) if group is not None else SingleProcess()

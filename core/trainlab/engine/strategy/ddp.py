"""One rank of a torchrun group, through DistributedDataParallel.

The group itself (joining it, the agreement on stop and pause, bytes and
JSON across it, each rank's share of the batches, telemetry) is
``trainlab.engine.distributed.RankGroup``; this is what DDP adds on the
model's side:

* ``setup_model``: DDP without its broadcast of batch-norm statistics before
  every forward when nobody reads them (a model whose only buffers they
  are); every rank takes rank 0's before an evaluation (``sync_buffers``),
  and before a training step in which a batch norm in eval mode reads them
  (``begin_step``).  The ranks then meet once a step, in the gradients'
  all-reduce.
* the step's out-of-memory flags: every rank's flag known before the
  optimizer step, so that a rank that ran out of memory makes every rank
  split its micro-batches the same way and redo the step.  They are given
  (``send_out_of_memory_flag``) just before the step's synchronising
  backward.  On the CPU (gloo) they travel in the gradients' own all-reduce,
  appended to DDP's first bucket by a communication hook (``FlagsInBucket``):
  no collective of their own.  On GPUs they go in a small all-reduce on the
  gloo control group that runs while the backward computes (appended to an
  NCCL bucket, reading them would wait for the device every step).  A rank
  that ran out of memory before its synchronising backward joins that
  all-reduce with a stand-in backward that adds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from trainlab.api.errors import RunFailed
from trainlab.engine import distributed
from trainlab.engine.ddp_hooks import FlagsInBucket, batch_norms_if_only_buffers
from trainlab.engine.device import is_out_of_memory
from trainlab.engine.strategy.base import Strategy


@dataclass
class PendingFlags:
    """One step's out-of-memory flags on their way (``DataParallel.send_out_of_memory_flag``):
    in their own all-reduce (``work``), or in the gradients' (``work`` None: in the bucket)."""

    flags: Any
    work: Any


class DataParallel(Strategy):
    """One rank of ``group``: DDP over its ranks.

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
        self._oom_flags: PendingFlags | None = None  # this step's out-of-memory flags, once given
        self._flags_in_bucket: FlagsInBucket | None = None  # the comm hook, on CPU groups (setup_model)
        self._norms: list[Any] = []  # the batch norms, when their statistics are the model's only buffers
        self._buffers_differ = False  # those statistics may differ between the ranks (begin_step, sync_buffers)

    @property
    def is_main(self) -> bool:
        return self.group.writer

    # -- the model -------------------------------------------------------------------
    def setup_model(self, model: Any) -> Any:
        """``model`` in DistributedDataParallel (which makes every rank start from rank 0's weights).

        ``gradient_as_bucket_view``: each gradient is a view into DDP's
        all-reduce bucket, so a step copies no gradient in or out of it and
        the gradients take no memory beside the buckets.  The engine only
        zeroes gradients with ``set_to_none`` and clips them in place, which
        that mode allows; the reduced values are the same.  On the CPU the
        out-of-memory flags ride in the first bucket (``FlagsInBucket``).

        A model whose only buffers are batch-norm statistics does not have
        them broadcast before every forward (DDP's default): a batch norm in
        training reads the batch's own statistics, so the broadcast would be
        a collective per step for values nobody reads.  ``begin_step`` turns
        DDP's broadcast back on for a step in which a batch norm in eval mode
        reads statistics that may differ, and ``sync_buffers`` gives every
        rank rank 0's before an evaluation: what every rank reads, and what
        rank 0 writes, is what DDP's default would give.  Any other buffer
        keeps DDP's broadcast before every forward.
        """
        from torch.nn.parallel import DistributedDataParallel

        group = self.group
        self._norms = batch_norms_if_only_buffers(model)
        options: dict[str, Any] = {"gradient_as_bucket_view": True}
        if self._norms:
            options["forward_sync_buffers"] = False
        if group.device.startswith("cuda"):
            wrapped = DistributedDataParallel(model, device_ids=[group.local_rank_device()], **options)
        else:
            wrapped = DistributedDataParallel(model, **options)
            if group.backend == "gloo":
                self._flags_in_bucket = FlagsInBucket(self.world_size)
                wrapped.register_comm_hook(None, self._flags_in_bucket.hook)
        self._train_model = wrapped
        return wrapped

    @contextmanager
    def fitting(self, model: Any) -> Iterator[None]:
        # Count the model's forwards: DDP syncs the buffers before one, and a
        # stand-in step must know whether that was done (_stand_in_backward).
        counting = model.register_forward_pre_hook(self._count_forward)
        try:
            yield
        finally:
            counting.remove()  # gone before the export traces the model
        self.sync_buffers(model)  # the final evaluations read every rank's batch-norm statistics

    def _count_forward(self, module: Any, args: Any) -> None:
        self._forwards += 1

    def sync_buffers(self, model: Any) -> None:
        """Every rank takes rank 0's batch-norm statistics, if training may have made them differ
        (collective: every rank calls it at the same points, before an evaluation)."""
        import torch
        import torch.distributed as dist

        if not self._norms or not self._buffers_differ:
            return
        by_type: dict[Any, list[Any]] = {}
        for buffer in model.buffers():
            by_type.setdefault(buffer.dtype, []).append(buffer)
        with torch.no_grad():
            for buffers in by_type.values():
                flat = torch.cat([b.reshape(-1) for b in buffers])
                dist.broadcast(flat, src=0)
                offset = 0
                for b in buffers:
                    b.copy_(flat[offset : offset + b.numel()].view_as(b))
                    offset += b.numel()
        self._buffers_differ = False

    # -- batches ---------------------------------------------------------------------
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

    def unit_share(self, span: tuple[int, int], units: list[int]) -> tuple[float, list[int]]:
        # The group's units, summed over the ranks (a padding repeat counts none); DDP averages the
        # ranks' gradients, so scaling by world size x this rank's share of them makes that the
        # mean over every unit of the group's step, however unevenly the ranks hold them.
        import torch
        import torch.distributed as dist

        counted = [u if real else 0 for u, real in zip(units, self._real_sizes[span[0] : span[1]])]
        mine = sum(counted)
        group_units = torch.tensor([float(mine)], dtype=torch.float64)
        dist.all_reduce(group_units, group=self.group.control_group)
        return (self.world_size * mine / float(group_units) if float(group_units) > 0 else 0.0), counted

    # -- one step --------------------------------------------------------------------
    def begin_step(self, train_model: Any) -> None:
        """DDP broadcasts rank 0's batch-norm statistics before the step's first forward if a batch
        norm in eval mode will read them and training may have changed them since they were last
        the same on every rank (``setup_model``).

        The modes are read here, before the task's ``train_step``: a task that puts a batch norm
        in eval mode inside its own step is seen from the next step on (its statistics, not
        updated in eval mode, stay the same on every rank from then).
        """
        self._forwards_at_step = self._forwards
        self._oom_flags = None  # given by backward before the synchronising one
        if not self._norms:
            return
        reads = self._buffers_differ and any(not norm.training for norm in self._norms)
        train_model.forward_sync_buffers = reads
        self._buffers_differ = any(norm.training for norm in self._norms) or (self._buffers_differ and not reads)

    def no_sync(self, train_model: Any, last: bool) -> Any:
        """Accumulation inner steps skip the gradient all-reduce; the group's last piece syncs."""
        return nullcontext() if last or not hasattr(train_model, "no_sync") else train_model.no_sync()

    def backward(self, loss: Any, scaler: Any, last: bool) -> None:
        if last:
            # Every out-of-memory this step can recover from has happened by
            # now: the flags' all-reduce runs while the backward computes.
            self._oom_flags = self.send_out_of_memory_flag(False)
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
            flags = self.send_out_of_memory_flag(True)
            self._stand_in_backward(stand_in, buffers_synced=self._forwards > self._forwards_at_step)
        assert flags is not None
        return self.out_of_memory_ranks(flags)

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

    def send_out_of_memory_flag(self, mine: bool, *, in_bucket: bool = True) -> PendingFlags:
        """Give this step's out-of-memory flag (every rank, once per step) and return at once.

        Given just before the step's synchronising backward, when every
        recoverable out-of-memory of the step is known (one in that backward
        fails the run).  On a CPU group it goes with that backward's
        gradients (``FlagsInBucket``); otherwise, or with ``in_bucket=False``
        (no backward follows), the small all-reduce starts now on the control
        group's thread and runs while the backward computes.
        """
        import torch
        import torch.distributed as dist

        hook = self._flags_in_bucket if in_bucket else None
        flags = torch.zeros(self.world_size, dtype=torch.float32 if hook is not None else torch.int32)
        flags[self.rank] = 1 if mine else 0
        if hook is not None:
            hook.outgoing, hook.arrived = flags, None
            return PendingFlags(flags, None)
        return PendingFlags(flags, dist.all_reduce(flags, op=dist.ReduceOp.SUM, group=self.group.control_group, async_op=True))

    def out_of_memory_ranks(self, mine: bool | PendingFlags) -> list[int]:
        """The ranks that ran out of memory in this step, on every rank: from the backward's
        gradients, from the all-reduce ``send_out_of_memory_flag`` started, or (given a bool)
        from one small all-reduce now."""
        pending = mine if isinstance(mine, PendingFlags) else self.send_out_of_memory_flag(bool(mine), in_bucket=False)
        if pending.work is not None:
            pending.work.wait()
            flags = pending.flags
        else:
            hook = self._flags_in_bucket
            assert hook is not None
            flags, hook.arrived = hook.arrived, None
            if flags is None:  # no synchronising backward ran on any rank (they all run the same ones)
                raise RuntimeError("the step's out-of-memory flags were given but no gradient all-reduce carried them")
        return [rank for rank, flag in enumerate(flags.tolist()) if flag]

    # -- stop and pause --------------------------------------------------------------
    def control_view(self, own: Any) -> Any:
        return distributed.AgreedControl(own)  # stop and pause as the ranks agreed, never one rank alone

    def after_step(self, control: Any, step: int) -> None:
        self.group.agree_if_due(control, step)

    def after_epoch(self, control: Any) -> None:
        self.group.agree(control)

    def hold_paused(self, control: Any) -> None:
        self.group.hold_paused(control)

    # -- evaluation ------------------------------------------------------------------
    def before_evaluation(self, model: Any) -> None:
        self.sync_buffers(model)  # each rank scores its share with rank 0's batch-norm statistics

    def eval_batches(self, order: list[list[int]]) -> list[list[int]]:
        return self.group.eval_batches(order)  # whole batches dealt out: each example on one rank, none padded

    def reduce_accumulator(self, task: Any, split: str, accumulator: Any) -> Any:
        return self.group.merge_accumulator(task, split, accumulator)

    # -- checkpoints -----------------------------------------------------------------
    def barrier(self) -> None:
        self.group.barrier()

    def checkpoint_meta(self, which: str) -> dict[str, Any]:
        return {"rank_rng": self.group.rank_rng_states()} if which == "last" else {}

    def restore_process_state(self, meta: dict[str, Any]) -> str:
        if self.group.restore_rank_rng(meta.get("rank_rng", [])):
            return ""
        return f"rank {self.rank}: the checkpoint has no random state of its own (another world size); it continues from rank 0's"

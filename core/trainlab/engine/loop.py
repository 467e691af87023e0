"""The one training loop: every task runs through ``Trainer.fit``.

Tasks supply data, a model and step functions; the loop owns devices,
precision, accumulation, clipping, the optimizer and schedule, the per-epoch
evaluation (through ``Evaluator``, sharing the loop's DataLoaders), best
checkpoints, early stopping, out-of-memory recovery and the control flags.  It does not read the loss back
from the device at every step: losses accumulate on the device and are read
every ``log_interval`` seconds; the events still carry their step.

A loss that is NaN or infinite fails the run at the next read, naming the
first bad step (``LossWindow`` holds the steps' losses until a read and
counts the finite ones before it).  Every checkpoint of the last state reads
the loss first, so a diverged model never replaces a good checkpoint.
Checkpoints of the last state are written at each epoch's end, every
``checkpoint_every_steps`` steps and every ``checkpoint_every_minutes``,
always between two optimizer steps.
"""

from __future__ import annotations

import gc
import math
import time
from typing import Any

import torch

from trainlab.api.batches import batch_size_of, split_batch
from trainlab.api.callbacks import CallbackList, RunState
from trainlab.api.errors import RunFailed
from trainlab.api.events import EvalResult, Log, Progress, TrainStep
from trainlab.api.taskbase import RunContext, Task
from trainlab.engine import distributed
from trainlab.engine.checkpoint import (
    load_model_weights,
    read_checkpoint,
    restore_training_state,
    save_checkpoint,
)
from trainlab.engine.device import autocast, is_out_of_memory
from trainlab.engine.evaluation import Evaluator
from trainlab.engine.loaders import SplitLoaders
from trainlab.engine.loss_window import LossWindow
from trainlab.engine.position import LoopPosition
from trainlab.engine.schedule import Segment, SegmentedSchedule

__all__ = ["LoopPosition", "StopRun", "Trainer"]

MAX_OOM_RETRIES = 3


class StopRun(Exception):
    """Raised inside the loop when a stop was requested."""


class _OutOfMemoryInTheGroup(Exception):
    """Some rank ran out of memory in this step; every rank raises it, after the same collective."""

    def __init__(self, ranks: list[int]):
        super().__init__(f"out of memory on rank(s) {ranks}")
        self.ranks = ranks


def scaled_step(optimizer: torch.optim.Optimizer, scaler: Any) -> bool:
    """``scaler.step`` and ``scaler.update``; False when the step was skipped (inf or NaN
    gradients in fp16), so that the schedule does not advance for a step not taken."""
    if not scaler.is_enabled():
        optimizer.step()
        return True
    before = scaler.get_scale()
    scaler.step(optimizer)
    scaler.update()
    return scaler.get_scale() >= before  # update() lowers the scale exactly when it skipped


_is_oom = is_out_of_memory


class Trainer:
    """Trains ``model`` from ``position`` to the end of ``position.epochs_total``.

    ``total_steps`` is the run plan's figure (from the task's own batch
    order); the loop reports it and does not count again.  After ``fit``,
    ``train_seconds`` is the time spent in training passes and
    ``early_stopped`` says whether early stopping ended the run.
    """

    def __init__(
        self,
        task: Task,
        model: torch.nn.Module,
        ctx: RunContext,
        state: RunState,
        callbacks: CallbackList,
        *,
        position: LoopPosition,
        segments: list[Segment],
        total_steps: int,
        plugin: str = "",
    ):
        self.task = task
        self.plugin = plugin
        self.model = model
        self.ctx = ctx
        self.state = state
        self.callbacks = callbacks
        self.params = ctx.params
        self.position = position
        self.total_steps = int(total_steps)
        self.control = state.control
        self.device = ctx.device
        self.batch_size = int(self.params["batch_size"])
        self.grad_accum = int(self.params["grad_accum"])
        self.optimizer = self._make_optimizer()
        self.schedule = SegmentedSchedule(segments)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self.schedule)
        use_scaler = ctx.precision == "fp16" and self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=use_scaler)
        self.higher_is_better = task.spec.higher_is_better(str(self.params["monitor"]))
        self._log_interval = float(self.params["log_interval"])
        self._checkpoint_seconds = 60.0 * float(self.params.get("checkpoint_every_minutes", 0.0) or 0.0)
        self._last_save = time.perf_counter()
        self._window = LossWindow(self.device)  # the steps' losses since the last read (see the module docstring)
        self._window_first_step = position.step + 1
        self.train_seconds = 0.0  # in training passes this session (data, forward, backward, step, callbacks)
        self.early_stopped = False
        self.start_step = position.step
        self.loaders = SplitLoaders(task, ctx)
        self.evaluator = Evaluator(task, model, ctx, loaders=self.loaders, log=lambda message: self.callbacks_log(message, level="warning"))
        # In a group of processes (torchrun) the task's train_step gets the DDP
        # wrapper; evaluation, checkpoints and the export use the model itself.
        self.group = distributed.current()
        self.train_model = self.group.wrap(model) if self.group is not None else model
        if self.group is not None:  # stop and pause as the ranks agreed, never one rank alone
            self.control = distributed.AgreedControl(state.control)
        self._forwards = 0  # the model's forwards entered (in a group: see fit)
        self._oom_flags: Any = None  # this step's out-of-memory flags, in a group (_try_group)
        # The parameters that gradient clipping walks, listed once: model.parameters()
        # walks every module again at each step (the same tensors throughout a run).
        self._clip_params = list(self.model.parameters())
        self._clip = float(self.params["clip_grad_norm"])
        self._real_sizes: list[int] | None = None  # per batch: this rank's examples (0: a padding repeat)
        self._global_sizes: list[int] | None = None  # per batch: the group's examples

    # -- setup ---------------------------------------------------------------
    def _make_optimizer(self) -> torch.optim.Optimizer:
        groups = self.task.parameter_groups(self.model, float(self.params["weight_decay"]))
        lr = float(self.params["lr"])
        if self.params["optimizer"] == "sgd":
            return torch.optim.SGD(groups, lr=lr, momentum=0.9, nesterov=True)
        if self.params["optimizer"] == "adamw8bit":
            # plan_run checked CUDA and the package (trainlab.api.finetune), so this imports
            import bitsandbytes as bnb

            return bnb.optim.AdamW8bit(groups, lr=lr)
        kwargs: dict[str, Any] = {}
        if self.device.type in ("cuda", "cpu"):
            # One kernel over every tensor.  On the CPU torch's default is a
            # loop of small operations per tensor: 31-52 ms a step for a
            # MiniLM-sized BERT against 9.5 fused (bench/text_vs_trainer.py);
            # the Hugging Face Trainer uses the fused one too.
            kwargs["fused"] = True
        return torch.optim.AdamW(groups, lr=lr, **kwargs)

    def loader(self, split: str, batches: list[list[int]], epoch: int) -> torch.utils.data.DataLoader:
        """The split's DataLoader, fed this pass's batches (see ``SplitLoaders.loader``)."""
        return self.loaders.loader(split, batches, epoch)

    def close(self) -> None:
        """Shut loader workers down (persistent ones live until their loader goes)."""
        self.loaders.close()

    def restore(self, checkpoint_path, *, full: bool = True) -> None:
        """Continue from a checkpoint.  ``full=False`` (the best checkpoint,
        which holds only weights): its weights, a fresh optimizer state, the
        schedule at the position's step."""
        tensors, plain = read_checkpoint(checkpoint_path)
        load_model_weights(self.model, tensors, plain)
        if full:
            restore_training_state(tensors, plain, optimizer=self.optimizer, scheduler=self.scheduler, scaler=self.scaler)
        else:
            self.scheduler.last_epoch = self.position.step
        if self.group is not None and not self.group.restore_rank_rng(plain.get("meta", {}).get("rank_rng", [])):
            self.callbacks_log(f"rank {self.group.rank}: the checkpoint has no random state of its own (another world size); it continues from rank 0's", level="debug")
        # The schedule may have gained a segment since ("train N more epochs").
        self.scheduler.lr_lambdas = [self.schedule] * len(self.optimizer.param_groups)
        # The steps the schedule took, which lag the position by the steps the
        # fp16 gradient scaler skipped (scaled_step), where the checkpoint says.
        taken = self.scheduler.last_epoch if full and "scheduler" in plain else self.position.step
        for group, base_lr in zip(self.optimizer.param_groups, self.scheduler.base_lrs):
            group["lr"] = base_lr * self.schedule(taken)

    # -- checkpoints -----------------------------------------------------------
    def save(self, which: str) -> None:
        meta = {"position": self.position.to_json(), "kind": which, "time": time.time()}
        if self.group is not None:  # every rank reaches each save; rank 0 writes, then all go on together
            if which == "last":
                meta["rank_rng"] = self.group.rank_rng_states()
            if self.group.writer:
                self._write_checkpoint(which, meta)
            self.group.barrier()
            return
        self._write_checkpoint(which, meta)

    def _write_checkpoint(self, which: str, meta: dict[str, Any]) -> None:
        run_dir = self.state.run_dir
        if which == "best":
            save_checkpoint(run_dir / "checkpoints" / "best.safetensors", self.model, meta, full=False)
        else:
            self.callbacks_log(f"saving checkpoint at step {self.position.step}", level="debug")
            self._last_save = time.perf_counter()
            save_checkpoint(
                run_dir / "checkpoints" / "last.safetensors",
                self.model,
                meta,
                optimizer=self.optimizer,
                scheduler=self.scheduler,
                scaler=self.scaler,
            )

    def callbacks_log(self, message: str, level: str = "info") -> None:
        self.state.emit(Log(step=self.position.step, epoch=self.position.epoch, level=level, message=message))

    # -- the loop --------------------------------------------------------------
    def fit(self) -> None:
        # In a group, count the model's forwards: DDP syncs the buffers before
        # one, and a stand-in step must know whether that was done (_stand_in_backward).
        counting = self.model.register_forward_pre_hook(self._count_forward) if self.group is not None else None
        try:
            self._fit()
        finally:
            if counting is not None:  # gone before the export traces the model
                counting.remove()
        if self.group is not None:  # the final evaluations read every rank's batch-norm statistics
            self.group.sync_buffers(self.model)

    def _count_forward(self, module: Any, args: Any) -> None:
        self._forwards += 1

    def _fit(self) -> None:
        pos = self.position
        state = self.state
        self.start_step = pos.step
        state.total_steps = self.total_steps
        state.epochs = pos.epochs_total
        checkpoint_every = int(self.params["checkpoint_every_steps"])
        self._last_save = time.perf_counter()
        while pos.epoch <= pos.epochs_total:
            epoch = pos.epoch
            state.epoch = epoch
            world = self.group.world_size if self.group is not None else 1
            order = self.task.batch_order("train", epoch, self.batch_size * world, int(self.params["seed"]))
            if self.group is not None:
                order, self._real_sizes, self._global_sizes = self.group.shard_batches(order)
            remaining = order[pos.batches_done :]
            self.callbacks.call("on_epoch_start", state)
            self.model.train()
            if remaining:
                self._train_epoch(epoch, order, remaining, checkpoint_every)
            # epoch done
            pos.epoch = epoch + 1
            pos.batches_done = 0
            self._evaluate_epoch(epoch)
            self.callbacks.call("on_epoch_end", state)
            self.save("last")
            if self.group is not None:
                self.group.agree(self.control)
            if self.control.stop_requested:
                break

    def _train_epoch(self, epoch: int, order: list[list[int]], remaining: list[list[int]], checkpoint_every: int) -> None:
        pos, state = self.position, self.state
        n_batches = len(order)
        loader = self.loader("train", remaining, epoch)
        window = self._window
        window.reset()
        self._window_first_step = pos.step + 1
        window_samples = 0
        window_steps = 0
        window_start = time.perf_counter()
        last_read = window_start
        group: list[Any] = []
        has_step_hook = self.callbacks.has("on_step_end")
        for index, batch in enumerate(loader, start=pos.batches_done):
            group.append(batch)
            last_of_epoch = index == n_batches - 1
            if len(group) < self.grad_accum and not last_of_epoch:
                continue
            group_n, group_loss, factor = self._run_group(group, (index + 1 - len(group), index + 1))
            window.add(group_loss, factor)  # on the device: no read
            group = []
            pos.batches_done = index + 1
            pos.step += 1
            pos.samples_seen += group_n
            window_samples += group_n
            window_steps += 1
            state.step = pos.step
            state.samples_seen = pos.samples_seen
            if has_step_hook:
                self.callbacks.call("on_step_end", state)
            if self.group is not None:
                self.group.agree_if_due(self.control, pos.step)
            now = time.perf_counter()
            save_due = not last_of_epoch and (
                (checkpoint_every and pos.step % checkpoint_every == 0)
                or (self._checkpoint_seconds and now - self._last_save >= self._checkpoint_seconds)
            )
            if (
                now - last_read >= self._log_interval
                or last_of_epoch
                or save_due  # a checkpoint reads the loss first: a diverged model never replaces a good one
                or self.control.stop_requested
                or self.control.paused
            ):
                self._report(window_samples, window_steps, now - window_start, epoch)
                self.train_seconds += now - window_start
                window.reset()
                self._window_first_step = pos.step + 1
                window_samples = window_steps = 0
                window_start = last_read = time.perf_counter()
            if save_due:
                self.save("last")
            if self.control.paused:
                self._pause()
                window_start = last_read = time.perf_counter()
            if self.control.stop_requested and not last_of_epoch:
                self.save("last")
                raise StopRun()

    def _run_group(self, group: list[Any], span: tuple[int, int] = (0, 0)) -> tuple[int, torch.Tensor, float]:
        """Forward/backward every batch of one accumulation group, then step.

        Returns (examples counted, loss, factor): the step's summed loss is
        ``loss * factor`` (one piece: its mean loss, detached, and its size;
        the multiply waits for the read, ``LossWindow``).

        On CUDA out-of-memory the whole group is redone with each batch split
        into twice as many micro-batches (same effective batch), up to three
        times.  In a group of processes the ranks decide together
        (``_try_group``): one rank out of memory makes every rank split the
        same way, so their all-reduces stay matched.
        """
        while True:
            try:
                return self._try_group(group, span)
            except _OutOfMemoryInTheGroup as exc:
                ranks = exc.ranks
            except Exception as exc:
                if not _is_oom(exc):
                    raise
                ranks = []
            # Out of the except block: the exception's frames hold the step's
            # tensors, which gc and empty_cache could not free in there.
            self._recover_from_oom(ranks)

    def _recover_from_oom(self, ranks: list[int]) -> None:
        pos = self.position
        self.optimizer.zero_grad(set_to_none=True)
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        where = f" on rank {', '.join(map(str, ranks))}" if ranks else ""
        retries = int(math.log2(pos.micro_splits))
        if retries >= MAX_OOM_RETRIES:
            raise RunFailed(
                f"out of memory{where} even with batch {self.batch_size} split into {pos.micro_splits} micro-batches: "
                "lower --batch-size, use a smaller model or --precision bf16/fp16, "
                "or close other programs using the GPU"
            )
        pos.micro_splits *= 2
        micro = max(1, self.batch_size // pos.micro_splits)
        every = " every rank" if ranks else ""
        self.callbacks_log(
            f"out of memory{where}:{every} retrying with micro-batches of about {micro} "
            f"({pos.micro_splits}x gradient accumulation, same effective batch of {self.batch_size * self.grad_accum})",
            level="warning",
        )

    def _try_group(self, group: list[Any], span: tuple[int, int] = (0, 0)) -> tuple[int, torch.Tensor, float]:
        splits = self.position.micro_splits
        if self.group is not None:
            self.group.before_step(self.train_model)
        pieces = []
        for batch in group:
            pieces.extend(split_batch(batch, splits) if splits > 1 else [batch])
        sizes = [batch_size_of(p) for p in pieces]
        total = sum(sizes) or 1
        share, counted = 1.0, total
        if self.group is not None and self._global_sizes is not None:
            # DDP averages the ranks' gradients; scaling by this rank's share of
            # the group's examples makes that the mean over the group's batch
            # (ranks may hold one example more or less, a padding repeat none).
            real = sum(self._real_sizes[span[0] : span[1]])
            counted = sum(self._global_sizes[span[0] : span[1]])
            share = self.group.world_size * real / max(1, counted)
        loss_total: torch.Tensor | None = None
        factor = 1.0
        synced, forwards = False, self._forwards
        self._oom_flags = None  # sent by _forward_backward before the synchronising backward
        for number, (piece, size) in enumerate(zip(pieces, sizes)):
            last = number == len(pieces) - 1
            try:
                loss, n = self._forward_backward(piece, last, size, total, share)
            except Exception as exc:
                if self.group is None or not _is_oom(exc):
                    raise
                if last and getattr(exc, "_trainlab_in_backward", False):
                    # Part of the all-reduce may have gone out: this rank cannot
                    # rejoin it, and the others fail within the collective timeout.
                    raise RunFailed(
                        f"rank {self.group.rank} ran out of memory while the gradients were being synchronised: "
                        "lower --batch-size, use a smaller model or --precision bf16/fp16"
                    ) from None
                break
            synced = synced or last
            if len(pieces) == 1:  # the usual step: its mean loss and its size, multiplied at the read
                loss_total, factor = loss.detach(), float(size or n)
            else:
                summed = loss.detach().float() * (size or n)
                loss_total, factor = (summed if loss_total is None else loss_total + summed), 1.0
        if self.group is not None:
            flags = self._oom_flags
            if not synced:  # the others wait in this step's all-reduce: join it with nothing to add
                flags = self.group.send_out_of_memory_flag(True)
                self._stand_in_backward(pieces[0], buffers_synced=self._forwards > forwards)
            ranks = self.group.out_of_memory_ranks(flags)
            if ranks:
                raise _OutOfMemoryInTheGroup(ranks)
        if loss_total is None:  # nothing ran: out of memory in the first piece, on a rank of a group (raised above)
            loss_total, factor = torch.zeros((), device=self.device), 1.0
        if counted != total:  # the events report rank 0's mean loss over the group's example count
            factor *= counted / total
        if self.scaler.is_enabled():
            self.scaler.unscale_(self.optimizer)
        if self._clip > 0:
            torch.nn.utils.clip_grad_norm_(self._clip_params, self._clip)
        if self._optimizer_step():
            self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return counted, loss_total, factor

    def _forward_backward(self, piece: Any, last: bool, size: int, total: int, share: float) -> tuple[torch.Tensor, int]:
        """One micro-batch's forward and backward; inner pieces skip the all-reduce."""
        task, ctx = self.task, self.ctx
        piece = task.to_device(piece, ctx)
        with distributed.RankGroup.no_sync(self.train_model, last):  # inner pieces: no all-reduce
            with autocast(self.device, ctx.precision):
                loss, n = task.train_step(self.train_model, piece, ctx)
            # Weight each micro-batch's mean loss by its share of the group, so
            # the gradient is that of the whole group's mean loss.
            weight = (size or n) / total * share
            weighted = loss if weight == 1.0 else loss * weight  # one piece holding the whole batch: as it is
            if last and self.group is not None:
                # Every out-of-memory this step can recover from has happened by
                # now: the flags' all-reduce runs while the backward computes.
                self._oom_flags = self.group.send_out_of_memory_flag(False)
            try:
                self.scaler.scale(weighted).backward()
            except Exception as exc:
                exc._trainlab_in_backward = True  # type: ignore[attr-defined]
                raise
        return loss, n

    def _stand_in_backward(self, piece: Any, *, buffers_synced: bool) -> None:
        """A backward through the DDP wrapper that adds nothing: two examples, weight 0.

        A rank that ran out of memory before its synchronising backward still
        takes part in the step's all-reduce, so no rank waits for it; the
        step is then thrown away on every rank (``out_of_memory_ranks``).
        DDP broadcasts the buffers (batch-norm statistics) before the first
        forward of a step: when one of this step's forwards began, that
        broadcast is done and the stand-in must not make a second one, which
        no other rank would match.
        """
        if buffers_synced:
            self.train_model.require_forward_param_sync = False  # DDP's own switch for that broadcast
        # two examples, not one: a batch norm in training refuses a batch of one
        few = split_batch(piece, max(1, batch_size_of(piece) // 2))[0]
        try:
            few = self.task.to_device(few, self.ctx)
            with autocast(self.device, self.ctx.precision):
                loss, _ = self.task.train_step(self.train_model, few, self.ctx)
            (loss * 0.0).backward()
        except Exception as exc:
            if not _is_oom(exc):
                raise
        else:
            return
        # a rank that cannot take part fails; the others within the collective timeout
        raise RunFailed(f"rank {self.group.rank} ran out of memory even for two examples: lower --batch-size or use a smaller model")

    def _optimizer_step(self) -> bool:
        """The optimizer's step through the gradient scaler; False when the scaler skipped it."""
        return scaled_step(self.optimizer, self.scaler)

    def _report(self, samples: int, steps: int, seconds: float, epoch: int) -> None:
        if not steps:
            return
        total, finite = self._window.read()  # the one device sync per interval
        if not math.isfinite(total):
            raise RunFailed(self._diverged(total, self._window_first_step + int(finite)))
        loss = total / max(1, samples)
        rate = samples / seconds if seconds > 0 else 0.0
        pos = self.position
        lr = float(self.optimizer.param_groups[0]["lr"])
        self.state.emit(TrainStep(step=pos.step, epoch=epoch, loss=loss, lr=lr, steps=steps, samples_per_second=rate))
        train_total = self.train_seconds + seconds
        done_this_session = pos.step - self.start_step
        eta = None
        if done_this_session > 0 and train_total > 0:
            eta = (self.total_steps - pos.step) * train_total / done_this_session
        self.state.emit(
            Progress(
                step=pos.step,
                epoch=epoch,
                total_steps=self.total_steps,
                epochs=pos.epochs_total,
                samples=pos.samples_seen,
                samples_per_second=rate,
                eta_seconds=eta,
            )
        )

    def _diverged(self, value: float, step: int) -> str:
        """The run's error for a NaN or infinite training loss first seen at ``step``."""
        owner = f"task {self.task.spec.id}" + (f", plugin {self.plugin}" if self.plugin else "")
        if step <= 1:
            advice = (
                "it was so from the first step, so the data (missing or infinite values) "
                "or the task's loss is the likely cause, rather than the learning rate"
            )
        else:
            advice = "lower the learning rate (--lr) or raise clip_grad_norm"
            if self.ctx.precision in ("fp16", "bf16"):
                advice += ", or train in fp32 (--precision fp32)"
        return f"the training loss is {'NaN' if math.isnan(value) else value} from step {step} on ({owner}): {advice}"

    def _pause(self) -> None:
        pos = self.position
        self.save("last")
        self.state.emit(Progress(step=pos.step, epoch=pos.epoch, total_steps=self.total_steps, epochs=pos.epochs_total, samples=pos.samples_seen, phase="paused"))
        self.callbacks_log("paused")
        if self.group is not None:
            self.group.hold_paused(self.control)
        else:
            while not self.control.wait_while_paused(0.5):
                pass
        if not self.control.stop_requested:
            self.callbacks_log("resumed")

    # -- evaluation --------------------------------------------------------------
    def evaluate(self, split: str) -> dict[str, Any]:
        """The model's report on ``split`` (see ``Evaluator.evaluate``)."""
        if self.group is not None:  # each rank scores its share with rank 0's batch-norm statistics
            self.group.sync_buffers(self.model)
        return self.evaluator.evaluate(split)

    def _evaluate_epoch(self, epoch: int) -> None:
        pos, state = self.position, self.state
        if "val" not in self.task.splits():
            return
        self.callbacks.call("on_eval_start", state)
        report = self.evaluate("val")
        monitor = str(self.params["monitor"])
        value = monitored_value(report, monitor)
        improved = value is not None and (
            pos.best_metric is None or (value > pos.best_metric if self.higher_is_better else value < pos.best_metric)
        )
        if improved:
            pos.best_metric, pos.best_step, pos.best_epoch = float(value), pos.step, epoch
            pos.bad_evals = 0
            state.best_metric, state.best_step = pos.best_metric, pos.best_step
            if self.params["final_weights"] == "best" or self.params["keep_checkpoints"] in ("best", "last+best"):
                self.save("best")
        else:
            pos.bad_evals += 1
        result = EvalResult(
            step=pos.step,
            epoch=epoch,
            split="val",
            loss=report["loss"],
            metrics=dict(report.get("metrics", {})),
            best=improved,
            monitor=monitor,
        )
        state.last_eval = report
        state.emit(result)
        self.callbacks.call("on_eval_end", state, result)
        patience = int(self.params["early_stopping_patience"])
        if patience and pos.bad_evals >= patience and not self.control.stop_requested:
            self.early_stopped = True
            self.callbacks_log(f"early stopping: no improvement of {monitor} in {patience} evaluation(s)")
            self.control.request_stop("early stopping")

    def load_best_weights(self) -> bool:
        path = self.state.run_dir / "checkpoints" / "best.safetensors"
        if not path.exists():
            return False
        tensors, plain = read_checkpoint(path)
        load_model_weights(self.model, tensors, plain)
        return True


def monitored_value(report: dict[str, Any], monitor: str) -> float | None:
    """The value of ``monitor`` in an evaluation report; None when it is
    missing or not a finite number (a NaN R^2 of a constant target never counts
    as an improvement)."""
    value = report.get("loss") if monitor == "loss" else report.get("metrics", {}).get(monitor, report.get(monitor))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)

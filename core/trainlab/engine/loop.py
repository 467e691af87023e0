"""The one training loop: every task runs through ``Trainer.fit``.

Tasks supply data, a model and step functions; the loop owns devices,
precision, accumulation, clipping, the optimizer and schedule, the per-epoch
evaluation (through ``Evaluator``, sharing the loop's DataLoaders), best
checkpoints, early stopping, out-of-memory recovery and the control flags.
What running over several processes changes (the model's wrapper, each
process's share of the batches, the backward's all-reduce, agreeing on stop,
pause and out-of-memory, who writes) is the strategy's
(``trainlab.engine.strategy``): the loop calls it at a few points and reads
nothing else of the processes.

It does not read the loss back from the device at every step: losses
accumulate on the device and are read every ``log_interval`` seconds; the
events still carry their step.  A loss that is NaN or infinite fails the run
at the next read, naming the first bad step (``LossWindow`` holds the steps'
losses until a read and counts the finite ones before it).  Every checkpoint
of the last state reads the loss first, so a diverged model never replaces a
good checkpoint.  Checkpoints of the last state are written at each epoch's
end, every ``checkpoint_every_steps`` steps and every
``checkpoint_every_minutes``, always between two optimizer steps.
"""

from __future__ import annotations

import gc
import math
import time
from dataclasses import dataclass
from typing import Any

import torch

from trainlab.api.batches import batch_size_of, split_batch
from trainlab.api.callbacks import CallbackList, RunState
from trainlab.api.errors import RunFailed
from trainlab.api.events import EvalResult, Log, Progress, TrainStep
from trainlab.api.params import engine_params
from trainlab.api.taskbase import RunContext, Task
from trainlab.engine.device import autocast, is_out_of_memory
from trainlab.engine.evaluation import Evaluator
from trainlab.engine.loaders import SplitLoaders
from trainlab.engine.loss_window import LossWindow
from trainlab.engine.position import LoopPosition
from trainlab.engine.schedule import Segment, SegmentedSchedule
from trainlab.engine.strategy import Strategy, for_run

__all__ = ["LoopPosition", "StopRun", "Trainer"]

MAX_OOM_RETRIES = 3


class StopRun(Exception):
    """Raised inside the loop when a stop was requested."""


class _OutOfMemoryInTheGroup(Exception):
    """Some process ran out of memory in this step; every process raises it, as the strategy agreed."""

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


@dataclass
class _Interval:
    """The steps since the loss was last read back: what the next ``TrainStep`` event reports."""

    start: float
    samples: int = 0
    steps: int = 0
    units: int = 0  # what the task's batch_units counts (tokens), when it counts

    def restart(self) -> None:
        self.start = time.perf_counter()
        self.samples = self.steps = self.units = 0


class Trainer:
    """Trains ``model`` from ``position`` to the end of ``position.epochs_total``.

    ``total_steps`` is the run plan's figure (from the task's own batch
    order); the loop reports it and does not count again.  ``strategy``
    (default: the one of this process's run, ``strategy.for_run``) spreads
    the work over processes.  After ``fit``, ``train_seconds`` is the time
    spent in training passes and ``early_stopped`` says whether early
    stopping ended the run.
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
        strategy: Strategy | None = None,
    ):
        self.task, self.plugin, self.model, self.ctx = task, plugin, model, ctx
        self.state, self.callbacks, self.position = state, callbacks, position
        self.params = engine_params(ctx.params)
        self.total_steps = total_steps
        self.device = ctx.device
        self.batch_size = self.params.batch_size
        self.grad_accum = self.params.grad_accum
        self.strategy = strategy if strategy is not None else for_run(self.params, ctx.precision)
        # The task's train_step gets the strategy's wrapper (DDP's); evaluation,
        # checkpoints and the export use the model itself.  The optimizer is made
        # after the wrapping, as a sharding strategy needs.
        self.train_model = self.strategy.setup_model(model)
        self.optimizer = self.strategy.make_optimizer(self._make_optimizer)
        self.schedule = SegmentedSchedule(segments)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self.schedule)
        use_scaler = ctx.precision == "fp16" and self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=use_scaler)
        self.control = self.strategy.control_view(state.control)  # stop and pause as every process agreed
        self.higher_is_better = task.spec.higher_is_better(self.params.monitor)
        self._checkpoint_seconds = 60.0 * self.params.checkpoint_every_minutes
        self._last_save = time.perf_counter()
        self._window = LossWindow(self.device)  # the steps' losses since the last read (see the module docstring)
        self._window_first_step = position.step + 1
        self._has_step_hook = False
        self._count_units: Any = None  # the task's batch_units, when it names a throughput_unit
        self.train_seconds = 0.0  # in training passes this session (data, forward, backward, step, callbacks)
        self.early_stopped = False
        self.start_step = position.step
        self.loaders = SplitLoaders(task, ctx)
        self.evaluator = Evaluator(
            task, model, ctx, loaders=self.loaders, log=lambda message: self.callbacks_log(message, level="warning"), strategy=self.strategy
        )
        # The parameters that gradient clipping walks, listed once: model.parameters()
        # walks every module again at each step (the same tensors throughout a run).
        self._clip_params = list(self.model.parameters())

    # -- setup ---------------------------------------------------------------
    def _make_optimizer(self) -> torch.optim.Optimizer:
        groups = self.task.parameter_groups(self.model, self.params.weight_decay)
        lr = self.params.lr
        if self.params.optimizer == "sgd":
            return torch.optim.SGD(groups, lr=lr, momentum=0.9, nesterov=True)
        if self.params.optimizer == "adamw8bit":
            # plan_run checked CUDA and the package (trainlab.api.finetune), so this imports
            import bitsandbytes as bnb

            return bnb.optim.AdamW8bit(groups, lr=lr)
        kwargs: dict[str, Any] = {}
        if self.device.type in ("cuda", "cpu"):
            # One kernel over every tensor.  On the CPU torch's default is a
            # loop of small operations per tensor, several times slower for a
            # MiniLM-sized BERT (bench/text_vs_trainer.py); the Hugging Face
            # Trainer uses the fused one too.
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
        tensors, plain = self.strategy.read_checkpoint(checkpoint_path, self.model)
        self.strategy.load_weights(self.model, tensors, plain)
        if full:
            self.strategy.restore_training_state(self.model, tensors, plain, optimizer=self.optimizer, scheduler=self.scheduler, scaler=self.scaler)
        else:
            self.scheduler.last_epoch = self.position.step
        note = self.strategy.restore_process_state(plain.get("meta", {}))
        if note:
            self.callbacks_log(note, level="debug")
        # The schedule may have gained a segment since ("train N more epochs").
        self.scheduler.lr_lambdas = [self.schedule] * len(self.optimizer.param_groups)
        # The steps the schedule took, which lag the position by the steps the
        # fp16 gradient scaler skipped (scaled_step), where the checkpoint says.
        taken = self.scheduler.last_epoch if full and "scheduler" in plain else self.position.step
        for group, base_lr in zip(self.optimizer.param_groups, self.scheduler.base_lrs):
            group["lr"] = base_lr * self.schedule(taken)

    # -- checkpoints -----------------------------------------------------------
    def save(self, which: str) -> None:
        """A checkpoint: ``"last"`` (everything a resume needs) or ``"best"`` (the weights).
        Every process calls it at the same points; the strategy says who writes."""
        meta = {"position": self.position.to_json(), "kind": which, "time": time.time()}
        meta.update(self.strategy.checkpoint_meta(which))
        folder = self.state.run_dir / "checkpoints"
        if which == "best":
            self.strategy.save_checkpoint(folder / "best.safetensors", self.model, meta, full=False)
            return
        if self.strategy.is_main:
            self.callbacks_log(f"saving checkpoint at step {self.position.step}", level="debug")
        self._last_save = time.perf_counter()
        self.strategy.save_checkpoint(
            folder / "last.safetensors", self.model, meta, optimizer=self.optimizer, scheduler=self.scheduler, scaler=self.scaler
        )

    def callbacks_log(self, message: str, level: str = "info") -> None:
        self.state.emit(Log(step=self.position.step, epoch=self.position.epoch, level=level, message=message))

    # -- the loop --------------------------------------------------------------
    def fit(self) -> None:
        """Train to the last epoch (``StopRun`` when a stop came in the middle of one)."""
        with self.strategy.fitting(self.model):
            self._fit()
        # a sharding strategy hands back the whole model, for the final evaluation and the export
        self.model = self.strategy.final_model(self.model)
        self.evaluator.model = self.model

    def _fit(self) -> None:
        pos, state = self.position, self.state
        self.start_step = pos.step
        state.total_steps = self.total_steps
        state.epochs = pos.epochs_total
        self._last_save = time.perf_counter()
        while pos.epoch <= pos.epochs_total:
            epoch = pos.epoch
            state.epoch = epoch
            order = self._epoch_batches(epoch)
            remaining = order[pos.batches_done :]
            self.callbacks.call("on_epoch_start", state)
            self.model.train()
            if remaining:
                self._train_epoch(epoch, len(order), remaining)
            pos.epoch = epoch + 1
            pos.batches_done = 0
            self._evaluate_epoch(epoch)
            self.callbacks.call("on_epoch_end", state)
            self.save("last")
            self.strategy.after_epoch(self.control)
            if self.control.stop_requested:
                break

    def _epoch_batches(self, epoch: int) -> list[list[int]]:
        """This process's batches of ``epoch``: its share of the task's order for the whole group."""
        order = self.task.batch_order("train", epoch, self.batch_size * self.strategy.world_size, self.params.seed)
        return self.strategy.train_batches(order)

    def _train_epoch(self, epoch: int, n_batches: int, remaining: list[list[int]]) -> None:
        """The rest of ``epoch`` from ``position.batches_done``: one optimizer step per ``grad_accum`` batches."""
        pos = self.position
        loader = self.loader("train", remaining, epoch)
        self._window.reset()
        self._window_first_step = pos.step + 1
        self._has_step_hook = self.callbacks.has("on_step_end")
        # a plugin API 1 task may not subclass Task; a task without a unit counts none
        self._count_units = getattr(self.task, "batch_units", None) if getattr(self.task, "throughput_unit", "") else None
        interval = _Interval(time.perf_counter())
        group: list[Any] = []
        for index, batch in enumerate(loader, start=pos.batches_done):
            group.append(batch)
            last_of_epoch = index == n_batches - 1
            if len(group) < self.grad_accum and not last_of_epoch:
                continue
            self._take_step(group, (index + 1 - len(group), index + 1), interval)
            group = []
            self._between_steps(epoch, interval, last_of_epoch)

    def _take_step(self, group: list[Any], span: tuple[int, int], interval: _Interval) -> None:
        """One optimizer step over the batches ``span`` of the epoch; the position moves past them."""
        pos, state = self.position, self.state
        examples, loss, factor = self._run_group(group, span)
        self._window.add(loss, factor)  # on the device: no read
        pos.batches_done = span[1]
        pos.step += 1
        pos.samples_seen += examples
        interval.samples += examples
        interval.steps += 1
        if self._count_units is not None:
            interval.units += sum(self._count_units(batch) or 0 for batch in group)
        state.step = pos.step
        state.samples_seen = pos.samples_seen
        if self._has_step_hook:
            self.callbacks.call("on_step_end", state)
        self.strategy.after_step(self.control, pos.step)

    def _between_steps(self, epoch: int, interval: _Interval, last_of_epoch: bool) -> None:
        """After a step: read the loss back when due, checkpoint, pause or stop as asked."""
        control = self.control
        now = time.perf_counter()
        save_due = not last_of_epoch and self._checkpoint_due(now)
        if (
            now - interval.start >= self.params.log_interval
            or last_of_epoch
            or save_due  # a checkpoint reads the loss first: a diverged model never replaces a good one
            or control.stop_requested
            or control.paused
        ):
            self._report(interval.samples, interval.steps, now - interval.start, epoch, interval.units)
            self.train_seconds += now - interval.start
            self._window.reset()
            self._window_first_step = self.position.step + 1
            interval.restart()
        if save_due:
            self.save("last")
        if control.paused:
            self._pause()
            interval.start = time.perf_counter()
        if control.stop_requested and not last_of_epoch:
            self.save("last")
            raise StopRun()

    def _checkpoint_due(self, now: float) -> bool:
        """Whether a checkpoint of the last state is due (every N steps, every M minutes)."""
        every = self.params.checkpoint_every_steps
        if every and self.position.step % every == 0:
            return True
        return bool(self._checkpoint_seconds) and now - self._last_save >= self._checkpoint_seconds

    # -- one step ----------------------------------------------------------------
    def _run_group(self, group: list[Any], span: tuple[int, int] = (0, 0)) -> tuple[int, torch.Tensor, float]:
        """Forward/backward every batch of one accumulation group, then step.

        Returns (examples counted, loss, factor): the step's summed loss is
        ``loss * factor`` (one piece: its mean loss, detached, and its size;
        the multiply waits for the read, ``LossWindow``).

        On out-of-memory the whole group is redone with each batch split into
        twice as many micro-batches (same effective batch), up to three
        times.  Over several processes the strategy has them decide together
        (``Strategy.step_out_of_memory``): one out of memory makes every one
        split the same way, so their all-reduces stay matched.
        """
        while True:
            try:
                return self._try_group(group, span)
            except _OutOfMemoryInTheGroup as exc:
                ranks = exc.ranks
            except Exception as exc:
                if not is_out_of_memory(exc):
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
        """One attempt at the step (see ``_run_group``)."""
        splits = self.position.micro_splits
        self.strategy.begin_step(self.train_model)
        pieces, owners = [], []  # the micro-batches, and the batch of the group each comes from
        for number, batch in enumerate(group):
            split = split_batch(batch, splits) if splits > 1 else [batch]
            pieces.extend(split)
            owners.extend([number] * len(split))
        sizes = [batch_size_of(p) for p in pieces]
        total = sum(sizes) or 1
        share, counted = self.strategy.step_share(span, total)
        weights = self._loss_weights(pieces)
        if weights is not None:
            # the task's units (a language model's trained tokens): every process's share of the
            # group's units, so that the step's gradient is that of the mean over all of them
            per_batch = [sum(w for w, owner in zip(weights, owners) if owner == b) for b in range(len(group))]
            share, per_batch = self.strategy.unit_share(span, per_batch)
            weights = [w if per_batch[owner] else 0 for w, owner in zip(weights, owners)]
        loss_total, factor, synced = self._forward_backward_all(pieces, sizes, total, share, weights)
        ranks = self.strategy.step_out_of_memory(synced, lambda: self._stand_in_loss(pieces[0]))
        if ranks:
            raise _OutOfMemoryInTheGroup(ranks)
        if loss_total is None:  # nothing ran: out of memory in the first piece, in a group (raised above)
            loss_total, factor = torch.zeros((), device=self.device), 1.0
        if counted != total:  # the events report the main process's mean loss over the group's example count
            factor *= counted / total
        self._apply_gradients()
        return counted, loss_total, factor

    def _loss_weights(self, pieces: list[Any]) -> list[int] | None:
        """What each piece's mean loss is a mean over, where the task's ``loss_weight`` counts it
        (a language model's trained tokens); None: its examples."""
        weigh = getattr(self.task, "loss_weight", None)  # a plugin API 1 task may not subclass Task
        weights = [weigh(p) for p in pieces] if weigh is not None else []
        return None if not weights or None in weights else [int(w) for w in weights]

    def _forward_backward_all(self, pieces: list[Any], sizes: list[int], total: int, share: float, weights: list[int] | None = None) -> tuple[Any, float, bool]:
        """Every micro-batch's forward and backward: (the summed loss or None, its factor, whether
        the synchronising backward ran).  An out-of-memory goes to the strategy."""
        loss_total: torch.Tensor | None = None
        factor, synced = 1.0, False
        unit_total = sum(weights) if weights is not None else 0
        for number, (piece, size) in enumerate(zip(pieces, sizes)):
            last = number == len(pieces) - 1
            # each micro-batch's mean loss weighted by its share of the group's, so that the
            # gradient is that of the whole group's mean loss (over examples, or the task's units)
            if weights is None:
                weight = (size or None, total)
            else:
                weight = (weights[number], unit_total or 1)
            try:
                loss, n = self._forward_backward(piece, last, weight, share)
            except Exception as exc:  # noqa: BLE001 - the strategy raises again what is not an out-of-memory it waits out
                self.strategy.piece_out_of_memory(exc, last)
                break
            synced = synced or last
            if len(pieces) == 1:  # the usual step: its mean loss and its size, multiplied at the read
                loss_total, factor = loss.detach(), float(size or n)
            else:
                summed = loss.detach().float() * (size or n)
                loss_total, factor = (summed if loss_total is None else loss_total + summed), 1.0
        return loss_total, factor, synced

    def _forward_backward(self, piece: Any, last: bool, part: tuple[int | None, int], share: float) -> tuple[torch.Tensor, int]:
        """One micro-batch's forward and backward; inner pieces skip a group's all-reduce.
        ``part``: (what the piece's mean loss is over, or None for the examples train_step counts;
        the same counted over this process's step)."""
        task, ctx = self.task, self.ctx
        piece = task.to_device(piece, ctx)
        with self.strategy.no_sync(self.train_model, last):
            with autocast(self.device, ctx.precision):
                loss, n = task.train_step(self.train_model, piece, ctx)
            size, total = part
            weight = (n if size is None else size) / total * share
            weighted = loss if weight == 1.0 else loss * weight  # one piece holding the whole batch: as it is
            self.strategy.backward(weighted, self.scaler, last)
        return loss, n

    def _stand_in_loss(self, piece: Any) -> torch.Tensor:
        """The loss of a few examples of ``piece``, for a process that ran out of memory but must
        still take part in the step (``Strategy.step_out_of_memory``)."""
        # two examples, not one: a batch norm in training refuses a batch of one
        few = split_batch(piece, max(1, batch_size_of(piece) // 2))[0]
        few = self.task.to_device(few, self.ctx)
        with autocast(self.device, self.ctx.precision):
            loss, _ = self.task.train_step(self.train_model, few, self.ctx)
        return loss

    def _apply_gradients(self) -> None:
        """Unscale, clip, the optimizer's step and the schedule's (unless the scaler skipped it)."""
        if self.scaler.is_enabled():
            self.scaler.unscale_(self.optimizer)
        if self.params.clip_grad_norm > 0:
            self.strategy.clip_gradients(self._clip_params, self.params.clip_grad_norm)
        if self._optimizer_step():
            self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)

    def _optimizer_step(self) -> bool:
        """The optimizer's step through the gradient scaler; False when the scaler skipped it."""
        return scaled_step(self.optimizer, self.scaler)

    # -- events, pause ---------------------------------------------------------------
    def _report(self, samples: int, steps: int, seconds: float, epoch: int, units: int = 0) -> None:
        if not steps:
            return
        total, finite = self._window.read()  # the one device sync per interval
        if not math.isfinite(total):
            raise RunFailed(self._diverged(total, self._window_first_step + int(finite)))
        loss = total / max(1, samples)
        rate = samples / seconds if seconds > 0 else 0.0
        unit_rate = units / seconds if units and seconds > 0 else 0.0
        unit = self.task.throughput_unit if unit_rate else ""
        pos = self.position
        lr = float(self.optimizer.param_groups[0]["lr"])
        self.state.emit(TrainStep(step=pos.step, epoch=epoch, loss=loss, lr=lr, steps=steps, samples_per_second=rate, units_per_second=unit_rate, unit=unit))
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
                units_per_second=unit_rate,
                unit=unit,
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
        self.strategy.hold_paused(self.control)
        if not self.control.stop_requested:
            self.callbacks_log("resumed")

    # -- evaluation --------------------------------------------------------------
    def evaluate(self, split: str) -> dict[str, Any]:
        """The model's report on ``split`` (see ``Evaluator.evaluate``)."""
        self.strategy.before_evaluation(self.model)
        self.evaluator.model = self.strategy.evaluation_model(self.model)
        try:
            return self.evaluator.evaluate(split)
        finally:
            self.evaluator.model = self.model

    def _evaluate_epoch(self, epoch: int) -> None:
        pos, state = self.position, self.state
        if "val" not in self.task.splits():
            return
        self.callbacks.call("on_eval_start", state)
        report = self.evaluate("val")
        monitor = self.params.monitor
        value = monitored_value(report, monitor)
        improved = value is not None and (
            pos.best_metric is None or (value > pos.best_metric if self.higher_is_better else value < pos.best_metric)
        )
        if improved:
            pos.best_metric, pos.best_step, pos.best_epoch = float(value), pos.step, epoch
            pos.bad_evals = 0
            state.best_metric, state.best_step = pos.best_metric, pos.best_step
            if self.params.keeps_best:
                self.save("best")
        else:
            pos.bad_evals += 1
        result = EvalResult(
            step=pos.step,
            epoch=epoch,
            split="val",
            loss=report.get("loss"),  # None: the task's evaluation measures no loss
            metrics=dict(report.get("metrics", {})),
            best=improved,
            monitor=monitor,
        )
        state.last_eval = report
        state.emit(result)
        self.callbacks.call("on_eval_end", state, result)
        patience = self.params.early_stopping_patience
        if patience and pos.bad_evals >= patience and not self.control.stop_requested:
            self.early_stopped = True
            self.callbacks_log(f"early stopping: no improvement of {monitor} in {patience} evaluation(s)")
            self.control.request_stop("early stopping")

    def load_best_weights(self) -> bool:
        path = self.state.run_dir / "checkpoints" / "best.safetensors"
        if not path.exists():
            return False
        tensors, plain = self.strategy.read_checkpoint(path, self.model)
        self.strategy.load_weights(self.model, tensors, plain)
        return True


def monitored_value(report: dict[str, Any], monitor: str) -> float | None:
    """The value of ``monitor`` in an evaluation report; None when it is
    missing or not a finite number (a NaN R^2 of a constant target never counts
    as an improvement)."""
    value = report.get("loss") if monitor == "loss" else report.get("metrics", {}).get(monitor, report.get(monitor))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)

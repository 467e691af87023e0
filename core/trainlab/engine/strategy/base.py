"""The strategy interface and a run in one process (see the package's docstring)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from trainlab.engine.checkpoint import load_model_weights, read_checkpoint, restore_training_state, save_checkpoint


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

    def final_model(self, model: Any) -> Any:
        """After a completed ``fit``: the model the final evaluation, the best weights and the
        export use, a plain module with every weight (collective in a group)."""
        return model

    # -- batches -----------------------------------------------------------------
    def train_batches(self, order: list[list[int]]) -> list[list[int]]:
        """This process's batches of an epoch, from the group's order (batches of ``batch_size x world_size``)."""
        return order

    def step_share(self, span: tuple[int, int], examples: int) -> tuple[float, int]:
        """(weight of this process's loss, the group's examples) for the batches ``span`` of the epoch,
        of which this process holds ``examples``."""
        return 1.0, examples

    def unit_share(self, span: tuple[int, int], units: list[int]) -> tuple[float, list[int]]:
        """For a task whose loss is a mean over its own units (``Task.loss_weight``: a language
        model's trained tokens), ``units`` per batch of the step ``span``: (weight of this process's
        mean loss, the units as they count here).  One process: all of it."""
        return 1.0, units

    # -- one step ------------------------------------------------------------------
    def begin_step(self, train_model: Any) -> None:
        """Before a step's first forward."""

    def no_sync(self, train_model: Any, last: bool) -> Any:
        """The context of one micro-batch's forward and backward (inner ones skip a group's all-reduce)."""
        return nullcontext()

    def backward(self, loss: Any, scaler: Any, last: bool) -> None:
        """The backward of one micro-batch's (weighted) loss through the gradient scaler."""
        scaler.scale(loss).backward()

    def clip_gradients(self, params: list[Any], max_norm: float) -> None:
        """Scale the gradients of ``params`` so that their joint norm is at most ``max_norm``."""
        import torch

        torch.nn.utils.clip_grad_norm_(params, max_norm)

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

    def evaluation_model(self, model: Any) -> Any:
        """The module an evaluation runs (collective in a group that shards the model: the whole weights gathered)."""
        return model

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

    def read_checkpoint(self, path: Any, model: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """(tensors, plain) of a checkpoint, as this process needs them to load it into ``model``."""
        return read_checkpoint(path)

    def load_weights(self, model: Any, tensors: dict[str, Any], plain: dict[str, Any]) -> None:
        """A checkpoint's weights into ``model`` (collective in a group that shards the model)."""
        load_model_weights(model, tensors, plain)

    def restore_training_state(self, model: Any, tensors: dict[str, Any], plain: dict[str, Any], **training_state: Any) -> None:
        """A checkpoint's optimizer, schedule, gradient scaler and random state (``optimizer=``,
        ``scheduler=``, ``scaler=``)."""
        restore_training_state(tensors, plain, **training_state)

    def restore_process_state(self, meta: dict[str, Any]) -> str:
        """This process's own state (random generators) from a checkpoint's meta; a note when it has none."""
        return ""


class SingleProcess(Strategy):
    """A run in one process, on one device."""

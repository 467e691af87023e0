"""Evaluation: a model scored on one split, with no optimizer or schedule.

``Evaluator`` is what the training loop runs after each epoch and at the end,
and what ``evaluate_run`` (``trainlab eval``) runs on a finished run.  It is
the one place that turns a task's evaluation batches into a report, so it is
where task-owned evaluation plugs in.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from trainlab.api.batches import split_batch
from trainlab.api.errors import RunFailed, UsageError
from trainlab.api.families import accumulator_for
from trainlab.api.params import engine_params
from trainlab.api.taskbase import RunContext, Task
from trainlab.engine import context
from trainlab.engine.checkpoint import load_model_weights, read_checkpoint
from trainlab.engine.device import autocast, is_out_of_memory
from trainlab.engine.loaders import SplitLoaders
from trainlab.engine.outcome import EvaluationStopped
from trainlab.engine.plugin_calls import plugin_calls
from trainlab.engine.strategy import Strategy, for_run
from trainlab.runfolder.index import RunDir
from trainlab.system.fileio import atomic_write_json, verify_safetensors_in
from trainlab.system import paths


class Evaluator:
    """Scores ``model`` on a split of ``task``'s prepared data.

    ``loaders`` shares the training loop's DataLoaders (and their persistent
    workers); without it the evaluator makes its own and ``close`` ends them.
    ``strategy`` (default: this process's run's) deals the batches out over
    the processes of a group and combines their shares.
    """

    MAX_SPLITS = 8  # out of memory: each batch split in 2, 4, 8 before the evaluation fails

    def __init__(
        self,
        task: Task,
        model: Any,
        ctx: RunContext,
        *,
        loaders: SplitLoaders | None = None,
        log: Callable[[str], None] | None = None,
        strategy: Strategy | None = None,
    ):
        self.task = task
        self.log = log
        self.splits = 1  # pieces per batch; doubled on out-of-memory and kept for the next passes
        self.model = model
        self.ctx = ctx
        self.batch_size = engine_params(ctx.params).batch_size
        self.seed = ctx.seed
        self.strategy = strategy if strategy is not None else for_run()
        self._owns_loaders = loaders is None
        self.loaders = loaders if loaders is not None else SplitLoaders(task, ctx)

    def evaluate(self, split: str) -> dict[str, Any]:
        """The task's report on ``split``: ``metrics``, ``loss``, ``samples``, ``family`` and its details."""
        return self.accumulate(split).compute()

    def accumulate(self, split: str, *, stop: Callable[[], bool] | None = None) -> Any:
        """One pass over ``split`` into the task's ``MetricAccumulator`` (not yet computed).

        The accumulator keeps the pass, so a task can calibrate on it
        (multi-label thresholds) and the report be computed again after.
        ``stop``: asked before each batch; true ends the pass (EvaluationStopped).
        """
        import torch

        task, model = self.task, self.model
        accumulator = task.metric_accumulator(split)
        if accumulator is None:  # a task of a built-in family that left it to the family
            accumulator = accumulator_for(task, split)
        was_training = model.training
        model.eval()
        order = self.strategy.eval_batches(task.batch_order(split, 0, self.batch_size, self.seed))
        try:
            with torch.inference_mode():
                for batch in self.loaders.loader(split, order, 0):
                    if stop is not None and stop():
                        raise EvaluationStopped()
                    for out in self._score(batch):
                        accumulator.update(out)
        finally:
            model.train(was_training)
        return self.strategy.reduce_accumulator(task, split, accumulator)

    def _score(self, batch: Any) -> list[Any]:
        """The task's outputs for ``batch``, in pieces of ``1/splits`` of it; on
        out-of-memory the batch is scored again in twice as many pieces (every
        piece's output is kept until all are scored, so none counts twice)."""
        import gc

        import torch

        task, ctx = self.task, self.ctx
        while True:
            outs: list[Any] = []
            try:
                for piece in split_batch(batch, self.splits) if self.splits > 1 else [batch]:
                    piece = task.to_device(piece, ctx)
                    with autocast(ctx.device, ctx.precision):
                        outs.append(task.eval_step(self.model, piece, ctx))
                return outs
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
            # out of the except block: its frames no longer hold the tensors
            outs = []
            gc.collect()
            if ctx.device.type == "cuda":
                torch.cuda.empty_cache()
            if self.splits >= self.MAX_SPLITS:
                raise RunFailed(
                    f"out of memory while evaluating, even with each batch of {self.batch_size} in {self.splits} pieces: "
                    "lower --batch-size, use a smaller model or --precision bf16/fp16"
                )
            self.splits *= 2
            if self.log is not None:
                about = max(1, self.batch_size // self.splits)
                self.log(f"out of memory while evaluating: scoring each batch in {self.splits} pieces of about {about}")

    def close(self) -> None:
        if self._owns_loaders:
            self.loaders.close()


EVAL_SPLITS = ("val", "test")  # the splits of a run's own data ``trainlab eval --split`` chooses


def evaluate_run(run_dir: str, data: str | None = None, *, device: str = "auto", split: str | None = None) -> dict[str, Any]:
    """Evaluate a trained run on ``split`` of its own data (default val) or on all of ``data``;
    the report is written beside (never over) eval.json."""
    if split is not None and split not in EVAL_SPLITS:
        raise UsageError(f"--split {split}: expected one of {', '.join(EVAL_SPLITS)}")
    paths.keep_library_caches_here()
    rd = RunDir(run_dir)
    record, task, ctx = context.trained_task(rd, device)
    with plugin_calls(task).around():  # a failure in the task's code names its plugin and method
        return _evaluate_trained(rd, record, task, ctx, data, split)


def _evaluate_trained(
    rd: RunDir, record: dict[str, Any], task: Task, ctx: RunContext, data: str | None, wanted: str | None = None
) -> dict[str, Any]:
    data_path = data or record["data"]["path"]
    if not Path(data_path).exists():
        raise UsageError(f"--data {data_path}: no such file or folder")
    ctx.purpose = "evaluate"
    own = Path(record["data"]["path"]).expanduser().resolve()
    ctx.whole_data = Path(data_path).expanduser().resolve() != own
    if wanted is not None and ctx.whole_data:
        raise UsageError(f"--split {wanted} chooses a split of the run's own data; with --data the whole of {data_path} is evaluated")
    task.prepare(str(data_path), ctx, label_names=record["label_names"])
    split = wanted or "val"
    if wanted is not None and wanted not in task.splits():
        what = {"val": "validation", "test": "test"}[wanted]
        raise UsageError(f"--split {wanted}: the run's data ({data_path}) has no {what} split (it has {', '.join(task.splits())})")
    if data and "val" not in task.splits():
        split = "train"
    elif data is None and "val" not in task.splits():
        raise UsageError(f"{rd.path}: its data has no validation split to evaluate on; give --data")
    best = engine_params(ctx.params).final_weights == "best"
    checkpoint = rd.best_checkpoint if best and rd.best_checkpoint.exists() else rd.last_checkpoint
    if checkpoint.exists():
        model = task.prepare_model(task.build_model(ctx), ctx)
        tensors, plain = read_checkpoint(checkpoint)
        load_model_weights(model, tensors, plain)
    else:
        verify_safetensors_in(rd.model_dir)  # one line naming a damaged file, before the task's own loader
        model = task.prepare_model(task.load_trained_model(rd.model_dir, ctx), ctx)
    evaluator = Evaluator(task, model, ctx)
    try:
        report = evaluator.evaluate(split)
    finally:
        evaluator.close()
    report["split"] = split
    report["data"] = str(Path(data_path).resolve())
    report["whole_data"] = ctx.whole_data  # all of other data, or the run's own split (trainlab eval says which)
    report["weights"] = checkpoint.stem if checkpoint.exists() else "model"
    name = f"eval-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    out = rd.path / name
    counter = 1
    while out.exists():
        counter += 1
        out = rd.path / f"{name[:-5]}-{counter}.json"
    atomic_write_json(out, report)
    report["written"] = str(out)
    return report

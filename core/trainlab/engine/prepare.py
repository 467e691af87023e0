"""Preparing a task on its data once, and handing that preparation to the run.

The window checks the data before a run (``prepare_task``); the run that
follows reuses that preparation (``plan_run(request, prepared=...)``) instead
of reading and tokenising every split again, when nothing that could change
the preparation has changed: the task, the data (path and fingerprint), the
purpose, and every parameter except the engine's training-only ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from trainlab.api.errors import UsageError
from trainlab.api.events import Log
from trainlab.api.params import ENGINE_PARAMS, RunParams, resolve
from trainlab.api.taskbase import DataSummary, RunContext, Task
from trainlab.engine.context import RandomState, make_context, seed_everything, task_for
from trainlab.engine.plugin_calls import PluginCalls
from trainlab.engine.recorder import data_fingerprint
from trainlab.pluginhost.host import registry

# Engine parameters that only the loop reads: a change in one of them leaves
# a preparation valid.  Everything else (every task parameter, seed, device,
# precision, and any engine parameter added later) counts as able to change
# it.  ``epochs`` is not here: the image task resolves ``augmentation=auto``
# from it while preparing.
TRAINING_ONLY_PARAMS = frozenset(
    {
        "batch_size",
        "lr",
        "weight_decay",
        "optimizer",
        "schedule",
        "warmup_ratio",
        "grad_accum",
        "clip_grad_norm",
        "early_stopping_patience",
        "class_weighting",
        "checkpoint_every_steps",
        "checkpoint_every_minutes",
        "keep_checkpoints",
        "final_weights",
        "monitor",
        "telemetry_every",
        "log_interval",
        "sharding",
        "fsdp_offload",
        "report_to",
        "min_steps",
        "log_model",
    }
)


@dataclass
class PreparedTask:
    """A task prepared on its data, ready to be handed to one run.

    ``params`` are the resolved values it was prepared with; ``logs`` what it
    said while preparing (replayed into the run's metrics.jsonl);
    ``random_state`` the generators' state right after preparing, which the
    run starts from, so a run on a handed-over preparation trains exactly as
    one that prepared itself.  A run takes the task over: a second run
    prepares its own.
    """

    task_id: str
    task: Task
    summary: DataSummary
    params: dict[str, Any]
    data: str  # absolute path
    fingerprint: dict[str, Any]
    purpose: str = "train"
    label_names: tuple[str, ...] | None = None  # the names it was given (a trained run's), or None
    random_state: RandomState | None = field(default=None, repr=False)
    logs: tuple[Log, ...] = ()
    prepared_at: float = field(default_factory=time.time)
    taken: bool = False

    def mismatch(
        self,
        *,
        task_id: str,
        data: str,
        fingerprint: Mapping[str, Any],
        params: Mapping[str, Any],
        purpose: str = "train",
        label_names: Sequence[str] | None = None,
    ) -> str:
        """Why this preparation cannot stand in for a new one ('' when it can)."""
        if self.taken:
            return "it was already used by another run"
        if task_id != self.task_id:
            return f"the task changed ({self.task_id} -> {task_id})"
        if resolved_path(data) != self.data:
            return f"the data changed ({self.data} -> {resolved_path(data)})"
        if fingerprint.get("sha256") != self.fingerprint.get("sha256"):
            return f"the files under {self.data} changed since they were checked"
        if purpose != self.purpose:
            return f"it was prepared to {self.purpose}, not to {purpose}"
        if (tuple(label_names) if label_names is not None else None) != self.label_names:
            return "the label names differ"
        for key in sorted(set(params) | set(self.params)):
            if key in TRAINING_ONLY_PARAMS:
                continue
            if params.get(key) != self.params.get(key):
                return f"parameter {key} changed ({self.params.get(key)!r} -> {params.get(key)!r})"
        return ""

    def take(self) -> None:
        self.taken = True


def resolved_path(data: str) -> str:
    return str(Path(data).expanduser().resolve())


def prepare(task_id: str, data: str, params: RunParams, ctx: RunContext, *, label_names: Sequence[str] | None = None) -> PreparedTask:
    """Instantiate the task, seed every generator and prepare the data (``ctx`` decides purpose and device)."""
    entry, task = task_for(task_id, params)
    seed_everything(params.engine.seed)
    calls = PluginCalls.of(entry, task)
    with calls.call("prepare"):
        summary = task.prepare(str(data), ctx, label_names=list(label_names) if label_names is not None else None)
    if not isinstance(summary, DataSummary):
        raise calls.bad_result("prepare", summary, "a DataSummary")
    return PreparedTask(
        task_id=task_id,
        task=task,
        summary=summary,
        params=dict(params),
        data=resolved_path(data),
        fingerprint=data_fingerprint(str(data)),
        purpose=ctx.purpose,
        label_names=tuple(label_names) if label_names is not None else None,
        random_state=RandomState.capture(),
    )


def prepare_task(
    task_id: str,
    data: str,
    params: Mapping[str, Any],
    *,
    purpose: str = "train",
    log: Callable[[Log], None] | None = None,
    remembered: Mapping[str, Any] | None = None,
    label_names: Sequence[str] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> PreparedTask:
    """Prepare ``task_id`` on ``data`` as a run would (what the window's data check calls).

    ``params`` and ``remembered`` resolve as in a run request; ``log`` sees
    what the task says while preparing (data summary lines), as it says it;
    ``should_stop`` lets a long preparation end early (``StopRequested``).
    UsageError (or its DataError) for bad input, as ``plan_run`` would raise.
    """
    entry = registry().task(task_id)
    resolved = resolve(entry.spec, ENGINE_PARAMS, remembered or {}, params)
    if not Path(data).exists():
        raise UsageError(f"--data {data}: no such file or folder")
    said: list[Log] = []

    def collect(message: str) -> None:
        event = Log(message=str(message))
        said.append(event)
        if log is not None:
            log(event)

    ctx = make_context(resolved, None, collect, None)
    ctx.purpose = purpose
    if should_stop is not None:
        ctx.should_stop = should_stop
    prepared = prepare(task_id, data, resolved, ctx, label_names=label_names)
    prepared.logs = tuple(said)
    return prepared

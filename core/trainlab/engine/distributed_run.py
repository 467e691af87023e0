"""``trainlab train`` as one rank of a group: plan on every rank, execute, report.

Every rank plans the run itself from the same request (the task found again
through its plugin's entry point, the data read from the path), so nothing
is pickled across processes and plugin callbacks run in every rank.  The
ranks agree on the run folder (rank 0's choice, unless ``--out`` or
``--resume`` names it), and on whether planning worked: one rank's bad input
(data missing on that machine, say) is every rank's exit 2, naming the rank.
Rank 0 watches ``RUN_DIR/control`` for pause, resume and stop
(``distributed_control``).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from trainlab.api.callbacks import RunControl
from trainlab.api.errors import RunFailed, UsageError
from trainlab.api.events import Log
from trainlab.engine import distributed
from trainlab.engine.distributed_control import ControlFileWatcher
from trainlab.engine.outcome import EXIT_FAILED, EXIT_USAGE, RunOutcome
from trainlab.engine.run_here import run_here
from trainlab.engine.torchrun import REPORTS_ENV, RESULT_ENV, effective_batch
from trainlab.runfolder.index import new_run_id
from trainlab.runfolder.status import RunStatus
from trainlab.system import paths


def train_rank(request: Any, *, callbacks: list[Any], control: Any) -> RunOutcome:
    """Join the group, plan, execute; the rank's outcome (rank 0's is the run's)."""
    group = distributed.start(str(request.params.get("device", "auto")))
    callbacks = callbacks if group.writer else []  # rank 0 alone reports
    watcher = None
    agreed = False

    def agree(plan: Any) -> None:  # every rank planned: the group goes on only if every one could
        nonlocal agreed, watcher
        agreed = True
        found = group.first_problem("")
        if found:
            raise UsageError(found)
        plan.record["ranks"] = group.device_records()
        params = plan.engine
        effective = effective_batch(params.batch_size, group.world_size, params.grad_accum)
        line = Log(
            message=f"world size {group.world_size} ({group.backend}): effective batch {effective} = "
            f"{params.batch_size} per rank x {group.world_size} rank(s) x {params.grad_accum} accumulation; "
            f"{distributed.threads_note(group)}" + (f"; preflight: {group.preflight}" if group.preflight else "")
        )
        plan.early_events.append(line)
        for callback in callbacks:
            callback.on_event(line)
        if group.writer:  # pause/resume/stop written into RUN_DIR/control reach every rank through the agreement
            watcher = ControlFileWatcher(plan.run_dir.path, control).start()

    try:
        if not request.resume:  # rank 0's folder, whatever each machine's launcher said
            mine = request.out or (str(paths.runs_dir() / new_run_id(request.task)) if group.writer else "")
            request.out = group.broadcast_text(mine if group.writer else "")
        request.params = dict(request.params)
        request.params["device"] = group.device  # each rank its own, also on a resume
        try:
            return run_here(request, control=control, callbacks=callbacks, before_execute=agree)
        except (UsageError, RunFailed) as exc:
            if not agreed:  # this rank's planning failed: the others hear of it in their agreement
                group.first_problem(str(exc))
            raise
    finally:
        if watcher is not None:
            watcher.close()
        distributed.finish()


def rank_main(request: Any, progress: Any, out: Any, *, stop_on_signals: Any, fail: Any) -> int:
    """One rank of a group torchrun (or srun) started: rank 0 reports, the others stay quiet."""
    rank = int(os.environ["RANK"])
    control = RunControl()
    try:
        with stop_on_signals(lambda: control.request_stop("interrupted")):
            outcome = train_rank(request, callbacks=[progress.callback], control=control)
    except (UsageError, RunFailed) as exc:
        code = EXIT_USAGE if isinstance(exc, UsageError) else EXIT_FAILED
        report_rank(rank, {"status": "failed", "error": str(exc), "exit_code": code, "usage_error": code == EXIT_USAGE})
        if rank == 0 and not os.environ.get(RESULT_ENV):
            return fail(out, code, str(exc), exc)
        out.note(f"trainlab: rank {rank}: {exc}")
        return code
    report_rank(rank, outcome.to_json())
    if rank != 0:
        return outcome.exit_code
    if outcome.status == RunStatus.FAILED:
        out.note(f"trainlab: the run failed: {outcome.error}")
    if not os.environ.get(RESULT_ENV):  # started by torchrun directly: rank 0 prints the outcome
        out.result(outcome.to_json())
    return outcome.exit_code


def report_rank(rank: int, outcome: dict[str, Any]) -> None:
    """The launcher's record of this rank's end (how a failed rank is named), and rank 0's outcome."""
    folder = os.environ.get(REPORTS_ENV)
    error = str(outcome.get("error", ""))
    if folder:
        said = {**outcome, "rank": rank, "host": socket.gethostname(), "peer_lost": distributed.peer_lost(error)}
        _write(Path(folder) / f"rank-{rank}.json", said)
    result = os.environ.get(RESULT_ENV)
    if result and rank == 0:
        _write(Path(result), outcome)


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, default=str), encoding="utf-8")
    os.replace(tmp, path)

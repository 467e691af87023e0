"""``trainlab sweep``: an offline hyperparameter sweep, here and now or handed to the queue."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from trainlab.api.errors import UsageError
from trainlab.cli.common import params_from, stop_on_signals
from trainlab.engine.outcome import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK


def add_sweep_parser(add: Callable[..., Any], add_params: Callable[[Any], None]) -> None:
    p = add("sweep", "an offline hyperparameter sweep: each trial is a run; weak trials are pruned")
    p.add_argument("task", help="task id, as `trainlab tasks` lists them")
    p.add_argument("--data", default="", help="data file or folder")
    p.add_argument(
        "--space", action="append", default=[], metavar="KEY=SPEC",
        help="a parameter to vary: KEY=LOW:HIGH[:log][:POINTS] or KEY=A,B,... (repeat for more)",
    )
    p.add_argument("--trials", type=int, required=True, metavar="N", help="trials in the study (a larger N extends an existing one)")
    p.add_argument("--sampler", choices=("tpe", "random", "grid"), default="tpe", help="how trials are chosen (default tpe)")
    p.add_argument("--study", metavar="NAME", help="the study's name: the same name resumes or extends it")
    p.add_argument("--gpus-per-trial", dest="gpus_per_trial", type=int, default=1, metavar="K", help="GPUs per trial (default 1; 0: the CPU)")
    p.add_argument("--queue", action="store_true", help="hand the sweep to the run queue (trials in parallel on free GPUs)")
    p.add_argument("--no-start", action="store_true", help="with --queue: do not start the queue's scheduler")
    add_params(p)


def sweep_spec(args: Any) -> Any:
    """The study's definition from the command line; UsageError naming a bad option or --space item."""
    from trainlab.api.params import full_schema
    from trainlab.pluginhost.host import registry
    from trainlab.scheduling.queue_actions import check_request
    from trainlab.scheduling.sweep_space import grid_size, parse_space
    from trainlab.scheduling.sweep_study import SweepSpec

    if args.trials < 1:
        raise UsageError("--trials must be at least 1")
    if args.gpus_per_trial < 0:
        raise UsageError("--gpus-per-trial must be 0 or more")
    params = params_from(args)
    resolved = check_request(args.task, args.data, params)
    spec = registry().task(args.task).spec
    dimensions = parse_space(args.space, full_schema(spec))
    for dimension in dimensions:
        if dimension.name in params:
            raise UsageError(f"--space {dimension.text()}: {dimension.name} is also fixed by --set or a flag; give one")
    if args.sampler == "grid":
        size = grid_size(dimensions)  # a range without a point count is refused here
        if args.trials > size:
            raise UsageError(f"--trials {args.trials}: the grid has only {size} points; give --trials {size} or fewer")
    monitor = str(resolved["monitor"])
    params.pop("device", None)  # where the trials run, not what they are
    return SweepSpec(
        task=args.task,
        data=str(Path(args.data).expanduser().resolve()),
        params=params,
        space=tuple(d.text() for d in dimensions),
        sampler=args.sampler,
        monitor=monitor,
        direction="maximize" if spec.higher_is_better(monitor) else "minimize",
        gpus_per_trial=args.gpus_per_trial,
        seed=int(resolved["seed"]),
    )


def cmd_sweep(args: Any, out: Any) -> int:
    from trainlab.scheduling.sweep_study import SweepStudy, check_name

    spec = sweep_spec(args)
    name = check_name(args.study or f"{args.task}-{time.strftime('%Y%m%d-%H%M%S')}")
    study = SweepStudy.open(name, spec)
    done = len(study.trials())
    if done:
        out.note(f"study {name}: {done} trial(s) so far; going on to {args.trials}")
    if args.queue:
        return _to_queue(args, out, study)
    return _foreground(args, out, study)


def _to_queue(args: Any, out: Any, study: Any) -> int:
    from trainlab.scheduling import queue_actions as actions
    from trainlab.scheduling.queue_store import FINISHED, SWEEP, QueueStore
    from trainlab.scheduling.scheduler import ensure_scheduler

    store = QueueStore()
    for entry in store.entries():
        if entry.kind == SWEEP and entry.study == study.name and entry.state not in FINISHED:
            raise UsageError(f"--study {study.name}: the study is already in the queue as entry {entry.id}")
    entry = actions.add_sweep(store, study=study.name, spec=study.spec, trials=args.trials)
    started = None if args.no_start else ensure_scheduler()
    out.say(f"queued sweep {entry.id}: study {study.name}, {args.trials} trials ({study.journal_text()}); see `trainlab queue list`")
    out.result({"study": study.name, "storage": study.journal_text(), "entry": entry.to_json(), "scheduler_started": started})
    return EXIT_OK


def _foreground(args: Any, out: Any, study: Any) -> int:
    from trainlab.scheduling.sweep_foreground import SweepControl, place, run_sweep
    from trainlab.scheduling.sweep_study import monitor_text, params_text

    control = SweepControl()
    device = str(args.device) if args.device else None
    placement, lease = place(args.gpus_per_trial, device)
    # "auto" without GPUs is the CPU: say so, in the words of `queue add`
    where = "the CPU (no GPU on this machine)" if placement.device == "auto" and not placement.uuids else placement.describe()
    out.note(f"sweep: study {study.name} ({study.journal_text()}), {args.trials} trials on {where}; "
             f"the same command resumes it after a crash")
    try:
        with stop_on_signals(control.stop):
            summary = run_sweep(study, args.trials, placement=placement, control=control, say=out.note)
    finally:
        if lease is not None:
            lease.release()
    best = summary["best"]
    if best:
        found = monitor_text(study.spec.task, summary["monitor"], best["value"])
        out.say(f"best trial: {best['number']}, {found} with {params_text(best['params'])}; run folder {best['run_dir']}")
    counts: dict[str, int] = {}
    for trial in summary["trials"]:
        counts[trial["state"]] = counts.get(trial["state"], 0) + 1
    out.note("trials: " + ", ".join(f"{n} {state}" for state, n in sorted(counts.items())))
    summary["interrupted"] = control.stopped
    out.result(summary)
    if control.stopped:
        return EXIT_INTERRUPTED
    return EXIT_OK if best else EXIT_FAILED

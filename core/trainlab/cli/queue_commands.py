"""``trainlab queue add|list|cancel|pause|continue|move|run`` (docs/queue-and-sweeps.md)."""

from __future__ import annotations

import time
from typing import Any, Callable

from trainlab.cli.common import ArgumentParser, params_from
from trainlab.engine.outcome import EXIT_OK
from trainlab.runfolder.status import EntryState


def add_queue_parser(add: Callable[..., Any], add_params: Callable[[Any], None]) -> None:
    """The ``queue`` command and its actions, on the CLI's parser (``add`` and ``add_params`` are its helpers)."""
    queue = add("queue", "the persistent run queue across this machine's GPUs", json_flag=False)
    actions = queue.add_subparsers(dest="queue_action", metavar="ACTION", parser_class=ArgumentParser)

    def action(name: str, help: str) -> Any:
        p = actions.add_parser(name, help=help, description=help)
        p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
        return p

    p = action("add", "add a run to the queue (the arguments of `trainlab train`, and --gpus)")
    p.add_argument("task", nargs="?", default="", help="task id (optional with --resume)")
    p.add_argument("--data", default="", help="data file or folder")
    p.add_argument("--out", help="run folder to create")
    p.add_argument("--resume", metavar="RUN_DIR", help="queue the continuation of a stopped run")
    p.add_argument("--gpus", type=int, metavar="K", help="GPUs the run needs (default 1; 0 or --device cpu: the CPU)")
    p.add_argument("--no-start", action="store_true", help="do not start the scheduler (`trainlab queue run` does)")
    add_params(p)
    action("list", "every entry, in line order (a sweep's trials under it)")
    for name, help in (
        ("cancel", "drop a waiting entry; stop a running one (checkpoint kept)"),
        ("pause", "hold a waiting entry back; checkpoint and stop a running one, freeing its GPUs"),
    ):
        action(name, help).add_argument("id", metavar="ID")
    p = action("continue", "put a paused entry back in line (a paused run resumes from its checkpoint)")
    p.add_argument("id", metavar="ID")
    p.add_argument("--no-start", action="store_true", help="do not start the scheduler")
    p = action("move", "put a waiting entry at position POS in line (1: next)")
    p.add_argument("id", metavar="ID")
    p.add_argument("position", type=int, metavar="POS")
    action("run", "run the scheduler in this process until nothing is queued or running")


def cmd_queue(args: Any, out: Any) -> int:
    from trainlab.scheduling import queue_actions as actions
    from trainlab.scheduling.queue_store import QueueStore

    store = QueueStore()
    action = args.queue_action or "list"
    if action == "run":
        return _run(out)
    if action == "list":
        return _list(store, out)
    if action == "add":
        entry = actions.add_run(
            store, task=args.task, data=args.data, params=params_from(args), out=args.out, resume=args.resume, gpus=args.gpus
        )
        started = _start(args, out)
        machine = _machine_gpus()
        where = _gpus_text(entry.gpus, machine) if machine or not entry.gpus else "the CPU: no GPU on this machine"
        out.say(f"queued {entry.id}: {entry.task} on {entry.request['data']} ({where})")
        out.result({"entry": entry.to_json(), "scheduler_started": started})
        return EXIT_OK
    if action == "move":
        entry = actions.move(store, args.id, args.position)
        order = [e.id for e in actions.waiting(store)]
        out.say(f"moved {entry.id} to position {order.index(entry.id) + 1}; waiting: {', '.join(map(str, order))}")
        out.result({"entry": entry.to_json(), "waiting": order})
        return EXIT_OK
    change = {"cancel": actions.cancel, "pause": actions.pause, "continue": actions.continue_}[action]
    entry = change(store, args.id)
    started = _start(args, out) if action == "continue" else None
    word = {"cancel": "cancelling", "pause": "pausing"}.get(action, "")
    if entry.requested:
        out.say(f"{word} {entry.id}: its run stops after the current step, checkpoint kept")
    else:
        out.say(f"{entry.id}: {entry.state}")
    out.result({"entry": entry.to_json(), "scheduler_started": started})
    return EXIT_OK


def _start(args: Any, out: Any) -> int | None:
    from trainlab.scheduling.scheduler import ensure_scheduler

    if getattr(args, "no_start", False):
        return None
    pid = ensure_scheduler()
    if pid is not None:
        out.note(f"started the queue's scheduler (process {pid}); it stops by itself when the queue is empty")
    return pid


def _run(out: Any) -> int:
    import signal

    from trainlab.scheduling.scheduler import Scheduler, scheduler_holder, serve

    stopping = {"now": False}

    def stop(*_: Any) -> None:
        stopping["now"] = True  # the runs go on; only the scheduling stops

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        out.note("queue: scheduler running (Ctrl-C stops the scheduling; running runs go on)")
        ran = serve(Scheduler(), stop=lambda: stopping["now"])
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    if not ran:
        holder = scheduler_holder()
        out.note(f"queue: a scheduler is already running ({holder.describe() if holder else 'another process'})")
        out.result({"ran": False, "scheduler": holder.to_json() if holder else None})
        return EXIT_OK
    out.note("queue: nothing queued or running; scheduler stopped")
    out.result({"ran": True})
    return EXIT_OK


def _list(store: Any, out: Any) -> int:
    from trainlab.scheduling.scheduler import scheduler_holder
    entries = store.entries()  # in line order, a sweep's trials under it
    machine = _machine_gpus() if entries else 0
    if entries:
        out.say(_row("ID", "STATE", "WHAT", "ON", "DEVICES", "ADDED", "RESULT, RUN FOLDER"))
    for entry in entries:
        out.say(_line(entry, machine))
    if not entries:
        out.say("the queue is empty")
    holder = scheduler_holder()
    if holder is not None:
        out.say(f"scheduler: {holder.describe()}")
    elif any(e.state in (EntryState.QUEUED, EntryState.RUNNING) for e in entries):
        out.say("scheduler: not running (trainlab queue run starts it)")
    out.result({"entries": [e.to_json() for e in entries], "scheduler": holder.to_json() if holder else None})
    return EXIT_OK


def _line(entry: Any, machine_gpus: int) -> str:
    if entry.kind == "sweep":
        what = f"sweep {entry.study} ({entry.request.get('trials')} trials of {entry.task})"
    elif entry.kind == "trial":
        what = f"  trial {entry.trial} of {entry.study}"
    else:
        what = entry.task
    state = entry.state + (f" ({entry.requested} asked)" if entry.requested else "")
    gpus = _gpus_text(entry.gpus, machine_gpus)
    # a run on the CPU says "cpu" once (the GPU column says it already), where it read "cpu     cpu"
    where = ", ".join(d[:12] for d in entry.devices) or ("cpu" if entry.state == EntryState.RUNNING and gpus != "cpu" else "")
    when = time.strftime("%m-%d %H:%M", time.localtime(entry.added)) if entry.added else ""
    tail = entry.run_dir or ""
    if entry.reason and entry.state != EntryState.RUNNING:
        tail = f"{entry.reason}  {tail}".strip()
    return _row(entry.id, state, what, gpus, where, when, tail)


def _row(number: Any, state: str, what: str, gpus: str, where: str, when: str, tail: str) -> str:
    return f"{number:>4}  {state:<18} {what:<40} {gpus:<7} {where:<14} {when:<11} {tail}".rstrip()


def _gpus_text(gpus: int, machine_gpus: int) -> str:
    """What an entry runs on: its GPU count, or ``cpu`` (asked, or on a machine without a GPU, where the scheduler runs it there)."""
    return "cpu" if gpus == 0 or not machine_gpus else f"{gpus} GPU" + ("s" if gpus > 1 else "")


def _machine_gpus() -> int:
    from trainlab.engine.gpu_leases import read_gpus

    return len(read_gpus()[0])


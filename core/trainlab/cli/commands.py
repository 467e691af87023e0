"""The ``trainlab`` command line (CONTRACT.md "Command line").

Exit codes: 0 success, 1 a run that failed, 2 bad usage or bad input, 130
interrupted.  With ``--json`` a command prints exactly one JSON object on
stdout; everything for people goes to stderr.  Torch is imported only by the
commands that train, evaluate or predict; Qt only by ``gui``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Callable, Sequence

import trainlab
from trainlab.api.errors import RunFailed, UsageError
from trainlab.cli.chat import add_chat_arguments, cmd_chat
from trainlab.cli.common import ArgumentParser, Output, OutputClosed, params_from, stop_on_signals
from trainlab.cli.export_command import add_export_parser, cmd_export
from trainlab.cli.listings import cmd_models, cmd_runs, cmd_tasks
from trainlab.cli.queue_commands import add_queue_parser
from trainlab.cli.queue_commands import cmd_queue as queue
from trainlab.cli.sweep_commands import add_sweep_parser
from trainlab.cli.sweep_commands import cmd_sweep as sweep
from trainlab.engine import torchrun as launch
from trainlab.engine.outcome import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, RunOutcome
from trainlab.engine.torchrun import add_launch_options, train_launched
from trainlab.runfolder.status import RunStatus
from trainlab.system.qt_platform import xcb_problem
from trainlab.system.shadowing import shadowing_error


def _parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="trainlab",
        description="Train and fine-tune deep-learning models offline. With no command, opens the window.",
    )
    parser.add_argument("--version", action="version", version=f"trainlab {trainlab.__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="more detail on stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)

    def add(name: str, help: str, json_flag: bool = True) -> ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        if json_flag:
            p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
        return p

    def add_params(p: ArgumentParser) -> None:
        p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="any task or engine parameter (see `trainlab tasks`)")
        g = p.add_argument_group("shorthands for --set")
        g.add_argument("--model", help="model preset name, model folder or model name")
        g.add_argument("--epochs", help="passes over the training data")
        g.add_argument("--batch-size", dest="batch_size", help="examples per step")
        g.add_argument("--lr", help="peak learning rate")
        g.add_argument("--device", help="auto, cpu, cuda or cuda:N")
        g.add_argument("--precision", help="auto, fp32, bf16 or fp16")
        g.add_argument("--seed", help="random seed")

    p = add("gui", "open the main window (the default with no command)", json_flag=False)
    p.add_argument("--task", help="task id to select")
    p.add_argument("--data", help="data file or folder to use")
    p.add_argument("--autostart", action="store_true", help="start the run at once")
    p.add_argument("--language", help="user interface language (en, zh_CN)")
    add_params(p)

    p = add("plugins", "list discovered plugins and their status")
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="also print the traceback of a failed plugin")
    p.add_argument("--block", metavar="NAME", help="block a plugin by its entry-point name (takes effect at the next start)")
    p.add_argument("--unblock", metavar="NAME", help="unblock a plugin")
    plugin_commands = p.add_subparsers(dest="plugins_command", metavar="COMMAND", parser_class=ArgumentParser)
    check = plugin_commands.add_parser("check", help="the plugin kit's checks on a plugin", description="the plugin kit's checks on a plugin")
    check.add_argument("target", metavar="NAME|PATH", help="entry-point name (as --block takes it), or the plugin's project folder")
    check.add_argument("--full", action="store_true", help="also train each task a few CPU steps on its sample data (every check)")
    check.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    new = plugin_commands.add_parser(
        "new",
        help="a plugin package from the template (needs the kit extra)",
        description="a plugin package from the template, with the kit's conformance suite as its tests (needs the kit extra: pip install 'trainlab[kit]')",
    )
    new.add_argument("name", metavar="NAME", help="the plugin's entry-point name (what `trainlab plugins` lists)")
    new.add_argument("--family", required=True, metavar="ID|new", help="a family TrainLab knows (classification, regression, multilabel, object-detection, text-generation), or new: one of the plugin's own")
    new.add_argument("--dist", metavar="DIST", help="the distribution name, what pip installs (default trainlab-NAME)")
    new.add_argument("--out", metavar="DIR", help="the folder to create (default ./DIST)")
    new.add_argument("--json", action="store_true", help="print one JSON object on stdout")

    p = add("tasks", "list the tasks; one task (or -v: every task) with its parameters and model presets")
    p.add_argument("task_id", nargs="?", metavar="TASK_ID", help="show only this task, with its parameters and presets")
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="every task with its parameters and presets")

    p = add("train", "train a model; writes a run folder")
    p.add_argument("task", nargs="?", default="", help="task id, as `trainlab tasks` lists them (optional with --resume)")
    p.add_argument("--data", default="", help="data file or folder (optional with --resume)")
    p.add_argument("--out", help="run folder to create (default: under the data dir)")
    p.add_argument("--resume", metavar="RUN_DIR", help="continue a cancelled, failed or killed run from its last checkpoint")
    p.add_argument("--more-epochs", type=int, default=0, metavar="N", help="with --resume: train a finished run N more epochs")
    p.add_argument("--isolated", action="store_true", help="run the training in a child process")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="resolve the run (parameters, data summary, fine-tuning plan, memory estimate, effective batch) and train nothing",
    )
    add_params(p)

    add_launch_options(p)

    p = add("eval", "evaluate a trained run on its validation data or on --data")
    p.add_argument("run_dir")
    p.add_argument("--data", help="other data to evaluate on (same labels)")
    p.add_argument("--split", choices=("val", "test"), help="the split of the run's own data to evaluate (default val)")
    p.add_argument("--device", default="auto")

    p = add("predict", "predictions of a trained run for images, folders, texts, a CSV/JSONL of texts, or - (stdin)")
    p.add_argument("run_dir")
    p.add_argument("inputs", nargs="+", metavar="INPUT")
    p.add_argument("--top-k", type=int, default=3)
    p.add_argument("--out", metavar="FILE", help="write the predictions to FILE.csv (the family's columns) or FILE.jsonl (one JSON answer a line)")
    p.add_argument("--device", default="auto")

    p = add("chat", "talk to a text-generation run's model (or a chat model folder) in the terminal, streaming, multi-turn", json_flag=False)
    add_chat_arguments(p)

    p = add("runs", "run history: each run's declared metrics, the monitor (its best) first")
    p.add_argument("--limit", type=int, default=0, help="show at most N runs")
    p.add_argument("--sort", metavar="METRIC", help="best first by this metric (its own direction); runs without it last")
    p.add_argument("--where", action="append", metavar="METRIC<VALUE", help="only runs whose metric holds: mae<3, accuracy>=90%% (repeatable)")

    p = add("models", "model presets and the pretrained models found on this machine; `models import DIR` adds one")
    p.add_argument("action", nargs="?", choices=["list", "import"], default="list")
    p.add_argument("path", nargs="?", help="with import: the model folder")
    p.add_argument("--name", help="with import: the name to store it under")

    p = add("cache", "what TrainLab's caches hold (token ids of text data), and clearing them")
    p.add_argument("action", nargs="?", choices=["list", "clear"], default="list")
    p.add_argument("--limit-gb", dest="limit_gb", type=float, metavar="GB", help="set the size cap over all caches (oldest evicted first)")

    add("doctor", "check this machine: torch, CUDA, driver, GPUs, plugins, offline state, folders")

    add_export_parser(add)

    add_queue_parser(add, add_params)
    add_sweep_parser(add, add_params)

    p = add("install-launcher", "add TrainLab to the desktop menu", json_flag=True)
    p.add_argument("--desktop", action="store_true", help="also put an icon on the desktop")
    add("uninstall-launcher", "remove the desktop menu entry and icon", json_flag=True)
    return parser


# -- output --------------------------------------------------------------------


# -- commands ------------------------------------------------------------------


def cmd_plugins(args, out: Output) -> int:
    if getattr(args, "plugins_command", None) == "check":
        from trainlab.cli.plugin_check import cmd_check

        return cmd_check(args, out)
    if getattr(args, "plugins_command", None) == "new":
        from trainlab.cli.plugin_new import cmd_new

        return cmd_new(args, out)
    from trainlab.pluginhost.host import registry, set_blocked

    if args.block or args.unblock:
        set_blocked(args.block or args.unblock, blocked=bool(args.block))
        out.note(f"{'blocked' if args.block else 'unblocked'} {args.block or args.unblock}; takes effect at the next start")
    reg = registry(refresh=True)
    plugins = reg.to_json()
    if plugins:
        out.say(_plugin_row("PLUGIN", "STATUS", "VERSION", "DISTRIBUTION", "TASKS"))
    for p in plugins:
        out.say(_plugin_row(p["name"], p["status"], p["version"] or "-", p["distribution"] or "-", ", ".join(p["tasks"]) or "-"))
        if args.verbose:
            for detail in _plugin_details(p):
                out.say(f"    {detail}")
        if p["message"]:
            out.say(f"    {p['message'] if args.verbose else p['message'].splitlines()[0]}")
        for w in p["warnings"]:
            out.say(f"    warning: {w}")
        if p["traceback"] and args.verbose:
            out.say("    " + p["traceback"].rstrip().replace("\n", "\n    "))
    if plugins and not args.verbose:
        out.say("entry points, paths, load times and full errors: trainlab plugins -v")
    out.result({"plugins": plugins})
    return EXIT_OK


def _plugin_row(name: str, status: str, version: str, distribution: str, tasks: str) -> str:
    return f"{name:<24} {status:<12} {version:<8} {distribution:<24} {tasks}"


def _plugin_details(plugin: dict) -> list[str]:
    """What ``trainlab plugins -v`` adds under a plugin's line: where it comes from and how its loading went."""
    lines = [f"entry point: {plugin['name']} = {plugin['entry_point']}" + (" (built in)" if plugin["builtin"] else "")]
    if plugin.get("path"):
        lines.append(f"path: {plugin['path']}")
    if plugin.get("api_version"):
        lines.append(f"plugin API: {plugin['api_version']}")
    if plugin.get("load_seconds") is not None:
        lines.append(f"import took {plugin['load_seconds'] * 1000:.1f} ms")
    probe = plugin.get("probe") or {}
    if probe.get("result"):
        lines.append(f"checked in a child process: {probe['result']}" + (" (cached)" if probe.get("cached") else ""))
    return lines


def cmd_train(args, out: Output) -> int:
    from trainlab.engine.plan import RunRequest

    if args.more_epochs and not args.resume:
        raise UsageError("--more-epochs needs --resume RUN_DIR")
    if args.more_epochs < 0:
        raise UsageError("--more-epochs must be positive")
    if not args.resume and not args.task:
        raise UsageError("train: TASK is required (see `trainlab tasks`)")
    if not args.resume and not args.data:
        raise UsageError("train: --data PATH is required")
    from trainlab.engine.distributed import in_rank_environment

    rank = in_rank_environment()
    if launch.wanted(args) and not rank:
        return _train_launched(args, out)
    request = RunRequest(
        task=args.task, data=args.data, params=params_from(args), out=args.out, resume=args.resume, more_epochs=args.more_epochs
    )
    from trainlab.cli.reporting import ConsoleProgress, declared_metrics, done_text, task_spec

    progress = ConsoleProgress(out)
    if rank:
        return _train_as_rank(request, progress, out)
    if args.dry_run:
        return _dry_run(request, progress, out)
    outcome = _train_isolated(request, progress) if args.isolated else _train_here(request, progress)
    if outcome.status == RunStatus.FAILED:
        out.note(f"trainlab: the run failed: {outcome.error}")
    elif outcome.status == RunStatus.CANCELLED and outcome.error == INTERRUPTED_EARLY:
        out.note(f"trainlab: {INTERRUPTED_EARLY}")
    elif outcome.status == RunStatus.CANCELLED:
        out.note(f"trainlab: the run was stopped; resume with: trainlab train --resume {outcome.run_dir}")
    else:
        specs = progress.metric_specs or declared_metrics(task_spec(outcome.task))
        out.say(f"done: {done_text(outcome.metrics, specs)}; run folder {outcome.run_dir}")
    out.result(outcome.to_json())
    return outcome.exit_code


def _dry_run(request, progress, out: Output) -> int:
    """``train --dry-run``: the plan and its memory estimate; no folder, no training."""
    from trainlab.engine.memory import estimate_memory, format_size
    from trainlab.engine.plan import plan_run

    request.dry_run = True
    plan = plan_run(request, log=progress.on_event)
    estimate = plan.memory or estimate_memory(plan)
    described = plan.to_json()
    finetune = plan.summary.extra.get("finetune")
    out.say(
        f"plan: {plan.task_id} on {described['device']} ({described['precision']}), {described['epochs']} epoch(s) of "
        f"{described['steps_per_epoch']} steps, effective batch {described['effective_batch']} in micro-batches of {estimate.micro_batch}"
        + (f"; fine-tuning {finetune['mode']}" if finetune else "")
    )
    spec = getattr(plan.task, "spec", None)
    out.say(f"data: {plan.summary.describe(spec.family if spec is not None else '')}")  # in the family's words: 2 series; train 111 windows...
    parts = ", ".join(f"{name} {format_size(estimate.to_json()[name])}" for name in ("weights", "gradients", "optimizer", "activations", "other"))
    out.say(f"memory: {estimate.summary_line()} ({parts}){'' if estimate.fits else ': does not fit; ' + fit_advice(plan, described['device'])}")
    out.result({**described, "dry_run": True, "finetune": finetune, "memory": estimate.to_json()})
    return 0


# Fine-tuning modes from the heaviest to the lightest in memory.
LIGHTER_FINETUNES = ("full", "lora", "qlora")


def fit_advice(plan, device: str) -> str:
    """What to change when a dry run's estimate does not fit: a smaller micro-batch, and a lighter fine-tune the task offers.

    Only modes lighter than the run's own are named, and QLoRA only on a CUDA
    device (its 4-bit weights need bitsandbytes' kernels).
    """
    advice = ["lower micro_batch_size"]
    spec = getattr(plan.task, "spec", None)
    offered = next((tuple(p.choices or ()) for p in getattr(spec, "params", ()) if p.name == "finetune"), ())
    mode = str(plan.params.get("finetune", "full"))
    if mode in LIGHTER_FINETUNES and offered:
        lighter = [m for m in LIGHTER_FINETUNES[LIGHTER_FINETUNES.index(mode) + 1:] if m in offered and (m != "qlora" or device.startswith("cuda"))]
        if lighter:
            advice.append(f"use finetune={lighter[0]}")
    return " or ".join(advice)


INTERRUPTED_EARLY = "interrupted before the run began: no checkpoint was written"


def _train_here(request, progress):
    from trainlab.api.callbacks import RunControl
    from trainlab.engine.run_here import run_here

    control = RunControl()
    try:
        with stop_on_signals(lambda: control.request_stop("interrupted")):
            return run_here(request, control=control, callbacks=[progress.callback])
    except KeyboardInterrupt as exc:  # a second Ctrl-C: the run's end is recorded, its outcome rides along
        outcome = getattr(exc, "outcome", None)
        if outcome is not None:
            return outcome
        # before the run began (planning, the data's preparation): no run to resume
        return RunOutcome(run_dir=request.resume or "", status=RunStatus.CANCELLED, task=request.task or "", error=INTERRUPTED_EARLY)


def _train_launched(args, out: Output) -> int:
    return train_launched(args, out)


def _train_as_rank(request, progress, out: Output) -> int:
    from trainlab.engine.distributed_run import rank_main

    return rank_main(request, progress, out, stop_on_signals=stop_on_signals, fail=_fail)


def _train_isolated(request, progress):
    from trainlab.engine.run_process import RunProcess

    process = RunProcess(request)
    with stop_on_signals(process.stop):
        outcome = process.run(on_event=progress.on_event)
    if outcome.usage_error and process.finished is None:
        raise UsageError(outcome.error or "the child process rejected the run")  # as in-process planning would
    return outcome


def cmd_eval(args, out: Output) -> int:
    from trainlab.cli.reporting import eval_lines, task_spec
    from trainlab.engine.predict import open_trained_run
    from trainlab.engine.scripting import evaluate_run

    record = open_trained_run(args.run_dir, need_model=False).read()  # a mistyped folder is named before torch loads
    report = evaluate_run(args.run_dir, args.data, device=args.device, split=args.split)
    for line in eval_lines(report, task_spec(str(record.get("task", "")))):
        out.say(line)
    out.say(f"written to {report['written']}")
    out.result(report)
    return EXIT_OK


def cmd_predict(args, out: Output) -> int:
    from trainlab.cli.reporting import predictions_format, task_spec, write_predictions
    from trainlab.engine.predict import open_trained_run, prediction_type
    from trainlab.engine.scripting import predict

    if args.top_k < 1:
        raise UsageError("--top-k must be at least 1")
    if args.out:
        predictions_format(_path(args.out))  # a name of no known format is said before the model loads
    warnings: list[str] = []

    def warn(message: str) -> None:
        warnings.append(message)
        out.note(f"trainlab: warning: {message}")

    results = predict(args.run_dir, args.inputs, args.top_k, device=args.device, on_warning=warn)
    errors = [item for item in results if item.error]
    for item in results:
        out.say(f"{item.input}\terror: {item.error}" if item.error else f"{item.input}\t{item.prediction.summary()}")
    written = None
    if args.out:
        record = open_trained_run(args.run_dir).read()
        spec = task_spec(str(record.get("task", "")))
        family = spec.family if spec is not None else "classification"
        labels = [str(name) for name in record.get("label_names") or []]
        params = record.get("parameters") if isinstance(record.get("parameters"), dict) else {}
        write_predictions(_path(args.out), results, args.top_k, labels, prediction_type(family, results), spec=spec, params=params)
        written = str(_path(args.out).resolve())
        out.note(f"wrote {len(results)} predictions to {written}")
    answer = {"run_dir": args.run_dir, "predictions": [item.to_json() for item in results], "out": written, "errors": len(errors)}
    if warnings:
        answer["warnings"] = warnings
    out.result(answer)
    if errors:
        # every other input was predicted (and written); the exit code says not all were
        out.note(f"{len(errors)} of {len(results)} input(s) could not be used: {errors[0].error}"
                 + (" (and more, see above)" if len(errors) > 1 else ""))
        return EXIT_USAGE
    return EXIT_OK


def _path(value: str):
    from pathlib import Path

    return Path(value).expanduser()


def cmd_cache(args, out: Output) -> int:
    from trainlab.system.cache import run_command

    lines, result = run_command(args.action, args.limit_gb)
    out.say("\n".join(lines))
    out.result(result)
    return EXIT_OK


def cmd_doctor(args, out: Output) -> int:
    from trainlab.cli import doctor

    report = doctor.collect()
    code = doctor.exit_code(report)
    out.say(doctor.format_text(report))
    out.result(report)
    return code


def cmd_install_launcher(args, out: Output) -> int:
    from trainlab import shortcuts as launcher

    written = launcher.install(desktop=args.desktop)
    for path in written:
        out.say(f"wrote {path}")
    out.result({"written": [str(p) for p in written]})
    return EXIT_OK


def cmd_uninstall_launcher(args, out: Output) -> int:
    from trainlab import shortcuts as launcher

    removed = launcher.uninstall()
    for path in removed:
        out.say(f"removed {path}")
    out.result({"removed": [str(p) for p in removed]})
    return EXIT_OK


def cmd_queue(args, out: Output) -> int:
    return queue(args, out)


def cmd_sweep(args, out: Output) -> int:
    return sweep(args, out)


def cmd_gui(args, out: Output) -> int:
    problem = xcb_problem()  # before Qt, which would abort the process (exit 134) naming no package
    if problem:
        raise UsageError(problem)
    from trainlab_desktop.app import run_app  # Qt is imported here and only here

    return run_app(
        task=getattr(args, "task", None),
        data=getattr(args, "data", None),
        params=params_from(args),
        autostart=bool(getattr(args, "autostart", False)),
        language=getattr(args, "language", None),
    )


COMMANDS: dict[str, Callable[[argparse.Namespace, Output], int]] = {
    "gui": cmd_gui,
    "plugins": cmd_plugins,
    "tasks": cmd_tasks,
    "train": cmd_train,
    "eval": cmd_eval,
    "predict": cmd_predict,
    "chat": cmd_chat,
    "runs": cmd_runs,
    "models": cmd_models,
    "cache": cmd_cache,
    "doctor": cmd_doctor,
    "export": cmd_export,
    "queue": cmd_queue,
    "sweep": cmd_sweep,
    "install-launcher": cmd_install_launcher,
    "uninstall-launcher": cmd_uninstall_launcher,
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    out = Output(as_json)

    problem = shadowing_error()  # a folder named trainlab hiding this package: say so, not an AttributeError
    if problem is not None:
        return _fail(out, EXIT_USAGE, problem)
    try:
        args = _parser().parse_args(argv)
        args.argv = argv  # what a launch passes on to its ranks
    except UsageError as exc:
        return _fail(out, EXIT_USAGE, str(exc))
    except SystemExit as exc:  # --help, --version
        return int(exc.code or 0)
    from trainlab.system.logs import setup_logging

    setup_logging(verbose=args.verbose)
    command = args.command or "gui"
    if command == "gui" and not hasattr(args, "task"):
        args = _parser().parse_args(["gui"])
    try:
        with out.guarded():
            return COMMANDS[command](args, out)
    except UsageError as exc:
        return _fail(out, EXIT_USAGE, str(exc), exc)
    except RunFailed as exc:
        return _fail(out, EXIT_FAILED, str(exc), exc)
    except OutputClosed:  # `trainlab ... | head`: nobody reads an error line now
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        return _fail(out, EXIT_INTERRUPTED, "interrupted")
    except BrokenPipeError:
        return EXIT_FAILED
    except OSError as exc:  # a full or read-only disk under a command: one line naming the file, not a traceback
        if args.verbose:
            logging.getLogger("trainlab").exception("%s", exc)
        from trainlab.system.fileio import os_error_line

        return _fail(out, EXIT_FAILED, os_error_line(exc))


def _fail(out: Output, code: int, message: str, exc: BaseException | None = None) -> int:
    from trainlab.engine.plugin_calls import failure_fields  # plugin, method, task of a plugin's failure

    out.note(f"trainlab: error: {message}")
    out.result({"error": message, "exit_code": code, **failure_fields(exc)})
    return code


def gui_main() -> int:
    """Entry point of the ``trainlab-gui`` GUI script (desktop launchers)."""
    try:
        from trainlab import shortcuts as launcher

        launcher.configure_stdio()
    except ImportError:
        pass
    argv = sys.argv[1:]
    if argv in (["--version"], ["--help"], ["-h"]):
        return main(argv)
    return main(["gui", *argv] if not argv or argv[0].startswith("-") else argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

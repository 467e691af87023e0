"""The listing commands of the command line: ``trainlab tasks``, ``runs`` and ``models``.

Apart from ``trainlab.cli.commands`` so that the command-line module stays a size that
reads; they only read (the plugin registry, the run index, the model store)
and print, through the ``Output`` that ``trainlab.cli.commands`` hands them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from trainlab.api.assignments import format_value
from trainlab.api.errors import UsageError, did_you_mean
from trainlab.engine.outcome import EXIT_OK
from trainlab.pluginhost.status import NOT_LOADED
from trainlab.runfolder.status import RunStatus, status_word

if TYPE_CHECKING:
    from trainlab.cli.common import Output


def cmd_tasks(args, out: Output) -> int:
    from trainlab.api.params import ENGINE_PARAMS, task_json
    from trainlab.pluginhost.host import registry

    reg = registry()
    for record in reg.plugins:  # a plugin that did not load has no tasks here: say which, and why
        if record.status in NOT_LOADED:
            reason = (record.message or "").strip().splitlines()[0] if (record.message or "").strip() else record.status
            out.note(f"trainlab: warning: plugin {record.name!r} was not loaded ({record.status}), its tasks are not listed: {reason} (trainlab plugins -v says more)")
    wanted = getattr(args, "task_id", None)
    if wanted and wanted not in reg.tasks:
        raise UsageError(f"tasks: no task {wanted!r}{did_you_mean(wanted, reg.tasks)} (installed: {', '.join(sorted(reg.tasks)) or 'none'})")
    tasks = []
    for task_id, entry in sorted(reg.tasks.items()):
        if wanted and task_id != wanted:
            continue
        data = task_json(entry.spec, ENGINE_PARAMS)
        data["parameters"] = [p for p in data["parameters"] if entry.spec.uses_param(p["name"])]  # no class_weighting without classes
        data["plugin"] = {"name": entry.plugin.name, "version": entry.plugin.version}
        sample = entry.spec.sample_path()  # in the plugin's own package, or TrainLab's resources
        data["sample_data"] = str(sample) if sample is not None else None
        tasks.append(data)
    if not wanted and not getattr(args, "verbose", False):
        # a line per task; its parameters and presets with `trainlab tasks TASK_ID` (or -v for all)
        width = max((len(task["id"]) for task in tasks), default=0)
        for task in tasks:
            out.say(f"{task['id']:<{width}}  {task['title']} ({task['family']}; plugin {task['plugin']['name']})")
        if tasks:
            out.say()
            out.say("a task's parameters, presets and sample data: trainlab tasks TASK_ID (every task's: trainlab tasks -v)")
        out.result({"tasks": tasks})
        return EXIT_OK
    # One set of column widths for every task, so that all the tables line up.
    rows = {task["id"]: [_param_row(param, task["defaults"]) for param in task["parameters"]] for task in tasks}
    every_row = [row for task_rows in rows.values() for row in task_rows]
    widths = [max((len(row[column]) for row in every_row if len(row[column]) <= _LIMITS_COLUMN_MAX), default=0) for column in range(3)]
    for task in tasks:
        out.say(f"{task['id']}  ({task['title']}; plugin {task['plugin']['name']} {task['plugin']['version']})")
        if task["description"]:
            out.say(f"  {task['description']}")
        out.say("  " + _task_declarations(task))
        if task["sample_data"]:
            out.say(f"  sample data: {task['sample_data']}")
        for setting, kind, limits, help_text in rows[task["id"]]:
            long_limits = len(limits) > _LIMITS_COLUMN_MAX
            columns = [setting.ljust(widths[0]), kind.ljust(widths[1]), ("" if long_limits else limits).ljust(widths[2]), help_text]
            out.say("  " + "  ".join(columns).rstrip())
            if long_limits:  # a long list of choices gets its own line under the help text
                out.say(" " * (2 + sum(widths) + 6) + limits)
        if task["presets"]:
            out.say("  presets: " + ", ".join(p["name"] for p in task["presets"]))
        out.say()
    out.result({"tasks": tasks})
    return EXIT_OK


def _task_declarations(task: dict[str, Any]) -> str:
    """Family, metrics (the monitor first marked), input kind, model formats: one line of `trainlab tasks`."""
    metrics = ", ".join(
        m["name"] + (f" [{m['unit']}]" if m.get("unit") else "") + (" (monitor)" if m["name"] == task["monitor"] else "")
        + ("" if m["higher_is_better"] else " (lower is better)") + ("" if m.get("monitorable", True) else " (not monitorable)")
        for m in task["metrics"]
    )
    if task["monitor"] == "loss":
        metrics += ", loss (monitor)"
    kind = task["input"]["kind"] + (f" ({', '.join(task['input']['suffixes'])})" if task["input"]["suffixes"] else "")
    formats = ", ".join(task["model_formats"]) or "its own presets only"
    return f"family {task['family']}; metrics {metrics or '-'}; input {kind}; model formats {formats}"


# Choices longer than this go on a line of their own rather than widen the table.
_LIMITS_COLUMN_MAX = 36


def _param_row(param: dict[str, Any], defaults: dict[str, Any]) -> tuple[str, str, str, str]:
    """`--set name=default`, type, range or choices, help: one row of `trainlab tasks`."""
    if "choices" in param:
        limits = "{" + ", ".join(format_value(c) for c in param["choices"]) + (", ..." if param.get("open_choices") else "") + "}"
    elif "minimum" in param or "maximum" in param:
        limits = f"[{format_value(param.get('minimum'))}..{format_value(param.get('maximum'))}]"
    else:
        limits = ""
    return f"--set {param['name']}={format_value(defaults.get(param['name']))}", param["type"], limits, param["help"]


def cmd_runs(args, out: Output) -> int:
    from trainlab.runfolder.display import MISSING, format_duration
    from trainlab.runfolder.index import RunStore
    from trainlab.viewmodel.history import parse_condition, run_metrics, sort_key

    conditions = []
    for text in args.where or []:
        condition = parse_condition(text)
        if condition is None:
            raise UsageError(f"--where {text!r}: expected METRIC<VALUE, METRIC>=VALUE, ... (a number, or a percentage: accuracy>90%)")
        conditions.append(condition)
    # IndexUnavailable (exit 2, one line naming the index) when it cannot be
    # opened; on a full disk the runs are read from their folders, with a note
    store = RunStore(read_only_when_full=True)
    runs = [(r, run_metrics(r)) for r in store.list()]
    for note in store.notes:
        out.note(f"trainlab: {note}")
    if conditions:
        runs = [(r, m) for r, m in runs if all(c.holds(m) for c in conditions)]
    if args.sort:
        if not any(args.sort == d.name for _, m in runs for d in m.declared):
            known = sorted({d.name for _, m in runs for d in m.declared})
            raise UsageError(f"--sort {args.sort}: no listed run has that metric (they have: {', '.join(known) or 'none'})")
        runs.sort(key=lambda pair: sort_key(pair[1], args.sort))  # stable: newest first among equals
    if args.limit:
        runs = runs[: args.limit]
    rows = []
    for r, metrics in runs:
        best = metrics.named(metrics.monitor) if r["best_metric"] is not None and metrics.monitor else ""
        rows.append(
            {
                "id": r["id"],
                "name": r["name"],
                "task": r["task"],
                "family": metrics.family,
                "status": r["status"],
                "start": r["started"],
                "duration": _training_seconds(r),  # seconds trained, summed over the run's sessions
                "wall_seconds": r["duration"],  # first start to last end, idle time between sessions included
                "best_metric": r["best_metric"],
                "monitor": r["monitor"],
                "best": best or None,
                "metrics": dict(metrics.values),  # each declared metric's value: the monitor's best, the others' last
                "metrics_text": {m.name: metrics.text(m.name) for m in metrics.declared if m.name in metrics.values},
                "run_dir": r["run_dir"],
            }
        )
        start = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["started"])) if r["started"] else MISSING
        duration = format_duration(rows[-1]["duration"], missing=MISSING)
        status = status_word(r["status"], r.get("error"))
        out.say(f"{r['id']:<44} {status:<11} {start:<17} {duration:>8}  {metrics.summary():<36} {r['run_dir']}")
    if not rows:
        out.say("no runs match" if conditions else "no runs yet")
    out.result({"runs": rows})
    return EXIT_OK


def _training_seconds(row: dict[str, Any]) -> float | None:
    """How long a run trained: its sessions' training time (``timings.train_seconds``),
    not the index's wall time, which counts the days between a run and its --more-epochs."""
    from trainlab.runfolder.index import RunDir

    if row.get("status") != RunStatus.RUNNING:
        try:
            seconds = RunDir(row["run_dir"]).read_record().timings.get("train_seconds")
        except Exception:  # noqa: BLE001 - a listing never fails over one run's folder
            seconds = None
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool):
            return float(seconds)
    return row.get("duration")


def cmd_models(args, out: Output) -> int:
    from trainlab.models import catalog as modelstore
    from trainlab.pluginhost.host import registry

    if args.action == "import":
        if not args.path:
            raise UsageError("models import: give the model folder (DIR)")
        info = modelstore.import_model(args.path, name=args.name) if args.name else modelstore.import_model(args.path)
        out.say(f"imported {info.get('name', args.path)} into the model store")
        out.result({"imported": info})
        return EXIT_OK
    presets = []
    for task_id, entry in sorted(registry().tasks.items()):
        for preset in entry.spec.presets:
            presets.append({"task": task_id, **preset.to_json()})
    available = modelstore.available_models()
    out.say("presets:")
    for p in presets:
        out.say(f"  {p['task']:<24} {p['name']:<24} {p['description']}")
    out.say("pretrained models on this machine:")
    for m in available:
        takers = ", ".join(m["tasks"]) or "no installed task"
        out.say(f"  {m.get('name', '?'):<40} {m.get('source', ''):<9} {m['format']:<23} for {takers}  {m.get('path', '')}")
    if not available:
        out.say("  none (see docs/offline-install.md to stage some)")
    out.result({"presets": presets, "available": available})
    return EXIT_OK

"""``trainlab plugins check NAME|PATH [--full] [--json]``: the plugin kit's checks on an installed plugin.

Without ``--full``, the static checks (``trainlab.testing.checks``): API
version, hooks, an entry point that imports no torch, descriptors and
factories; nothing trains.  With ``--full``, every check of the conformance
suite too, for each task on a copy of the sample data the task declares
(``TaskSpec.sample_data``: a plugin that writes its data writes the copy,
never the package's own sample), a few CPU steps, in a temporary TrainLab
home that is removed afterwards; a task that takes rows is given rows of
the sample to predict.  The exit code is 1 when any check failed, and the
closing line names each one (and says how many only warned); 2 when NAME or
PATH is no plugin.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from trainlab.pluginhost.status import PluginStatus
from trainlab.testing.checks import RUN_CHECKS, STATIC_CHECKS, CheckResult, CheckStatus, StaticKit, run_check
from trainlab.testing.runs import TaskKit
from trainlab.testing.target import find_targets

MARKS = {CheckStatus.PASSED: "ok  ", CheckStatus.WARNED: "warn", CheckStatus.FAILED: "FAIL", CheckStatus.SKIPPED: "skip",
         CheckStatus.EXPECTED_FAILURE: "xfail"}


def check_plugin(name_or_path: str, *, full: bool = False, on_result: Callable[[CheckResult], None] | None = None) -> list[dict[str, Any]]:
    """One report per entry point NAME or PATH stands for: ``{"plugin", "checks": [CheckResult...]}``."""
    reports = []
    for target in find_targets(name_or_path):
        results: list[CheckResult] = []

        def said(result: CheckResult) -> None:
            results.append(result)
            if on_result is not None:
                on_result(result)

        home = Path(tempfile.mkdtemp(prefix="trainlab-plugin-check-")) if full else None
        try:
            kit = StaticKit(target, home=home)
            for name, check in STATIC_CHECKS.items():
                said(run_check(name, "", lambda check=check: check(kit)))
            if full:
                _run_checks(kit, home, said)
        finally:
            if home is not None:
                shutil.rmtree(home, ignore_errors=True)
        reports.append({"plugin": target.name, "entry_point": target.value, "checks": results})
    return reports


def _run_checks(kit: StaticKit, home: Path, said: Callable[[CheckResult], None]) -> None:
    if kit.record.status != PluginStatus.OK:
        return  # the static checks said why
    for task_id in kit.task_ids():
        spec = kit.registry.tasks[task_id].spec
        sample = spec.sample_path()
        if sample is None:
            for name in RUN_CHECKS:
                said(CheckResult(name, task_id, CheckStatus.SKIPPED, "the task declares no sample_data to train on (run PluginConformance in the plugin's tests)"))
            continue
        task_kit = TaskKit(task_id, copy_sample(sample, home / task_id / "sample"), home / task_id, kit.registry, home=home)
        for name in RUN_CHECKS:
            said(run_check(name, task_id, getattr(task_kit, name)))


def copy_sample(sample: Path, folder: Path) -> Path:
    """A copy of a task's sample file or folder under ``folder``, for the kit's runs to read (and a careless task to write)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / sample.name
    if sample.is_dir():
        shutil.copytree(sample, target)
    else:
        shutil.copy2(sample, target)
    return target


def cmd_check(args, out) -> int:
    def show(result: CheckResult) -> None:
        out.say(f"{MARKS[result.status]} {result.label}: {result.message}")

    reports = check_plugin(args.target, full=args.full, on_result=show)
    failed = [f"{report['plugin']}: {r.label}" for report in reports for r in report["checks"] if r.status == CheckStatus.FAILED]
    warned = [f"{report['plugin']}: {r.label}" for report in reports for r in report["checks"] if r.status == CheckStatus.WARNED]
    if failed:
        out.note(f"trainlab: {len(failed)} check(s) failed: {', '.join(failed)}")
    else:
        scope = "every check" if args.full else "the static checks (--full trains too)"
        out.note(f"trainlab: {', '.join(r['plugin'] for r in reports)} passed {scope}")
    if warned:
        out.note(f"trainlab: {len(warned)} check(s) passed with a warning, saying what to change: {', '.join(warned)}")
    out.result(
        {
            "plugins": [{**report, "checks": [r.to_json() for r in report["checks"]]} for report in reports],
            "failed": failed,
            "warned": warned,
            "full": bool(args.full),
        }
    )
    return 1 if failed else 0

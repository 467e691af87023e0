"""Runs the registry's checks, each in its own process under its own time limit, and prints one JSON line.

    python -m gpucheck.driver [--budget S] [--only a,b] [--skip a,b] [--dry-run] [--out DIR] [--work DIR]

(``bench/gpu_check.sh`` runs it with ``bench/`` on PYTHONPATH, after the
installation.)  A process per check: a hung CUDA call cannot stop the
others, and each starts from clean global state (TF32 flags, memory caps).
Human lines go to stderr; stdout's last line is the summary; the whole
report, with every assertion and fact, goes to ``DIR/gpu_check.json`` and
each check's log to ``DIR/logs/NAME.log``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from gpucheck.registry import Check, by_name

VERSION = 1
BENCH = Path(__file__).resolve().parents[1]
REASON_CHARS = 240  # per check in the summary line: the device tool keeps only the last 12,000 characters
KILL_GRACE = 10.0


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- one check, in the child process ------------------------------------------------------------


def run_one(check: Check, limit: float, work: Path, dry_run: bool) -> dict[str, Any]:
    from gpucheck.common import CheckEnv, Outcome, Skipped

    started = time.monotonic()
    result: dict[str, Any] = {"name": check.name}
    try:
        import torch

        cuda = torch.cuda.is_available() and not dry_run
        result["device"] = torch.cuda.get_device_name(0) if cuda else "cpu"
    except Exception as exc:  # noqa: BLE001 - a broken torch is this check's failure, reported below
        cuda = False
        result["device"] = f"torch unusable: {type(exc).__name__}: {exc}"
    env = CheckEnv(name=check.name, cuda=cuda, dry_run=dry_run, work=work, deadline=started + limit)
    out = Outcome()
    try:
        module, _, function = check.function.partition(":")
        getattr(importlib.import_module(module), function)(env, out)
        if out.failed:
            result.update(status="fail", reason="failed: " + "; ".join(out.failed))
        elif check.needs_cuda and not cuda:
            result.update(status="skipped", reason="no CUDA (its code ran on the CPU at tiny scale and passed)")
        else:
            result.update(status="pass", reason="")
    except Skipped as exc:
        result.update(status="skipped", reason=str(exc))
    except BaseException as exc:  # noqa: BLE001 - every failure becomes this check's result
        result.update(status="fail", reason=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()[-4000:])
        say(result["traceback"])
    result.update(checks=out.checks, details=out.details, figures=out.figures, goals=out.goals, facts=out.facts)
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def child_main(args: argparse.Namespace) -> int:
    check = by_name()[args.run_check]
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    say(f"== {check.name}: {check.about}")
    result = run_one(check, args.limit, work, args.dry_run)
    Path(args.result).write_text(json.dumps(result, default=str), encoding="utf-8")
    return 0


# -- the parent: every check, in order, within the budget ----------------------------------------


def _pump(stream, sink_file) -> None:
    for line in iter(stream.readline, ""):
        sys.stderr.write(line)
        sys.stderr.flush()
        sink_file.write(line)
    stream.close()


def launch(check: Check, limit: float, work: Path, logs: Path | None, dry_run: bool) -> dict[str, Any]:
    result_path = work / f"{check.name}.result.json"
    command = [sys.executable, "-m", "gpucheck.driver", "--run-check", check.name, "--limit", f"{limit:.0f}",
               "--result", str(result_path), "--work", str(work / check.name)] + (["--dry-run"] if dry_run else [])  # fmt: skip
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(BENCH), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    log_path = (logs or work) / f"{check.name}.log"
    started = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        # Its own session: a timeout kills the check and every process it started (loader workers, torchrun).
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
        pump = threading.Thread(target=_pump, args=(proc.stdout, log), daemon=True)
        pump.start()
        try:
            proc.wait(timeout=limit + KILL_GRACE)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        pump.join(5)
    seconds = round(time.monotonic() - started, 1)
    if timed_out:
        return {"name": check.name, "status": "fail", "reason": f"timed out after {seconds:.0f} s (limit {limit:.0f} s); killed", "seconds": seconds}
    try:
        result = json.loads(result_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        tail = log_path.read_text(encoding="utf-8", errors="replace")[-600:]
        return {"name": check.name, "status": "fail", "reason": f"its process ended (exit {proc.returncode}) without a result: {tail}", "seconds": seconds}
    result["seconds"] = seconds  # the process's wall time, start-up included
    return result


def select(only: str, skip: str) -> list[Check]:
    names = by_name()
    wanted = [n.strip() for n in only.split(",") if n.strip()] if only else list(names)
    unknown = [n for n in wanted + [s.strip() for s in skip.split(",") if s.strip()] if n not in names]
    if unknown:
        raise SystemExit(f"unknown check(s): {', '.join(unknown)} (known: {', '.join(names)})")
    dropped = {s.strip() for s in skip.split(",") if s.strip()}
    return [names[n] for n in names if n in wanted and n not in dropped]


def summary_line(report: dict[str, Any]) -> dict[str, Any]:
    """The compact JSON line: every check's status, reason, time, figures and goals."""
    checks = {}
    for name, result in report["checks"].items():
        entry = {"status": result["status"], "seconds": result.get("seconds")}
        if result.get("reason"):
            entry["reason"] = result["reason"][:REASON_CHARS]
        if result["status"] == "skipped":  # figures of a dry run mean nothing; the full report keeps them
            checks[name] = entry
            continue
        if result.get("figures"):
            entry["figures"] = result["figures"]
        if result.get("goals"):
            entry["goals"] = {k: {"value": g["value"], "goal": g["goal"], "met": g["met"]} for k, g in result["goals"].items()}
        checks[name] = entry
    return {key: report[key] for key in ("gpu_check", "ok", "dry_run", "device", "wall_s", "budget_s", "counts", "goals_met")} | {"checks": checks}


def parent_main(args: argparse.Namespace) -> int:
    began = time.monotonic()
    checks = select(args.only, args.skip)
    work = Path(args.work or tempfile.mkdtemp(prefix="gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    out_dir = Path(args.out) if args.out else None
    logs = None
    if out_dir is not None:
        logs = out_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    for check in checks:
        left = args.budget - (time.monotonic() - began)
        if check.pending:
            results[check.name] = {"status": "skipped", "reason": f"not written yet: {check.pending} adds it", "seconds": 0.0}
            continue
        limit = min(float(check.seconds), left - KILL_GRACE - 5)
        if limit < min(20.0, 0.5 * check.seconds):
            results[check.name] = {"status": "skipped", "reason": f"out of time budget ({left:.0f} s of {args.budget:.0f} s left)", "seconds": 0.0}
            say(f"== {check.name}: skipped, out of time budget")
            continue
        results[check.name] = launch(check, limit, work, logs, args.dry_run)
        r = results[check.name]
        say(f"-- {check.name}: {r['status'].upper()} in {r.get('seconds')} s" + (f" ({r['reason'][:300]})" if r.get("reason") else ""))
    statuses = [r["status"] for r in results.values()]
    goals = {
        f"{name}.{goal}": g["met"] for name, r in results.items() if r["status"] != "skipped" for goal, g in (r.get("goals") or {}).items()
    }
    report = {
        "gpu_check": VERSION,
        "ok": "fail" not in statuses,
        "dry_run": args.dry_run,
        "device": next((r["device"] for r in results.values() if r.get("device") and r["device"] != "cpu"), "cpu"),
        "wall_s": round(time.monotonic() - began, 1),
        "budget_s": args.budget,
        "counts": {s: statuses.count(s) for s in ("pass", "fail", "skipped")},
        "goals_met": goals,
        "checks": results,
        "install": os.environ.get("GPU_CHECK_INSTALL", ""),
    }
    if out_dir is not None:
        (out_dir / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    say("")
    say(f"{'check':28} {'status':8} {'s':>6}  reason")
    for name, r in results.items():
        say(f"{name:28} {r['status']:8} {r.get('seconds') or 0:6.1f}  {(r.get('reason') or '')[:90]}")
    say(f"{report['counts']}; goals met: {sum(goals.values())}/{len(goals)}; {report['wall_s']} s")
    sys.stderr.flush()
    print(json.dumps(summary_line(report), default=str), flush=True)
    return 0 if report["ok"] else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=340.0, help="seconds for every check together")
    parser.add_argument("--only", default="", help="comma-separated checks to run (default: all)")
    parser.add_argument("--skip", default="", help="comma-separated checks not to run")
    parser.add_argument("--dry-run", action="store_true", help="tiny scale on the CPU (CUDA-only checks: skipped)")
    parser.add_argument("--out", default="", help="folder for gpu_check.json and the logs")
    parser.add_argument("--work", default="", help="scratch folder (default: a new temporary one)")
    parser.add_argument("--run-check", default="", help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=float, default=60.0, help=argparse.SUPPRESS)
    parser.add_argument("--result", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_check:
        return child_main(args)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())

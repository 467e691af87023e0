"""Crash battery: SIGKILL a CLI run at seeded moments and check what it left.

One uninterrupted run of the toy fixture task (tests/fixtures/plugins) is the
reference.  Then, for each of N moments, the same ``trainlab train`` command
is started and SIGKILLed at a seeded point, spread round-robin over the
phases of a run:

  start-up   before the run folder exists (imports, the data scan), by time
  first      the first steps (after the first train event, a seeded delay)
  mid-epoch  a seeded step in the middle of an epoch
  checkpoint when the log says a checkpoint of a seeded step is being saved
  eval       after the last step of an epoch (its evaluation) or the final one
  export     after the "save" progress event (the model being exported)

The battery watches the run's metrics.jsonl to find these moments.  After
each kill it checks, with the public tools only:

  checkpoints_load  every file in checkpoints/ loads (verified)
  run_json_parses   run.json is a readable record (or not written yet)
  index_honest      ``trainlab runs`` shows it interrupted (failed, with the
                    resume command), or completed if the kill came after its
                    end, or not at all if it never began
  resume_completes  ``trainlab train --resume`` (or the same command again,
                    for a run that never began) ends completed
  bit_identical     the final model and both checkpoints' weights equal the
                    reference's, bit for bit
  no_temporaries    no temporary file is left in the folder afterwards

    python bench/crash_battery.py [--kills 20] [--seed 0] [--quick] [--json]

The last line is a JSON object; the goal is N/N in every column.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pairs import bench_parser, emit, speaker

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "plugins"
PHASES = ("start-up", "first", "mid-epoch", "checkpoint", "eval", "export")
COLUMNS = ("checkpoints_load", "run_json_parses", "index_honest", "resume_completes", "bit_identical", "no_temporaries")
EPOCHS, STEPS_PER_EPOCH = 3, 12  # 240 rows, val_fraction 0.25, batch 16
# Delays (the toy task's) stretch a step, an evaluation batch and the export so that a kill can land inside them.
PARAMS = ["--epochs", str(EPOCHS), "--set", "step_delay=0.03", "--set", "eval_delay=0.01", "--set", "export_delay=0.3",
          "--set", "checkpoint_every_steps=5", "--set", "log_interval=0"]  # fmt: skip


def write_data(path: Path, rows: int = 240, classes: int = 3, features: int = 4) -> Path:
    rng = random.Random(0)
    centres = [[rng.uniform(-3, 3) for _ in range(features)] for _ in range(classes)]
    lines = [",".join([f"x{i}" for i in range(features)] + ["label"])]
    for r in range(rows):
        c = r % classes
        lines.append(",".join(f"{centres[c][i] + rng.gauss(0, 0.6):.4f}" for i in range(features)) + f",class_{c}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Battery:
    def __init__(self, work: Path):
        self.work = work
        self.env = dict(os.environ)
        self.env["TRAINLAB_HOME"] = str(work / "home")
        self.env["PYTHONPATH"] = os.pathsep.join([str(FIXTURES), *filter(None, [self.env.get("PYTHONPATH")])])
        self.env.setdefault("OMP_NUM_THREADS", "1")
        self.data = write_data(work / "toy.csv")

    def command(self, out: Path) -> list[str]:
        return [sys.executable, "-m", "trainlab", "train", "toy-classification", "--data", str(self.data), "--out", str(out), *PARAMS, "--json"]

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "trainlab", *args], capture_output=True, text=True, env=self.env, timeout=600)

    # -- the reference ---------------------------------------------------------------------
    def reference(self) -> tuple[Path, float]:
        out = self.work / "reference"
        start = time.perf_counter()
        proc = subprocess.Popen(self.command(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=self.env)
        folder_at = None
        while proc.poll() is None:
            if folder_at is None and (out / "run.json").exists():
                folder_at = time.perf_counter() - start
            time.sleep(0.002)
        if proc.returncode != 0:
            raise SystemExit(f"the reference run failed: {proc.stderr.read()[-2000:]}")
        return out, folder_at or 1.0

    # -- one kill ----------------------------------------------------------------------------
    def kill_at(self, out: Path, phase: str, rng: random.Random, folder_at: float) -> dict:
        """Start the run, kill it at a moment of ``phase``; what happened."""
        if phase == "start-up":
            plan = {"after_seconds": rng.uniform(0.05, folder_at * 0.95)}
        elif phase == "first":
            plan = {"event": "train", "step": 1, "delay": rng.uniform(0, 0.09)}
        elif phase == "mid-epoch":
            epoch = rng.randint(1, EPOCHS)
            plan = {"event": "train", "step": (epoch - 1) * STEPS_PER_EPOCH + rng.randint(3, STEPS_PER_EPOCH - 2), "delay": rng.uniform(0, 0.03)}
        elif phase == "checkpoint":
            saves = sorted({s for s in range(5, EPOCHS * STEPS_PER_EPOCH + 1, 5)} | {e * STEPS_PER_EPOCH for e in range(1, EPOCHS + 1)})
            plan = {"event": "log", "message": f"saving checkpoint at step {rng.choice(saves)}", "delay": rng.uniform(0, 0.002)}
        elif phase == "eval":  # 4 batches of 10 ms
            if rng.random() < 0.5:
                plan = {"event": "train", "step": rng.randint(1, EPOCHS) * STEPS_PER_EPOCH, "delay": rng.uniform(0, 0.035)}
            else:
                plan = {"event": "progress", "phase": "eval", "delay": rng.uniform(0, 0.035)}
        else:  # the export lasts 0.3 s
            plan = {"event": "progress", "phase": "save", "delay": rng.uniform(0, 0.25)}
        start = time.perf_counter()
        proc = subprocess.Popen(self.command(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env)
        metrics, offset, pending = out / "metrics.jsonl", 0, b""
        fire_at = start + plan["after_seconds"] if "after_seconds" in plan else None
        while proc.poll() is None:
            now = time.perf_counter()
            if fire_at is None and metrics.exists():
                with open(metrics, "rb") as handle:
                    handle.seek(offset)
                    chunk = handle.read()
                offset += len(chunk)
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if self._matches(line, plan):
                        fire_at = time.perf_counter() + plan["delay"]
                        break
            if fire_at is not None and now >= fire_at:
                temporaries = [str(p.relative_to(out)) for p in out.rglob(".*.tmp")] if out.exists() else []
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                return {"phase": phase, "plan": plan, "killed": True, "killed_at_s": round(now - start, 3),
                        "landed": _where_it_landed(out), "temporaries_at_kill": temporaries}  # fmt: skip
            time.sleep(0.0005)
        return {"phase": phase, "plan": plan, "killed": False, "exit_code": proc.returncode}

    @staticmethod
    def _matches(line: bytes, plan: dict) -> bool:
        try:
            event = json.loads(line)
        except ValueError:
            return False
        kind = event.get("event")
        if plan["event"] == "train":
            return kind == "train" and event.get("step", -1) >= plan["step"]
        if plan["event"] == "log":
            return kind == "log" and event.get("message") == plan["message"]
        return kind == "progress" and event.get("phase") == plan["phase"]

    # -- the checks -----------------------------------------------------------------------------
    def check(self, out: Path, reference: Path) -> dict:
        from trainlab.api.errors import UsageError
        from trainlab.engine.checkpoint import read_checkpoint
        from trainlab.runfolder.index import RunDir

        result: dict = {}
        loads = True
        for path in sorted((out / "checkpoints").glob("*.safetensors")) if (out / "checkpoints").is_dir() else []:
            try:
                read_checkpoint(path)
            except UsageError as exc:
                loads, result["checkpoint_error"] = False, str(exc)
        result["checkpoints_load"] = loads
        began = (out / "run.json").exists()
        record = None
        if began:
            try:
                record = RunDir(out).read_record()
                result["run_json_parses"] = True
            except UsageError as exc:
                result["run_json_parses"], result["run_json_error"] = False, str(exc)
        else:
            result["run_json_parses"] = True
            result["note"] = "killed before run.json was written"
        listing = self.cli("runs", "--json")
        rows = [r for r in json.loads(listing.stdout.strip().splitlines()[-1]).get("runs", []) if r["run_dir"] == str(out.resolve())]
        after = RunDir(out).read() if began else {}
        if not began:
            honest = not rows
        elif record is not None and record.status == "completed":
            honest = bool(rows) and rows[0]["status"] == "completed"
            result["note"] = "the run had ended before the kill landed"
        else:
            honest = (
                bool(rows) and rows[0]["status"] == "failed" and after.get("status") == "failed"
                and str(after.get("error", "")).startswith("interrupted:") and f"--resume {out.resolve()}" in after.get("error", "")
            )  # fmt: skip
        result["index_honest"] = honest
        result["index_status"] = rows[0]["status"] if rows else None
        if not began:
            resumed = subprocess.run(self.command(out), capture_output=True, text=True, env=self.env, timeout=600)
        elif record is not None and record.status == "completed":
            resumed = None
        else:
            resumed = self.cli("train", "--resume", str(out), "--json")
        if resumed is None:
            result["resume_completes"] = True
        else:
            lines = resumed.stdout.strip().splitlines()
            data = json.loads(lines[-1]) if lines else {}
            result["resume_completes"] = resumed.returncode == 0 and data.get("status") == "completed"
            if not result["resume_completes"]:
                result["resume_error"] = data.get("error") or resumed.stderr[-500:]
            result["resumed_from"] = _resumed_from(out)
        result["bit_identical"] = result["resume_completes"] and _same_weights(out, reference)
        result["no_temporaries"] = not [p for p in out.rglob(".*.tmp")] and not (out / ".trainlab-reserved-space").exists()
        return result


def _where_it_landed(out: Path) -> str:
    """Where the kill came, from what the run folder says (the planned phase is only aimed at)."""
    try:
        status = json.loads((out / "run.json").read_text()).get("status")
    except (OSError, ValueError):
        return "before the run began"
    if status == "completed":
        return "after the run's end"
    last = {}
    try:
        for line in (out / "metrics.jsonl").read_text().splitlines():
            with_event = json.loads(line) if line.strip().startswith("{") else {}
            if with_event.get("event") in ("train", "progress", "log", "eval", "started"):
                last = with_event
    except (OSError, ValueError):
        pass
    kind, step = last.get("event"), last.get("step")
    if kind == "progress" and last.get("phase") == "save":
        return "during the export"
    if kind == "progress" and last.get("phase") == "eval":
        return "during the final evaluation"
    if kind == "log" and str(last.get("message", "")).startswith("saving checkpoint"):
        return f"while saving the checkpoint of step {step}"
    if kind == "train" and step and step % STEPS_PER_EPOCH == 0:
        return f"in the evaluation after step {step}"
    if kind == "train":
        return f"in training, after step {step}"
    if kind == "eval":
        return f"after the evaluation at step {step}"
    return "before the first step"


def _resumed_from(out: Path) -> str:
    from trainlab.api.events import Log, Started
    from trainlab.runfolder.tail import read_events

    events = list(read_events(out / "metrics.jsonl"))
    started = [e for e in events if isinstance(e, Started)]
    if len(started) < 2:
        return "a new run"
    if any(isinstance(e, Log) and "restarting it from step 0" in e.message for e in events):
        return "step 0"
    return f"checkpoint of step {started[-1].step}"


def _same_weights(out: Path, reference: Path) -> bool:
    """The exported model and both checkpoints' weights, bit for bit (not the RNG and optimizer tensors' names)."""
    import torch
    from safetensors.torch import load_file

    for name in ("model/model.safetensors", "checkpoints/last.safetensors", "checkpoints/best.safetensors"):
        a, b = load_file(str(out / name)), load_file(str(reference / name))
        keys = list(b) if name.startswith("model/") else [k for k in b if k.startswith(("model.", "optim."))]
        if any(k not in a or not torch.equal(a[k], b[k]) for k in keys):
            return False
    return True


def main() -> int:
    parser = bench_parser(__doc__, "2 kills, in the first two phases")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.quick:
        args.kills = 2
    rng = random.Random(args.seed)
    say = speaker(args)
    with tempfile.TemporaryDirectory(prefix="trainlab-crash-") as tmp:
        work = Path(tmp)
        os.environ["TRAINLAB_HOME"] = str(work / "home")  # this process's checks read the same home
        battery = Battery(work)
        began = time.perf_counter()
        reference, folder_at = battery.reference()
        say(f"reference run: {time.perf_counter() - began:.1f} s, run folder after {folder_at:.2f} s")
        moments = []
        for n in range(args.kills):
            phase = PHASES[n % len(PHASES)]
            out = work / f"kill-{n:02d}"
            moment = battery.kill_at(out, phase, rng, folder_at)
            moment.update(battery.check(out, reference))
            moments.append(moment)
            marks = " ".join(f"{c}={'ok' if moment[c] else 'FAIL'}" for c in COLUMNS)
            at = f"at {moment['killed_at_s']:5.2f} s, {moment['landed']}" if moment["killed"] else "ended before the kill"
            say(f"{n + 1:2d} {phase:<10} {at:<48} tmp files: {len(moment.get('temporaries_at_kill', []))}  "
                f"resumed from {moment.get('resumed_from', '-'):<22} {marks}")  # fmt: skip
    summary = {
        "kills": args.kills,
        "seed": args.seed,
        "columns": {c: sum(1 for m in moments if m[c]) for c in COLUMNS},
        "killed_before_the_end": sum(1 for m in moments if m["killed"]),
        "killed_during_a_file_write": sum(1 for m in moments if m.get("temporaries_at_kill")),
        "landed": sorted({m.get("landed", "ended before the kill") for m in moments}),
        "phases": {p: sum(1 for m in moments if m["phase"] == p) for p in PHASES},
        "goal": f"{args.kills}/{args.kills} in every column",
        "moments": moments,
    }
    say("; ".join(f"{c} {v}/{args.kills}" for c, v in summary["columns"].items()))
    emit("crash_battery", args, summary)
    return 0 if all(v == args.kills for v in summary["columns"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Data-parallel scaling on the CPU: two ranks with one thread each against one process with one thread.

The same toy classification (tests/fixtures/plugins, an MLP with a wide
hidden layer so that a step is mostly arithmetic), the same rows, the same
global batch and so the same optimizer steps, through the real command:

  (a) ``trainlab train ... --batch-size 2B`` with ``OMP_NUM_THREADS=1``;
  (b) ``trainlab train ... --batch-size B --nproc-per-node 2 --device cpu``
      (torchrun, gloo, one thread per rank).

in alternating pairs (which goes first alternates too).  ``ratio`` is the
median over pairs of (b)'s samples/s over (a)'s, each the run's own figure
(training samples over the time spent in training passes, the all-reduce
and the ranks' per-step agreement included; start-up and evaluation not).
``samples_per_cpu_second`` is the training samples over the CPU seconds of
the whole command and its children (start-up, torch imports and evaluation
included, so it understates both; the ratio of the two says what the second
process costs).

    python bench/ddp_scaling.py [--pairs 3] [--rows 12000] [--hidden 1536] [--json]

Goal on the two shared cores of the development machine: ratio >= 1.6.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "plugins"
GOAL = 1.6


def write_rows(path: Path, rows: int, features: int, classes: int = 3) -> Path:
    rng = random.Random(0)
    centres = [[rng.uniform(-2, 2) for _ in range(features)] for _ in range(classes)]
    lines = [",".join([f"x{i}" for i in range(features)] + ["label"])]
    for r in range(rows):
        c = r % classes
        lines.append(",".join(f"{centres[c][i] + rng.gauss(0, 1.0):.3f}" for i in range(features)) + f",c{c}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_once(kind: str, data: Path, out: Path, args, home: Path) -> dict:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", TRAINLAB_HOME=str(home), PYTHONPATH=os.pathsep.join(filter(None, [str(FIXTURES), env.get("PYTHONPATH", "")])))
    batch = args.batch * 2 if kind == "one" else args.batch
    cmd = [sys.executable, "-m", "trainlab", "train", "toy-classification", "--data", str(data), "--device", "cpu",
           "--epochs", str(args.epochs), "--batch-size", str(batch), "--set", f"hidden={args.hidden}", "--set", "val_fraction=0.05",
           "--set", "telemetry_every=0", "--set", "keep_checkpoints=none", "--out", str(out), "--json"]  # fmt: skip
    if kind == "two":
        cmd += ["--nproc-per-node", "2"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"ddp_scaling: the {kind} run failed:\n{proc.stderr[-2000:]}")
    outcome = json.loads(proc.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    samples = (args.rows - int(args.rows * 0.05)) * args.epochs  # the toy task's split: val_fraction 0.05
    return {"samples_per_second": outcome["samples_per_second"], "cpu_seconds": cpu, "samples": samples, "steps": outcome["steps"],
            "loss": outcome["metrics"].get("loss"), "samples_per_cpu_second": samples / cpu if cpu else 0.0}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--rows", type=int, default=12000)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=1536)
    parser.add_argument("--batch", type=int, default=64, help="per rank (the one process takes twice as many)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rounds = []
    with tempfile.TemporaryDirectory(prefix="ddp-scaling-") as scratch:
        root = Path(scratch)
        data = write_rows(root / "rows.csv", args.rows, args.features)
        for pair in range(args.pairs):
            order = ("one", "two") if pair % 2 == 0 else ("two", "one")
            got = {kind: run_once(kind, data, root / f"{kind}-{pair}", args, root / "home") for kind in order}
            ratio = got["two"]["samples_per_second"] / got["one"]["samples_per_second"]
            rounds.append({"order": list(order), **{k: v for k, v in got.items()}, "ratio": ratio})
            print(f"pair {pair + 1}: one rank {got['one']['samples_per_second']:.0f} samples/s, two ranks {got['two']['samples_per_second']:.0f} "
                  f"samples/s: x{ratio:.2f}  (per CPU-second {got['one']['samples_per_cpu_second']:.0f} vs {got['two']['samples_per_cpu_second']:.0f})",
                  file=sys.stderr)  # fmt: skip
    ratios = [r["ratio"] for r in rounds]
    result = {
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "goal": GOAL,
        "met": statistics.median(ratios) >= GOAL,
        "one_rank_samples_per_second": statistics.median(r["one"]["samples_per_second"] for r in rounds),
        "two_ranks_samples_per_second": statistics.median(r["two"]["samples_per_second"] for r in rounds),
        "one_rank_samples_per_cpu_second": statistics.median(r["one"]["samples_per_cpu_second"] for r in rounds),
        "two_ranks_samples_per_cpu_second": statistics.median(r["two"]["samples_per_cpu_second"] for r in rounds),
        "loss_one_vs_two": [(r["one"]["loss"], r["two"]["loss"]) for r in rounds],
        "cores": os.cpu_count(),
        "load_average": os.getloadavg(),
        "settings": vars(args),
        "rounds": rounds,
    }
    print(f"two ranks over one: x{result['ratio']:.2f} (goal >= {GOAL}); load average {result['load_average'][0]:.1f} on {os.cpu_count()} cores",
          file=sys.stderr)  # fmt: skip
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

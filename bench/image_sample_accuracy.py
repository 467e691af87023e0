"""A default image-classification run on the bundled sample: accuracy and time.

Runs exactly what a user's quick start runs, as a subprocess:

    trainlab train image-classification --data <trainlab_resources>/samples/images/shapes --json

(extra ``--set key=value`` arguments are passed through, for tuning) and
reports the validation accuracy and the wall time of the whole command
(start-up, data scan, training, evaluation, export).

    python bench/image_sample_accuracy.py [--runs 1] [--set key=value ...] [--quick] [--json]

Goal on the CPU of the development machine: accuracy >= 0.90 in < 120 s.
The last line is a JSON object.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pairs import bench_parser, emit, speaker
from trainlab_plugins.image import SAMPLE_DATA
from trainlab_resources import resource_path

GOAL_ACCURACY, GOAL_SECONDS = 0.90, 120.0


def one_run(extra: list[str], home: Path) -> dict:
    sample = resource_path(SAMPLE_DATA)
    command = [sys.executable, "-m", "trainlab", "train", "image-classification", "--data", str(sample), "--json"]
    for item in extra:
        command += ["--set", item]
    env = dict(os.environ, TRAINLAB_HOME=str(home))
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"the run failed ({done.returncode}): {done.stdout}\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    run = json.loads((Path(result["run_dir"]) / "run.json").read_text())
    return {
        "accuracy": result["metrics"]["accuracy"],
        "macro_f1": result["metrics"]["macro_f1"],
        "seconds": round(seconds, 1),
        "train_seconds": round(run["timings"].get("train_seconds", 0.0), 1),
        "samples_per_second": round(result["samples_per_second"], 1),
        "epochs": result["epochs"],
        "load_average_1min_before": round(load, 2),
        "parameters": {k: run["parameters"][k] for k in ("model", "epochs", "batch_size", "lr", "image_size", "augmentation")},
        "augmentation": run["data_summary"]["extra"].get("augmentation"),
    }


def main() -> int:
    parser = bench_parser(__doc__, "one run of one epoch")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.sets = 1, [*args.sets, "epochs=1"]
    say = speaker(args)
    runs = []
    with tempfile.TemporaryDirectory() as home:
        for i in range(args.runs):
            run = one_run(args.sets, Path(home))
            runs.append(run)
            say(f"run {i + 1}: accuracy {run['accuracy']:.4f} in {run['seconds']:.1f} s "
                f"(training {run['train_seconds']:.1f} s, {run['samples_per_second']:.0f} samples/s; "
                f"{run['augmentation']})")  # fmt: skip
    accuracy = min(r["accuracy"] for r in runs)
    seconds = max(r["seconds"] for r in runs)
    summary = {
        "benchmark": "image_sample_accuracy",
        "accuracy_min": accuracy,
        "accuracy_median": statistics.median(r["accuracy"] for r in runs),
        "seconds_max": seconds,
        "goal": {"accuracy": GOAL_ACCURACY, "seconds": GOAL_SECONDS},
        "passed": accuracy >= GOAL_ACCURACY and seconds < GOAL_SECONDS,
        "cpu_count": os.cpu_count(),
        # other work on the machine slows every figure down; read them with this
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "runs": runs,
    }
    return emit("image_sample_accuracy", args, summary)


if __name__ == "__main__":
    raise SystemExit(main())

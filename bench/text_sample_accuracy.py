"""Does tiny-bert learn the bundled text sample on a CPU, in under two minutes?

Trains the ``text-classification`` task with its defaults (the ``tiny-bert``
preset) on ``resources/trainlab_resources/samples/text`` through the real engine, on the CPU,
and compares validation and test accuracy with chance (the share of the most
common label).  Goal: accuracy clearly above chance (at least twice it) in
under 120 s of wall time.

    .venv/bin/python bench/text_sample_accuracy.py [--epochs N] [--seed N] [--quick] [--json]

The last line is a JSON object with the figures.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from pairs import bench_parser, emit, speaker

GOAL_SECONDS = 120.0
GOAL_OVER_CHANCE = 2.0
QUICK_SHARE = 5  # --quick: every split's first fifth


def first_rows(sample: Path, folder: Path, share: int) -> Path:
    """A copy of the sample with the first 1/``share`` of each split's rows."""
    folder.mkdir(parents=True)
    for split in sorted(Path(sample).glob("*.csv")):
        header, *rows = split.read_text(encoding="utf-8").splitlines()
        (folder / split.name).write_text("\n".join([header, *rows[: max(1, len(rows) // share)]]) + "\n", encoding="utf-8")
    return folder


def main() -> int:
    parser = bench_parser(__doc__, "one epoch on the first fifth of each split")
    parser.add_argument("--epochs", type=int, default=None, help="override the preset's epochs")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    if args.quick:
        args.epochs = 1
    say = speaker(args)

    home = tempfile.mkdtemp(prefix="trainlab-bench-")
    os.environ["TRAINLAB_HOME"] = home  # keep the bench run out of the user's history

    from trainlab.engine.scripting import RunRequest, run_training
    from trainlab_resources import resource_path

    sample = resource_path("samples", "text")
    if args.quick:
        sample = first_rows(sample, Path(home) / "sample", QUICK_SHARE)
    params = {"device": "cpu", "seed": str(args.seed)}
    if args.epochs:
        params["epochs"] = str(args.epochs)
    started = time.perf_counter()
    result = run_training(RunRequest(task="text-classification", data=str(sample), params=params, out=str(Path(home) / "run")))
    seconds = time.perf_counter() - started
    if not result.ok:
        print(f"run {result.status}: {result.error}", file=sys.stderr)
        return 1
    record = json.loads((Path(result.run_dir) / "run.json").read_text(encoding="utf-8"))
    val_counts = Counter(record["data_summary"]["counts"]["val"])
    chance = max(val_counts.values()) / sum(val_counts.values())
    accuracy = float(result.metrics["accuracy"])
    test_accuracy = float(result.metrics.get("test", {}).get("accuracy", float("nan")))
    figures = {
        "bench": "text_sample_accuracy",
        "model": record["parameters"]["model"],
        "epochs": result.epochs,
        "lr": record["parameters"]["lr"],
        "val_accuracy": round(accuracy, 4),
        "val_macro_f1": round(float(result.metrics["macro_f1"]), 4),
        "test_accuracy": round(test_accuracy, 4),
        "chance": round(chance, 4),
        "seconds": round(seconds, 1),
        "train_samples_per_second": round(result.samples_per_second, 1),
        "goal_met": accuracy >= GOAL_OVER_CHANCE * chance and seconds < GOAL_SECONDS,
    }
    say(
        f"tiny-bert on the text sample: val accuracy {accuracy:.3f} (test {test_accuracy:.3f}, chance {chance:.3f}) "
        f"after {result.epochs} epochs in {seconds:.0f} s"
    )
    return emit("text_sample_accuracy", args, figures)


if __name__ == "__main__":
    sys.exit(main())

"""Cost as the data grows: time to the first step, preparation, peak RSS and steady samples/s.

Generated data at each size:

* text: CSV files of 10k, 100k and 1M rows (2 to 40 random words of the
  tiny-bert vocabulary each, 4 labels, the label's stem in the text), trained
  with ``text-classification`` (tiny-bert, batch 32);
* images: folders of 1k, 10k and 100k 32 px images in 4 class folders, hard
  links to 64 generated files (no disk space), trained with
  ``image-classification`` (its defaults, batch 32).

Each measurement is a fresh child process (a cold ``python``, as a command
is), in a TrainLab home of its own per size, so the text task's token cache
is empty on the first run and filled on the second: text sizes run twice
(``first`` / ``second``), and ``second_prepare_share`` is the second run's
preparation over the first's (goal at 1M rows: <= 0.10). The child prepares
the task (``prepare_task``, after importing torch and transformers, so the
figure is the task's own work), plans and starts the run, and stops it after
``--warm`` + ``--steps`` optimizer steps; samples/s is over the last
``--steps``. The parent reads the child's peak RSS and CPU time from
``os.wait4``. Growth exponents are least-squares slopes of log(figure)
against log(size): 1 is linear, below 1 better than linear.

On a shared machine the wall times move with the load; CPU time (user +
system, every thread of the child) is printed beside them, and the load
average is recorded.

    python bench/scale.py [--sizes text=10000,100000,1000000 --sizes image=1000,10000,100000] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pairs import bench_parser, emit, speaker  # noqa: E402 - bench/ on the path first, when imported

DEFAULT_SIZES = {"text": [10_000, 100_000, 1_000_000], "image": [1_000, 10_000, 100_000]}
LABELS = ("alpha", "beta", "gamma", "delta")
BATCH = 32


# -- data ------------------------------------------------------------------------------
def make_text(path: Path, rows: int, seed: int = 0) -> Path:
    from trainlab_resources import resource_path

    vocab = resource_path("vocab", "tiny-bert", "vocab.txt").read_text(encoding="utf-8").split()
    words = [w for w in vocab if w.isalpha()]
    rng = random.Random(seed)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for _ in range(rows):
            label = LABELS[rng.randrange(len(LABELS))]
            writer.writerow([f"{label}ish " + " ".join(rng.choices(words, k=rng.randint(2, 40))), label])
    return path


def make_images(root: Path, files: int, seed: int = 0) -> Path:
    from PIL import Image, ImageDraw

    originals = root.parent / f"{root.name}-originals"
    originals.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    sources: list[tuple[str, Path]] = []
    for i in range(64):
        label = LABELS[i % len(LABELS)]
        image = Image.new("RGB", (32, 32), tuple(rng.randrange(256) for _ in range(3)))
        draw = ImageDraw.Draw(image)
        box = [rng.randrange(4, 10), rng.randrange(4, 10), rng.randrange(22, 28), rng.randrange(22, 28)]
        shape = (draw.ellipse, draw.rectangle, draw.line, draw.polygon)[LABELS.index(label)]
        if shape is draw.polygon:
            shape([(box[0], box[3]), ((box[0] + box[2]) // 2, box[1]), (box[2], box[3])], fill=(255, 255, 255))
        elif shape is draw.line:
            shape(box, fill=(255, 255, 255), width=4)
        else:
            shape(box, fill=(255, 255, 255))
        path = originals / f"{label}_{i:02d}.png"
        image.save(path)
        sources.append((label, path))
    for label in LABELS:
        (root / label).mkdir(parents=True, exist_ok=True)
    for i in range(files):
        label, source = sources[i % len(sources)]
        os.link(source, root / label / f"img_{i:07d}.png")
    return root


# -- one measured run (the child) ------------------------------------------------------
def child(args: argparse.Namespace) -> int:
    spawned = args.spawned
    import torch  # noqa: F401 - imported before the clock: the figure is the task's preparation
    import transformers  # noqa: F401

    from trainlab.api.callbacks import Callback, RunControl
    from trainlab.engine.execute import execute
    from trainlab.engine.plan import RunRequest, plan_run
    from trainlab.engine.prepare import prepare_task

    imported = time.time()
    task = "text-classification" if args.kind == "text" else "image-classification"
    params = {"device": "cpu", "epochs": "1", "batch_size": str(BATCH), "telemetry_every": "0", "checkpoint_every_minutes": "0"}
    wall, cpu = time.perf_counter(), time.process_time()
    prepared = prepare_task(task, args.data, params)
    prepare_wall, prepare_cpu = time.perf_counter() - wall, time.process_time() - cpu
    control = RunControl()
    marks: list[tuple[float, int]] = []

    class Probe(Callback):
        def on_step_end(self, state):
            marks.append((time.perf_counter(), state.samples_seen))
            if state.step >= args.warm + args.steps:
                control.request_stop("bench: enough steps")

    plan = plan_run(RunRequest(task=task, data=args.data, params=params, out=args.out), prepared=prepared)
    start = len(marks)
    execute(plan, callbacks=[Probe()], control=control)
    first_step = marks[start][0] - time.perf_counter() + time.time() - spawned if marks else None
    steady = None
    if len(marks) > args.warm:
        (t0, s0), (t1, s1) = marks[args.warm - 1], marks[-1]
        steady = (s1 - s0) / (t1 - t0) if t1 > t0 else None
    print(json.dumps({
        "import_seconds": round(imported - spawned, 3),
        "prepare_seconds": round(prepare_wall, 3),
        "prepare_cpu_seconds": round(prepare_cpu, 3),
        "first_step_seconds": round(first_step, 3) if first_step is not None else None,
        "samples_per_second": round(steady, 1) if steady else None,
        "steps": len(marks),
        "token_cache": prepared.summary.extra.get("token_cache"),
    }))  # fmt: skip
    return 0


def measure(kind: str, data: Path, home: Path, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "TRAINLAB_HOME": str(home), "OMP_NUM_THREADS": str(args.threads)}
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, __file__, "--child", kind, "--data", str(data), "--out", str(out),
               "--warm", str(args.warm), "--steps", str(args.steps), "--spawned", repr(time.time())]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    output = process.stdout.read() if process.stdout else ""
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench/scale.py: the {kind} run on {data} failed (exit {os.waitstatus_to_exitcode(status)})")
    result = json.loads(output.strip().splitlines()[-1])
    result["peak_rss_mb"] = round(usage.ru_maxrss / 1024, 1)  # Linux: kB
    result["cpu_seconds"] = round(usage.ru_utime + usage.ru_stime, 2)
    return result


def exponent(sizes: list[int], values: list[float | None]) -> float | None:
    """Least-squares slope of log(value) on log(size)."""
    points = [(math.log(s), math.log(v)) for s, v in zip(sizes, values) if v]
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    var = sum((x - mx) ** 2 for x, _ in points)
    return round(sum((x - mx) * (y - my) for x, y in points) / var, 3) if var else None


def parse_sizes(values: list[str]) -> dict[str, list[int]]:
    sizes = {kind: list(default) for kind, default in DEFAULT_SIZES.items()}
    chosen: dict[str, list[int]] = {}
    for value in values:
        kind, _, numbers = value.partition("=")
        if kind not in sizes or not numbers:
            raise SystemExit(f"bench/scale.py: --sizes {value!r}: give text=N,N,... or image=N,N,...")
        chosen[kind] = [int(n.replace("_", "")) for n in numbers.split(",") if n]
    return chosen or sizes


def main() -> int:
    parser = bench_parser(__doc__, "text=1000 and image=200, 1 + 3 steps")
    parser.add_argument("--sizes", action="append", default=[], metavar="KIND=N,N", help="text=... and/or image=... (only the kinds given run)")
    parser.add_argument("--warm", type=int, default=3, help="steps before samples/s is measured")
    parser.add_argument("--steps", type=int, default=15, help="steps samples/s is measured over")
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of each run")
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it (default: a temporary folder)")
    parser.add_argument("--child", choices=["text", "image"], help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--spawned", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.kind = args.child
        return child(args)

    say = speaker(args)
    if args.quick:
        args.sizes, args.warm, args.steps = ["text=1000", "image=200"], 1, 3
    sizes = parse_sizes(args.sizes)
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="trainlab-scale-"))
    report: dict[str, Any] = {"benchmark": "scale", "cpu_count": os.cpu_count(), "threads": args.threads,
                              "load_average_at_start": round(os.getloadavg()[0], 2)}  # fmt: skip
    try:
        for kind, counts in sizes.items():
            rows = []
            for count in counts:
                where = base / f"{kind}-{count}"
                where.mkdir(parents=True, exist_ok=True)
                made = time.perf_counter()
                data = make_text(where / "data.csv", count) if kind == "text" else make_images(where / "data", count)
                say(f"{kind} {count}: data generated in {time.perf_counter() - made:.1f} s")
                home = where / "home"
                shutil.rmtree(home, ignore_errors=True)
                row: dict[str, Any] = {"size": count, "first": measure(kind, data, home, where / "run", args)}
                if kind == "text":  # the same data again: the token cache's hit
                    row["second"] = measure(kind, data, home, where / "run", args)
                    first, second = row["first"], row["second"]
                    row["second_prepare_share"] = round(second["prepare_seconds"] / first["prepare_seconds"], 3)
                    row["second_prepare_cpu_share"] = round(second["prepare_cpu_seconds"] / max(first["prepare_cpu_seconds"], 1e-9), 3)
                for name in ("first", "second"):
                    if name in row:
                        r = row[name]
                        say(f"  {kind} {count:>8} {name:<6} first step {r['first_step_seconds']:7.1f} s  prepare {r['prepare_seconds']:7.2f} s "
                            f"(CPU {r['prepare_cpu_seconds']:6.2f} s)  peak RSS {r['peak_rss_mb']:7.1f} MB  "
                            f"{r['samples_per_second'] or 0:7.1f} samples/s  process CPU {r['cpu_seconds']:6.1f} s  cache {r['token_cache']}")
                if "second_prepare_share" in row:
                    say(f"  second run's preparation: {row['second_prepare_share']:.1%} of the first's wall time, "
                        f"{row['second_prepare_cpu_share']:.1%} of its CPU time")
                rows.append(row)
                if not args.keep:
                    shutil.rmtree(where, ignore_errors=True)
            figures = ("first_step_seconds", "prepare_seconds", "prepare_cpu_seconds", "peak_rss_mb", "cpu_seconds")
            counted = [row["size"] for row in rows]
            growth = {name: exponent(counted, [row["first"][name] for row in rows]) for name in figures}
            say(f"{kind} growth exponents (1 = linear): " + ", ".join(f"{k} {v}" for k, v in growth.items()))
            report[kind] = {"rows": rows, "growth_exponents": growth}
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    report["load_average_at_end"] = round(os.getloadavg()[0], 2)
    emit("scale", args, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

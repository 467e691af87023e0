"""One bench, two versions of TrainLab, side by side in one run.

"No regression" is a claim about two trees measured under the same load, not
two numbers read hours apart on a shared machine. This driver lays out an
older revision in a temporary folder, as the installed packages would be
(its four source folders on the path; a revision from before each folder
held a package of its own gets ``core/`` as ``trainlab``, ``desktop/`` as
``trainlab/desktop`` and so on, its ``package-dir``), then runs the same
bench script of *this* checkout alternately against that tree (through
``PYTHONPATH``, which comes before the editable install) and against this
checkout, ABBA, ``--rounds`` times. The workload is the same on both sides;
only the package under it changes. Each run's last stdout line is the bench's
JSON; the driver prints the chosen figures of every round and their medians.

    python bench/before_after.py --base 84e4bd4 engine_overhead -- --pairs 5
    python bench/before_after.py --base 84e4bd4 gui_latency -- --seconds 8 --starts 9
    python bench/before_after.py --base 0eef647 startup -- --starts 9
    python bench/before_after.py --quick --base HEAD~1 startup    # one round of the bench's --quick

The bench must run on both trees: it may use only what both provide (the
benches here say so where they reach for an older name).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pairs import bench_parser, emit, load_average, run_pairs, speaker

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
# Where the folders of the layout before each held a package of its own went (package-dir).
LAYOUT = {"core": "trainlab", "desktop": "trainlab/desktop", "plugins": "trainlab/plugins", "resources": "trainlab/resources"}
FIXTURES = "tests/fixtures/plugins"  # the toy plugin gui_latency trains: it speaks its own tree's plugin API
# The figures each bench's goal reads, reported before and after side by side.
FIGURES = {
    "engine_overhead": ["ratio", "ratio_cpu", "ratio_end_to_end", "ratio_end_to_end_cpu", "max_abs_loss_diff",
                        "engine_samples_per_second", "raw_samples_per_second"],
    "ddp_scaling": ["ratio", "two_ranks_samples_per_second", "one_rank_samples_per_second"],
    "task_families": [f"families.{name}.{figure}" for name in ("regression", "multilabel", "image-regression", "image-multilabel",
                      "text-regression", "text-multilabel") for figure in ("ratio.median", "samples_per_second_trainlab.median")],
    "startup": ["help_s", "window_painted_s", "window_ready_s"],
    "gui_latency": ["stall_p99_ms", "stall_max_ms", "start_stall_max_ms", "window_vs_bare", "plot_refresh_ms_100k",
                    "idle_stall_p99_ms"],
}

# per-pair ratio lists to pool across rounds: (key in the bench's JSON, holding "ratios")
POOLED = {"engine_overhead": ["ratio_spread", "ratio_cpu_spread", "ratio_end_to_end_spread"]}


def figure(result: dict, key: str):
    """``result[key]``, a dotted key reaching into nested objects (``families.regression.ratio.median``)."""
    for part in key.split("."):
        if not isinstance(result, dict):
            return None
        result = result.get(part)
    return result


def lay_out(revision: str, into: Path) -> str:
    """The packages of ``revision`` as installed, under ``into``; returns the PYTHONPATH that finds them."""
    sha = subprocess.run(["git", "rev-parse", "--verify", f"{revision}^{{commit}}"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.strip()
    source = into / "source"
    source.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", sha, *LAYOUT, FIXTURES], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    shutil.copytree(source / FIXTURES, into / "fixture-plugins")
    if (source / "core" / "trainlab" / "__init__.py").is_file():
        # each folder holds an ordinary package: the four folders go on the path as they are
        return os.pathsep.join(str(source / folder) for folder in LAYOUT)
    site = into / "site"
    for folder, package in LAYOUT.items():
        shutil.copytree(source / folder, site / package, dirs_exist_ok=True)
    return site


def which_trainlab(env: dict) -> str:
    return subprocess.run([sys.executable, "-c", "import trainlab; print(trainlab.__file__)"], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def run_bench(script: Path, args: list[str], env: dict) -> dict:
    proc = subprocess.run([sys.executable, str(script), "--json", *args], env=env, capture_output=True, text=True)
    lines = proc.stdout.strip().splitlines()
    try:
        figures = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        figures = None
    if figures is None:
        raise RuntimeError(f"{script.name} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    if proc.returncode != 0:
        # Older trees may crash at exit after printing their figures (the window's
        # teardown segfault fixed in this round): keep the figures, say so.
        figures["exit_code"] = proc.returncode
        print(f"  note: {script.name} exited {proc.returncode} after printing its figures", file=sys.stderr)
    return figures


def _fmt(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def main() -> int:
    parser = bench_parser(__doc__, "one round, the bench itself --quick")
    parser.add_argument("--base", required=True, help="the older revision (a commit, tag or branch)")
    parser.add_argument("--after", default="",
                        help="the newer revision, laid out like --base (default: this working tree, uncommitted edits included)")
    parser.add_argument("--rounds", type=int, default=3, help="pairs of runs (one per tree each)")
    parser.add_argument("bench", choices=sorted(FIGURES), help="the bench script under bench/")
    parser.add_argument("bench_args", nargs="*", help="after --: passed to the bench")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.bench_args = 1, ["--quick", *args.bench_args]
    say = speaker(args)
    script = BENCH / f"{args.bench}.py"
    with tempfile.TemporaryDirectory(prefix="trainlab-before-after-") as tmp:
        clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

        def laid_out(rev: str, name: str) -> dict:
            root = Path(tmp) / name
            root.mkdir()
            site = lay_out(rev, root)
            return {**clean, "PYTHONPATH": str(site), "TRAINLAB_BENCH_FIXTURE_PLUGINS": str(root / "fixture-plugins")}

        # With --after both sides come from commits: on a checkout where others
        # have uncommitted work, that work is in neither tree.
        trees = {"before": laid_out(args.base, "before"), "after": laid_out(args.after, "after") if args.after else clean}
        where = {name: which_trainlab(env) for name, env in trees.items()}
        if not where["before"].startswith(str(Path(tmp) / "before")) or where["after"] == where["before"]:
            raise SystemExit(f"the two runs would not import different trees: {where}")

        def said(index: int, name: str, result: dict) -> None:
            figures = {k: figure(result, k) for k in FIGURES[args.bench] if figure(result, k) is not None}
            say(f"round {index + 1} {name:6}: {figures}")

        results = run_pairs({name: (lambda env=env: run_bench(script, args.bench_args, env)) for name, env in trees.items()},
                            args.rounds, after=said)
    summary = {"bench": args.bench, "bench_args": args.bench_args, "base": args.base, "after": args.after or "working tree", "rounds": args.rounds,
               "load_average": load_average(), "trees": where}
    for key in FIGURES[args.bench]:
        row = {}
        for name in ("before", "after"):
            values = [figure(r, key) for r in results[name] if isinstance(figure(r, key), (int, float))]
            row[name] = {"median": statistics.median(values) if values else None, "values": values}
        summary[key] = row
    # every pair of every round in one median (engine_overhead's per-pair ratios): with
    # 5 pairs a round, the median of 20 pairs moves far less than one round's
    for key in POOLED.get(args.bench, ()):
        summary[f"pooled_{key}"] = {
            name: statistics.median(v for r in results[name] for v in r[key]["ratios"]) for name in ("before", "after")
        }
    say(f"{'figure':24} {'before (median)':>16} {'after (median)':>16}   rounds: {args.rounds}, base {args.base}")
    for key in FIGURES[args.bench]:
        before, after = summary[key]["before"]["median"], summary[key]["after"]["median"]
        if before is not None or after is not None:
            say(f"{key:24} {_fmt(before):>16} {_fmt(after):>16}")
    for key in POOLED.get(args.bench, ()):
        pooled = summary[f"pooled_{key}"]
        say(f"{'pooled ' + key:24} {_fmt(pooled['before']):>16} {_fmt(pooled['after']):>16}   (median of every pair)")
    return emit("before_after", args, summary)


if __name__ == "__main__":
    sys.exit(main())

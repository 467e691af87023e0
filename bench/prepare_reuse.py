"""Time saved at Start when a run takes over the data check's preparation.

On the bundled text sample (resources/trainlab_resources/samples/text: 600/160/160 rows), in
alternating pairs:

  (a) ``plan_run(request)``: the run prepares the data itself (reads every
      split, loads the tokenizer, tokenises), what happened after the
      window's data check before the engine could take the check over;
  (b) ``plan_run(request, prepared=p)`` with ``p = prepare_task(...)`` made
      beforehand (the data check; not timed).

Both plans are complete (steps counted, record built); neither writes
anything.  ``saved_seconds`` is the median over pairs of (a) - (b).

    python bench/prepare_reuse.py [--pairs 5] [--data DIR] [--quick] [--json]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

from pairs import Clock, bench_parser, emit, run_pairs, speaker, spread


def main() -> int:
    parser = bench_parser(__doc__, "2 pairs")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--data", help="text data (default: the bundled sample)")
    args = parser.parse_args()
    if args.quick:
        args.pairs = 2
    say = speaker(args)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("TRAINLAB_HOME", str(Path(tmp) / "home"))
        from trainlab.engine.plan import RunRequest, plan_run
        from trainlab.engine.prepare import prepare_task
        from trainlab_resources import resource_path

        data = args.data or str(resource_path("samples", "text"))
        params = {"device": "cpu", "epochs": "3"}
        request = RunRequest(task="text-classification", data=data, params=params, out=str(Path(tmp) / "run"))
        plan_run(request)  # warm-up: imports, the tokenizer's first load
        prepared: list = []

        def check(_pair: int) -> None:
            prepared[:] = [prepare_task("text-classification", data, params)]  # the data check, before Start

        def planned(reuse: bool):
            def run() -> Clock:
                with Clock() as clock:
                    plan = plan_run(request, prepared=prepared[0] if reuse else None)
                assert plan.reused_preparation == reuse
                return clock
            return run

        def said(pair: int, side: str, clock: Clock) -> None:
            what = "taking the check's preparation over" if side == "reused" else "preparing itself"
            say(f"pair {pair + 1}: plan_run {what}: {clock.wall * 1000:7.1f} ms")

        clocks = run_pairs({"fresh": planned(False), "reused": planned(True)}, args.pairs, before=check, after=said)
        fresh, reused = [c.wall for c in clocks["fresh"]], [c.wall for c in clocks["reused"]]
        fresh_cpu, reused_cpu = [c.cpu for c in clocks["fresh"]], [c.cpu for c in clocks["reused"]]
    saved = [a - b for a, b in zip(fresh, reused)]
    summary = {
        "saved_seconds": statistics.median(saved),
        "plan_preparing_seconds": statistics.median(fresh),
        "plan_reusing_seconds": statistics.median(reused),
        "saved_seconds_spread": spread(saved),
        "saved_cpu_seconds": statistics.median(a - b for a, b in zip(fresh_cpu, reused_cpu)),
        "plan_preparing_cpu_seconds": statistics.median(fresh_cpu),
        "plan_reusing_cpu_seconds": statistics.median(reused_cpu),
        "pairs": args.pairs,
        "data": data,
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }
    say(f"saved at Start: {summary['saved_seconds'] * 1000:.1f} ms (median of {args.pairs}); "
        f"plan_run {summary['plan_preparing_seconds'] * 1000:.1f} ms -> {summary['plan_reusing_seconds'] * 1000:.1f} ms")
    return emit("prepare_reuse", args, summary)


if __name__ == "__main__":
    sys.exit(main())

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

    python bench/prepare_reuse.py [--pairs 5] [--data DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pairs import spread


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--data", help="text data (default: the bundled sample)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("TRAINLAB_HOME", str(Path(tmp) / "home"))
        from trainlab.engine.plan import RunRequest, plan_run
        from trainlab.engine.prepare import prepare_task
        from trainlab_resources import resource_path

        data = args.data or str(resource_path("samples", "text"))
        params = {"device": "cpu", "epochs": "3"}
        request = RunRequest(task="text-classification", data=data, params=params, out=str(Path(tmp) / "run"))
        plan_run(request)  # warm-up: imports, the tokenizer's first load
        fresh, reused, fresh_cpu, reused_cpu = [], [], [], []
        for pair in range(args.pairs):
            prepared = prepare_task("text-classification", data, params)  # the data check, before Start
            order = ["fresh", "reused"] if pair % 2 == 0 else ["reused", "fresh"]
            for kind in order:
                start, cpu_start = time.perf_counter(), time.process_time()
                plan = plan_run(request, prepared=prepared if kind == "reused" else None)
                seconds = time.perf_counter() - start
                (fresh_cpu if kind == "fresh" else reused_cpu).append(time.process_time() - cpu_start)
                assert plan.reused_preparation == (kind == "reused")
                (fresh if kind == "fresh" else reused).append(seconds)
            print(f"pair {pair + 1}: plan_run preparing itself {fresh[-1] * 1000:7.1f} ms, "
                  f"taking the check's preparation over {reused[-1] * 1000:7.1f} ms", file=sys.stderr)
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
    if not args.json:
        print(f"saved at Start: {summary['saved_seconds'] * 1000:.1f} ms (median of {args.pairs}); "
              f"plan_run {summary['plan_preparing_seconds'] * 1000:.1f} ms -> {summary['plan_reusing_seconds'] * 1000:.1f} ms")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

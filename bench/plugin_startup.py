"""What trying new plugins in a child process costs at start-up (trainlab.pluginhost.probe).

In fresh processes, alternating, with the toy fixture plugin installed:

* ``plugins_known_s`` / ``plugins_new_s``: ``trainlab plugins --json`` when
  TrainLab knows the plugin already (its verdict cached in the home) and
  when it is new (the cache file removed before each start, so the plugin
  is tried in a child process first); ``plugins_new_vs_known``: their ratio.
* ``window_ready_known_s`` / ``window_ready_new_s``: from process start until
  the main window has set itself up (plugins found, pages built: its
  ``ready`` signal), both ways; ``window_shown_*_s``: until it is shown,
  which comes before discovery and so should not move.

    python bench/plugin_startup.py [--pairs 7] [--quick] [--json]

``bench/gui_latency.py``'s ``window_vs_bare`` is the start-up goal
(<= 1.5); this script says how much of a first sight of a plugin a user
waits for, and that a known plugin costs nothing measurable.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pairs import bench_parser, emit, run_pairs, speaker, spread

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_PLUGINS = ROOT / "tests" / "fixtures" / "plugins"

WINDOW_SCRIPT = """
import os, sys, time
from trainlab_desktop import app
def shown(window):
    print("SHOWN", flush=True)
    window.ready.connect(lambda: (print("READY", flush=True), os._exit(0)))
app.after_show.append(shown)
app.run_app()
"""


def cache_file(home: Path) -> Path:
    return home / "cache" / "plugin-probes.json"


def time_plugins(env: dict) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "trainlab", "plugins", "--json"], capture_output=True, text=True, env=env, timeout=120)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0 or '"toy"' not in proc.stdout:
        raise RuntimeError(f"trainlab plugins failed: {proc.stderr[-2000:]}")
    return elapsed


def time_window(env: dict) -> tuple[float, float]:
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", WINDOW_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    shown = ready = None
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == "SHOWN":
            shown = time.perf_counter() - started
        elif line.strip() == "READY":
            ready = time.perf_counter() - started
            break
    proc.wait(60)
    if shown is None or ready is None:
        raise RuntimeError("the window never became ready")
    return shown, ready


def main() -> int:
    parser = bench_parser(__doc__, "2 pairs")
    parser.add_argument("--pairs", type=int, default=7)
    args = parser.parse_args()
    if args.quick:
        args.pairs = 2
    say = speaker(args)
    home = Path(tempfile.mkdtemp(prefix="trainlab-plugin-bench-"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as an installed app starts
    env.update(TRAINLAB_HOME=str(home), TRAINLAB_SHARED_CACHE=str(home / "cache"), QT_QPA_PLATFORM=env.get("QT_QPA_PLATFORM", "offscreen"))
    env["PYTHONPATH"] = os.pathsep.join([str(FIXTURE_PLUGINS), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)

    def forget() -> None:
        cache_file(home).unlink(missing_ok=True)

    time_plugins(env)  # warm the file cache; leaves the verdict cached
    time_window(env)

    def new(measure):
        def run():
            forget()
            result = measure(env)
            if not cache_file(home).is_file():
                raise RuntimeError("no verdict was cached: the probe did not run")
            return result
        return run

    plugins = run_pairs({"known": lambda: time_plugins(env), "new": new(time_plugins)}, args.pairs)
    windows = run_pairs({"known": lambda: time_window(env), "new": new(time_window)}, args.pairs)
    shown = {kind: [s for s, _ in runs] for kind, runs in windows.items()}
    ready = {kind: [r for _, r in runs] for kind, runs in windows.items()}
    med = statistics.median
    figures = {
        "plugins_known_s": round(med(plugins["known"]), 3),
        "plugins_new_s": round(med(plugins["new"]), 3),
        "plugins_new_vs_known": round(med(n / k for n, k in zip(plugins["new"], plugins["known"])), 3),
        "window_shown_known_s": round(med(shown["known"]), 3),
        "window_shown_new_s": round(med(shown["new"]), 3),
        "window_ready_known_s": round(med(ready["known"]), 3),
        "window_ready_new_s": round(med(ready["new"]), 3),
        "plugins_new_vs_known_spread": spread([n / k for n, k in zip(plugins["new"], plugins["known"])]),
        "pairs": args.pairs,
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }
    for key, value in figures.items():
        say(f"  {key:24s} {value}")
    return emit("plugin_startup", args, figures)


if __name__ == "__main__":
    sys.exit(main())

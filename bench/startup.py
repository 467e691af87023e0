"""How long TrainLab takes to answer: ``trainlab --help`` and the window's first paint.

In fresh processes, alternating the two measurements, median of ``--starts``:

* ``help_s``: ``python -m trainlab --help`` from process start to exit (the
  command line's import path: the root package and the CLI, no torch);
* ``window_painted_s``: from process start until the main window has painted
  once (its first ``Paint`` event, seen by a filter on the application from
  its creation: ``make_application`` is wrapped, which every layout has);
* ``window_ready_s``: until the window has set itself up (plugins found,
  pages built: its ``ready`` signal).

    python bench/startup.py [--starts 9] [--quick] [--json]
    python bench/before_after.py --base REV startup -- --starts 9

It runs against the package layout of either tree (the window as
``trainlab_desktop`` or, in older trees, ``trainlab_desktop``), so
before_after.py can compare two revisions in one run.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

from pairs import bench_parser, emit, load_average, run_pairs, speaker

WINDOW_SCRIPT = """
import os
import trainlab
if os.path.isdir(os.path.join(os.path.dirname(trainlab.__file__), "desktop")):
    from trainlab.desktop import app  # the layout before the window was a package of its own
else:
    from trainlab_desktop import app
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QMainWindow

class FirstPaint(QObject):
    # On the application, from its creation on: the main window's first paint
    # happens inside run_app, before any hook after show could watch for it.
    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint and isinstance(watched, QMainWindow):
            print("PAINTED", flush=True)
            watched.window().removeEventFilter(self)
            self.parent().removeEventFilter(self)
        return False

make_application = app.make_application

def make_watched_application(*args, **kwargs):
    made = make_application(*args, **kwargs)
    qt_app = made[0]
    qt_app.installEventFilter(FirstPaint(qt_app))
    return made

app.make_application = make_watched_application

def shown(window):
    window.ready.connect(lambda: (print("READY", flush=True), os._exit(0)))

app.after_show.append(shown)
app.run_app()
"""


def time_help(env: dict) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "trainlab", "--help"], capture_output=True, text=True, env=env, timeout=120)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0 or "usage" not in proc.stdout.lower():
        raise RuntimeError(f"trainlab --help failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed


def time_window(env: dict) -> tuple[float, float]:
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", WINDOW_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    painted = ready = None
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == "PAINTED" and painted is None:
            painted = time.perf_counter() - started
        elif line.strip() == "READY":
            ready = time.perf_counter() - started
            break
    proc.wait(60)
    if painted is None or ready is None:
        raise RuntimeError(f"the window never painted or never became ready: {proc.stderr.read()[-2000:]}")
    return painted, ready


def main() -> int:
    parser = bench_parser(__doc__, "2 starts of each")
    parser.add_argument("--starts", type=int, default=9, help="pairs of starts (one of each), alternating")
    args = parser.parse_args()
    if args.quick:
        args.starts = 2
    say = speaker(args)
    home = tempfile.mkdtemp(prefix="trainlab-startup-bench-")
    # An installed app starts from cached bytecode (pip compiles it): keep writing it.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(TRAINLAB_HOME=home, QT_QPA_PLATFORM=env.get("QT_QPA_PLATFORM", "offscreen"))
    time_help(env)  # warm the file and bytecode caches
    time_window(env)
    starts = run_pairs({"help": lambda: time_help(env), "window": lambda: time_window(env)}, args.starts)
    helps = starts["help"]
    painted, ready = [p for p, _ in starts["window"]], [r for _, r in starts["window"]]
    med = statistics.median
    figures = {
        "help_s": round(med(helps), 3),
        "help_range_s": [round(min(helps), 3), round(max(helps), 3)],
        "window_painted_s": round(med(painted), 3),
        "window_painted_range_s": [round(min(painted), 3), round(max(painted), 3)],
        "window_ready_s": round(med(ready), 3),
        "starts": args.starts,
        "load_average": load_average(),
    }
    for key, value in figures.items():
        say(f"  {key:24s} {value}")
    return emit("startup", args, figures)


if __name__ == "__main__":
    sys.exit(main())

"""Starting the app in a fresh process, as ``trainlab gui`` does.

The window must be on screen before torch or pyqtgraph is imported, carry
the desktop identity the launchers rely on, and run a pre-filled
``--autostart`` request to its end.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap

from helpers import FIXTURE_PLUGINS, subprocess_env

SCRIPT = textwrap.dedent(
    r"""
    import json, sys
    from PySide6.QtCore import QCoreApplication, QTimer
    from PySide6.QtGui import QGuiApplication
    from trainlab_desktop import app as appmod

    data = sys.argv[1] if len(sys.argv) > 1 else None

    def report(tag, **values):
        print(tag + " " + json.dumps(values), flush=True)

    def shown(window):
        report(
            "SHOWN",
            torch="torch" in sys.modules,
            pyqtgraph="pyqtgraph" in sys.modules,
            qt_namespace="Qt" in sys.modules["PySide6.QtCore"].__dict__,
            visible=window.isVisible(),
            app_name=QCoreApplication.applicationName(),
            instance=QCoreApplication.arguments()[0],
            desktop=QGuiApplication.desktopFileName(),
            title=window.windowTitle(),
        )

        # the event loop keeps turning while the window sets itself up
        ticks = [0]
        ticker = QTimer(window)
        ticker.setInterval(10)
        ticker.timeout.connect(lambda: ticks.__setitem__(0, ticks[0] + 1))
        ticker.start()

        def ready():
            ticker.stop()
            report("READY", tasks=[window.task_combo.itemData(i) for i in range(window.task_combo.count())],
                   pyqtgraph="pyqtgraph" in sys.modules, ticks=ticks[0])
            if data is None:
                window.close()

        def finished(result):
            report("FINISHED", status=result.status, points=window.plots.point_counts())
            window.close()

        window.ready.connect(ready)
        window.runFinished.connect(finished)

    appmod.after_show.append(shown)
    if data:
        code = appmod.run_app(task="toy-classification", data=data, params={"epochs": "1"}, autostart=True)
    else:
        code = appmod.run_app()
    report("EXIT", code=code)
    """
)


def _run(tmp_path, *args, timeout=240):
    script = tmp_path / "start.py"
    script.write_text(SCRIPT, encoding="utf-8")
    env = subprocess_env([FIXTURE_PLUGINS])
    env["QT_QPA_PLATFORM"] = "offscreen"
    proc = subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = {}
    for line in proc.stdout.splitlines():
        tag, _, payload = line.partition(" ")
        if tag in ("SHOWN", "READY", "FINISHED", "EXIT"):
            out[tag] = json.loads(payload)
    return out


def test_window_is_shown_before_torch_and_pyqtgraph_load(tmp_path):
    out = _run(tmp_path)
    shown = out["SHOWN"]
    assert shown["visible"]
    assert shown["torch"] is False, "torch was imported before the window was shown"
    assert shown["pyqtgraph"] is False, "pyqtgraph was imported before the window was shown"
    # PySide creates the ~90 enums of the Qt namespace on its first use: 11 ms
    # of start-up (bench/gui_latency.py window_vs_bare); the start path avoids it
    assert shown["qt_namespace"] is False, "something used PySide6.QtCore.Qt before the window was shown"
    # identity for the desktop launchers: WM_CLASS (instance and class) and the entry id
    assert shown["app_name"] == "trainlab" and shown["instance"] == "trainlab"
    assert shown["desktop"] == "org.trainlab.TrainLab"
    assert shown["title"] == "TrainLab"
    assert "toy-classification" in out["READY"]["tasks"]
    assert out["EXIT"]["code"] == 0


def test_window_answers_while_it_sets_itself_up(tmp_path):
    """pyqtgraph, numpy and the plugins load in a background thread, and the
    pages are built one per event-loop turn: a 10 ms timer keeps firing in
    between (done at once, the 0.3 s of imports alone would let it fire once)."""
    out = _run(tmp_path)
    assert out["READY"]["pyqtgraph"] is True
    assert out["READY"]["ticks"] >= 10, out["READY"]


def test_prefilled_autostart_runs_to_the_end(tmp_path):
    rng = random.Random(1)
    data = tmp_path / "rows.csv"
    rows = ["a,b,label"] + [f"{rng.random():.3f},{rng.random():.3f},{rng.choice('pq')}" for _ in range(80)]
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = _run(tmp_path, data)
    assert out["FINISHED"]["status"] == "completed"
    assert out["FINISHED"]["points"]["eval"] == 1
    assert out["EXIT"]["code"] == 0
    assert os.listdir(os.environ["TRAINLAB_HOME"] + "/runs")

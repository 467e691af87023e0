#!/usr/bin/env python3
"""Render the window's main views to PNG, offscreen, in light and dark palettes.

    python scripts/render_screenshots.py                 # docs/screenshots/*.png
    python scripts/render_screenshots.py --work /tmp/tl  # keep (and reuse) the trained runs

    python scripts/render_screenshots.py --only results-regression results-multilabel

Everything shown is real: the script trains small runs on the bundled sample
data on the CPU first (a few minutes; ``--work`` keeps them for the next
time), then drives the real main window: the start view, a run in progress,
its results, the run history comparing runs, try it, the plugins dialog, the
results of a regression and of a multi-label run, and the start view and
results in Simplified Chinese.  ``--only`` renders the named pictures alone
(and trains only the runs they show).

The regression and multi-label runs use the built-in ``image-regression`` and
``image-multilabel`` tasks on their samples where this installation has
them, else the test suite's toy tasks (``tests/fixtures/plugins``: rows of
numbers, trained in seconds).

The Chinese pictures need a CJK font (Debian/Ubuntu: ``apt-get install
fonts-noto-cjk``); the script says so when none is found.  Nothing here opens
a network connection.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZE = (1280, 800)
IMAGE_RUNS = (
    # (name, parameters): two learning rates to compare in the run history
    ("shapes · lr 0.005", {"epochs": "12", "batch_size": "16", "lr": "0.005", "image_size": "32"}),
    ("shapes · lr 0.001", {"epochs": "8", "batch_size": "16", "lr": "0.001", "image_size": "32"}),
)
TEXT_RUN = ("topics · tiny BERT", {"epochs": "4"})
# (picture, run name, built-in task, the toy task standing in for it, parameters)
FAMILY_RUNS = (
    ("results-regression", "regression demo", "image-regression", "toy-regression", {"epochs": "20"}),
    ("results-multilabel", "multi-label demo", "image-multilabel", "toy-multilabel", {"epochs": "3", "threshold": "auto"}),
)
CLASSIC_PICTURES = ("start", "results", "history", "tryit", "plugins", "training")
LIVE_RUN = {"epochs": "30", "batch_size": "16", "lr": "0.005", "image_size": "32"}


def wait(condition, timeout: float, what: str) -> None:
    """Spin the event loop until ``condition()`` (a script, not a test: polling is fine)."""
    from PySide6.QtWidgets import QApplication

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        QApplication.processEvents()
        time.sleep(0.02)


def settle(seconds: float = 0.3) -> None:
    from PySide6.QtWidgets import QApplication

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        QApplication.processEvents()
        time.sleep(0.01)


# -- data and runs ---------------------------------------------------------------------


def sample(path: str) -> Path:
    from trainlab_resources import resource_path

    return resource_path(path)


def train_runs(log) -> dict[str, str]:
    """The runs the pictures show, trained once per work folder."""
    from trainlab.engine.scripting import RunRequest, run_training
    from trainlab.runfolder.index import RunStore

    store = RunStore()
    existing = {r.get("name"): r for r in store.list() if r.get("status") == "completed"}
    wanted = [("image-classification", str(sample("samples/images/shapes")), *run) for run in IMAGE_RUNS]
    wanted.append(("text-classification", str(sample("samples/text")), *TEXT_RUN))
    runs = {}
    for task, data, name, params in wanted:
        if name in existing:
            runs[name] = existing[name]["run_dir"]
            continue
        log(f"training {name} ({task}) on the CPU…")
        started = time.monotonic()
        result = run_training(RunRequest(task=task, data=data, params=dict(params)))
        if result.status != "completed":
            raise SystemExit(f"{name}: {result.status}: {result.error}")
        store.rename(Path(result.run_dir).name, name)
        log(f"  {name}: accuracy {result.metrics.get('accuracy', 0):.1%} in {time.monotonic() - started:.0f} s")
        runs[name] = result.run_dir
    return runs


def train_family_runs(log, wanted) -> dict[str, str]:
    """The regression and multi-label runs, on a built-in sample or the toy tasks; by picture."""
    from trainlab.engine.scripting import RunRequest, run_training
    from trainlab.pluginhost.host import registry
    from trainlab.runfolder.index import RunStore

    store = RunStore()
    existing = {r.get("name"): r for r in store.list() if r.get("status") == "completed"}
    runs = {}
    for picture, name, builtin, toy, params in FAMILY_RUNS:
        if not wanted(picture):
            continue
        entry = registry().tasks.get(builtin)
        sample = entry.spec.sample_path() if entry is not None else None
        if sample is not None:
            task, data = builtin, str(sample)
        else:  # the window shows the toy runs too: it must find their plugin
            task, data = toy, str(toy_data(toy, Path(os.environ["TRAINLAB_HOME"]) / "toy-data"))
        if name in existing:
            runs[picture] = existing[name]["run_dir"]
            continue
        log(f"training {name} ({task}) on the CPU…")
        result = run_training(RunRequest(task=task, data=data, params=dict(params)))
        if result.status != "completed":
            raise SystemExit(f"{name}: {result.status}: {result.error}")
        store.rename(Path(result.run_dir).name, name)
        runs[picture] = result.run_dir
    return runs


def toy_data(task: str, folder: Path) -> Path:
    """The toy tasks' data, as the test suite writes it; their plugin made discoverable."""
    tests = ROOT / "tests"
    for path in (tests, tests / "fixtures" / "plugins"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    import trainlab.pluginhost.host as host
    from helpers import write_toy_multilabel_csv, write_toy_regression_csv

    host.registry(refresh=True)
    folder.mkdir(parents=True, exist_ok=True)
    if task == "toy-regression":
        return write_toy_regression_csv(folder / "regression.csv", rows=400)
    return write_toy_multilabel_csv(folder / "multilabel.csv", rows=400)


def demo_registry(folder: Path):
    """A plugin registry for the dialog: the built-ins plus two that do not load.

    A plugin needing a package this machine lacks (a real ModuleNotFoundError)
    and one built for another plugin API: what the dialog is for.
    """
    from trainlab.pluginhost.host import GROUP, PluginRegistry

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trainlab_audio_demo.py").write_text(
        '"""Audio classification for TrainLab (a demo of a plugin that fails to import)."""\n'
        "import torchaudio_backend_for_demo  # not installed here\n",
        encoding="utf-8",
    )
    (folder / "trainlab_tabular_demo.py").write_text(
        "import trainlab\n\n\n@trainlab.hookimpl\ndef trainlab_api_version():\n    return '2.0'\n",
        encoding="utf-8",
    )
    for dist, version, name, module in (
        ("trainlab-audio", "0.3.1", "audio-classification", "trainlab_audio_demo"),
        ("trainlab-tabular", "2.0.0", "tabular", "trainlab_tabular_demo"),
    ):
        info = folder / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8")
        (info / "entry_points.txt").write_text(f"[{GROUP}]\n{name} = {module}\n", encoding="utf-8")
    sys.path.insert(0, str(folder))
    try:
        return PluginRegistry.discover()
    finally:
        sys.path.remove(str(folder))


# -- pictures ---------------------------------------------------------------------------


class Shooter:
    def __init__(self, out: Path, log, only: list[str] | None = None) -> None:
        self.out = out
        self.log = log
        self.only = set(only or ())
        self.written: list[Path] = []

    def wants(self, picture: str) -> bool:
        """Whether ``picture`` (a name without its theme suffix) is to be rendered."""
        return not self.only or picture in self.only

    def save(self, widget, name: str) -> None:
        settle(0.2)
        path = self.out / f"{name}.png"
        if not widget.grab().save(str(path)):
            raise SystemExit(f"could not write {path}")
        self.written.append(path)
        self.log(f"  wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


def make_window(language: str, theme: str):
    from trainlab_desktop.app import make_application
    from trainlab_desktop.main_window import MainWindow

    app, used, resolved = make_application(language=language, theme=theme)
    if used != language:
        raise SystemExit(f"language {language} could not be loaded (got {used})")
    window = MainWindow(resolved_theme=resolved)
    window.resize(*SIZE)
    window.show()
    window.finish_setup()
    wait(lambda: window.is_ready, 60, "the window to finish its setup")
    settle(1.5)  # the first telemetry sample lands in the status bar
    return app, window


def shoot_window(shooter: Shooter, runs: dict[str, str], family_runs: dict[str, str], theme: str, language: str,
                 full: bool) -> None:
    suffix = theme if language == "en" else f"{language}-{theme}"
    app, window = make_window(language, theme)
    try:
        if shooter.wants("start"):
            window.show_page("welcome")
            shooter.save(window, f"start-{suffix}")

        best = max((runs[name] for name, _ in IMAGE_RUNS), key=_accuracy) if runs else None
        if best and shooter.wants("results"):
            show_results(window, best)
            shooter.save(window, f"results-{suffix}")
        if not full:
            return
        for picture, run_dir in family_runs.items():
            show_results(window, run_dir)
            shooter.save(window, f"{picture}-{suffix}")

        if best and shooter.wants("history"):
            history = window.history
            window.show_page("history")
            history.refresh()
            ids = [r["id"] for r in history.model.rows if r["run_dir"] in {runs[n] for n, _ in IMAGE_RUNS}]
            history.select_ids(ids)
            history.overlay_selected()
            history.curves.log_scale.setChecked(True)  # the two runs' losses differ tenfold
            shooter.save(window, f"history-{suffix}")

        if best and shooter.wants("tryit"):
            tryit = window.tryit
            tryit.set_run(best)
            window.show_page("tryit")
            image = sorted((sample("samples/images/shapes") / "star").glob("*"))[3]
            predicted = []
            tryit.predicted.connect(predicted.append)
            tryit.predict_image(str(image))
            wait(lambda: predicted or tryit.error, 120, "the try-it prediction")
            shooter.save(window, f"tryit-{suffix}")

        if shooter.wants("plugins"):
            from trainlab_desktop.dialogs.plugins import PluginsDialog

            registry = demo_registry(Path(tempfile.mkdtemp(prefix="trainlab-demo-plugins-")))
            dialog = PluginsDialog(registry, window)
            dialog.resize(900, 600)
            dialog.show()
            dialog.select_plugin("audio-classification")
            dialog.traceback_toggle.setChecked(True)
            shooter.save(dialog, f"plugins-{suffix}")
            dialog.close()

        if shooter.wants("training"):
            shoot_live_run(shooter, window, suffix)
    finally:
        if window.running:
            window.stop_run()
            wait(lambda: not window.running, 120, "the live run to stop")
        window.close()
        settle(0.2)
        window.deleteLater()
        settle(0.1)


def show_results(window, run_dir: str) -> None:
    window.open_run(run_dir)
    wait(lambda: window.current_page() == "results", 30, "the results page")
    results = window.results
    wait(lambda: results.thumbnails_pending() == 0, 30, "the example thumbnails")


def shoot_live_run(shooter: Shooter, window, suffix: str) -> None:
    """A run in progress: started in the window, pictured after a few evaluations."""
    window.prefill(task="image-classification", data=str(sample("samples/images/shapes")), params=dict(LIVE_RUN))
    window.show_page("train")
    if not window.start_run():
        raise SystemExit("the live run did not start: " + " ".join(window.start_blockers()))
    plots = window.plots
    wait(lambda: plots.point_counts()["eval"] >= 4, 600, "four evaluations of the live run")
    shooter.save(window, f"training-{suffix}")
    window.stop_run()
    wait(lambda: not window.running, 120, "the live run to stop")
    # A prop, not a result: keep the next pictures' run lists to the real runs.
    from trainlab.runfolder.index import RunStore

    store = RunStore()
    row = store.get(window.current_run_dir) if window.current_run_dir else None
    if row is not None:
        store.delete(row["id"])


def _accuracy(run_dir: str) -> float:
    import json

    try:
        return float(json.loads((Path(run_dir) / "eval.json").read_text(encoding="utf-8")).get("accuracy", 0.0))
    except (OSError, ValueError):
        return 0.0


def check_cjk_font(log) -> bool:
    from PySide6.QtGui import QFontDatabase

    families = [f for f in QFontDatabase.families() if any(k in f for k in ("CJK", "Hei", "Song", "WenQuanYi", "Droid Sans Fallback"))]
    if not families:
        log("warning: no CJK font found; the Chinese pictures will show boxes (apt-get install fonts-noto-cjk)")
    return bool(families)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"), help="folder for the PNG files")
    parser.add_argument("--work", help="folder for TRAINLAB_HOME (runs are kept and reused); default: a temporary one")
    parser.add_argument("--themes", nargs="+", default=["light", "dark"], choices=["light", "dark"])
    parser.add_argument("--only", nargs="+", metavar="PICTURE",
                        choices=[*CLASSIC_PICTURES, *(f[0] for f in FAMILY_RUNS)],
                        help="render only these pictures (names without the theme)")
    args = parser.parse_args(argv)

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="trainlab-screenshots-"))
    # Runs, index and the window's settings (geometry, language, theme) all
    # live there: nothing of the user's is read or changed.
    os.environ["TRAINLAB_HOME"] = str(work)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(["trainlab"])
    check_cjk_font(log)
    shooter = Shooter(out, log, args.only)
    classic = any(shooter.wants(p) for p in CLASSIC_PICTURES if p not in ("plugins", "training"))
    runs = train_runs(log) if classic else {}
    family_runs = train_family_runs(log, shooter.wants)
    for theme in args.themes:
        log(f"{theme} palette, English")
        shoot_window(shooter, runs, family_runs, theme, "en", full=True)
        if shooter.wants("start") or (runs and shooter.wants("results")):
            log(f"{theme} palette, Simplified Chinese")
            shoot_window(shooter, runs, family_runs, theme, "zh_CN", full=False)
    app.processEvents()
    log(f"{len(shooter.written)} pictures in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

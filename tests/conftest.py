"""Test configuration shared by the whole suite.

* Qt runs headless (offscreen) unless a test starts its own X server.
* Every test gets its own TRAINLAB_HOME, so runs, the index, settings and the
  model store never touch the user's real folders.
* Outbound network connections fail the test (the offline rule): only
  loopback and local sockets are allowed.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TRAINLAB_TEST", "1")
# One intra-op thread: tests check behaviour, not speed, and on two shared
# cores a second OpenMP thread mostly waits (measured: a tiny BERT step 15x
# slower with two threads under load).
os.environ.setdefault("OMP_NUM_THREADS", "1")
# No test talks to the developer's desktop (notifications, sleep inhibitors):
# both D-Bus buses lead nowhere unless a test starts its own (fake_desktop).
os.environ["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=/nonexistent/trainlab-test-session-bus"
os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent/trainlab-test-system-bus"

TESTS = Path(__file__).resolve().parent
FIXTURE_PLUGINS = TESTS / "fixtures" / "plugins"
# The data generators (trainlab_dev) are development helpers, not installed: import them from scripts/.
sys.path.insert(0, str(TESTS.parent / "scripts"))


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run exhaustive @pytest.mark.slow tests")


# Files whose tests start two ranks at once. Under pytest-xdist (``make test``
# runs two workers) they share one worker, one test at a time: two rank pairs
# on two cores would quadruple-book them, and test_shared_memory checks that
# /dev/shm holds no new trainlab-* entry afterwards, which another worker's
# two-rank image run would make true or false by chance.
RANK_PAIR_FILES = frozenset({
    "test_distributed.py", "test_distributed_recovery.py", "test_gui_distributed.py",
    "test_shared_memory.py", "test_oom_flags_in_bucket.py", "test_bench_ddp_scaling.py", "test_rank_sync_points.py",
})  # fmt: skip


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in RANK_PAIR_FILES:
            item.add_marker(pytest.mark.xdist_group("rank-pairs"))
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="exhaustive check: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def _is_local(address) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    if not isinstance(address, tuple) or not address:
        return True
    host = address[0]
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: would need DNS, which is a connection too


class NetworkBlocked(RuntimeError):
    pass


@pytest.fixture(autouse=True)
def _block_network(monkeypatch):
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    attempts = []

    def guard(real):
        def connect(self, address):
            if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address):
                attempts.append(address)
                raise NetworkBlocked(f"test tried to open a network connection to {address!r}")
            return real(self, address)

        return connect

    monkeypatch.setattr(socket.socket, "connect", guard(real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guard(real_connect_ex))
    yield attempts
    if attempts:
        pytest.fail(f"outbound network connection attempted: {attempts}")


@pytest.fixture(scope="session")
def fixture_plugin_verdicts(tmp_path_factory) -> Path | None:
    """TrainLab's verdicts on the fixture plugins (``trainlab.pluginhost.probe``), made once.

    A new plugin is first loaded in a child process; every test has a new
    home, so without these each one would try the fixture plugins again (a
    process each, most of the suite).  The real CLI makes them, in a home of
    its own; tests of first sight use plugins the file does not know.
    """
    import subprocess

    home = tmp_path_factory.mktemp("probe-seed-home")
    env = subprocess_env([FIXTURE_PLUGINS, BROKEN_PLUGINS, FAULTY_PLUGIN, CARELESS_PLUGINS], TRAINLAB_HOME=str(home))
    subprocess.run([sys.executable, "-m", "trainlab", "plugins", "--json"], capture_output=True, env=env, timeout=120)
    found = home / "cache" / "plugin-probes.json"
    return found if found.is_file() else None


@pytest.fixture(autouse=True)
def tmp_home(tmp_path_factory, monkeypatch, fixture_plugin_verdicts):
    """A private TRAINLAB_HOME for each test (knowing the fixture plugins, as after a first start)."""
    home = tmp_path_factory.mktemp("trainlab-home")
    if fixture_plugin_verdicts is not None:
        import shutil

        (home / "cache").mkdir()
        shutil.copyfile(fixture_plugin_verdicts, home / "cache" / fixture_plugin_verdicts.name)
    monkeypatch.setenv("TRAINLAB_HOME", str(home))
    monkeypatch.delenv("TRAINLAB_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("TRAINLAB_BLOCK_PLUGINS", raising=False)
    import trainlab.pluginhost.host as host

    monkeypatch.setattr(host, "_registry", None)
    return home


def subprocess_env(extra_path: list[Path] | None = None, **overrides) -> dict[str, str]:
    """Environment for a CLI subprocess: same TRAINLAB_HOME, fixtures on the path."""
    env = dict(os.environ)
    paths = [str(p) for p in (extra_path or [])]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update({k: str(v) for k, v in overrides.items()})
    return env


@pytest.fixture
def cli(tmp_home):
    """Run ``python -m trainlab ARGS`` in a subprocess; returns CompletedProcess."""
    import subprocess

    def run(*args, extra_path=None, input=None, timeout=240, env=None):
        full_env = subprocess_env(extra_path)
        full_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "trainlab", *map(str, args)],
            capture_output=True,
            text=True,
            input=input,
            timeout=timeout,
            env=full_env,
        )

    return run


BROKEN_PLUGINS = TESTS / "fixtures" / "broken_plugins"
FAULTY_PLUGIN = BROKEN_PLUGINS / "faulty"  # raises in the method its fail_in parameter names
CARELESS_PLUGINS = BROKEN_PLUGINS / "careless"  # unmarked or misspelt hooks, a factory that is not there
AT_IMPORT_PLUGINS = BROKEN_PLUGINS / "at_import"  # hang, exit or crash when imported


def write_toy_csv(path: Path, rows: int = 240, classes: int = 3, features: int = 4, seed: int = 0) -> Path:
    """Separable Gaussian blobs as a CSV for the toy task."""
    import random

    rng = random.Random(seed)
    centres = [[rng.uniform(-3, 3) for _ in range(features)] for _ in range(classes)]
    lines = [",".join([f"x{i}" for i in range(features)] + ["label"])]
    for r in range(rows):
        c = r % classes
        values = [centres[c][i] + rng.gauss(0, 0.6) for i in range(features)]
        lines.append(",".join(f"{v:.4f}" for v in values) + f",class_{c}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def toy_plugin(monkeypatch):
    """The toy fixture plugin, discoverable (through its entry point) in this
    process and in child processes."""
    monkeypatch.syspath_prepend(str(FIXTURE_PLUGINS))
    paths = [str(FIXTURE_PLUGINS)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    return FIXTURE_PLUGINS


@pytest.fixture
def toy_csv(tmp_path):
    return write_toy_csv(tmp_path / "toy.csv")


@pytest.fixture
def window(qtbot, toy_plugin):
    """The real main window, set up (plugins found, pages built), with the toy task."""
    from trainlab_desktop.app import make_application
    from trainlab_desktop.main_window import MainWindow

    make_application(language="en", theme="light")
    win = MainWindow(resolved_theme="light")
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    win.finish_setup()
    yield win
    if win.running:
        win.worker.request_stop()
        win.worker.wait(60_000)
    win._shutdown()


@pytest.fixture
def make_worker(qtbot):
    """``make_worker(request, ...)``: a ``TrainingWorker`` deleted in the GUI
    thread when the test ends (stopped and joined first if it still runs), as
    ``RunController`` parents and ``deleteLater``s the window's.

    A parentless worker is otherwise destroyed whenever its Python wrapper
    dies, and that can be the cyclic GC (a thread's frames sit in reference
    cycles after a first import) in whatever thread allocates next: the next
    test's worker thread.  A QThread and its drain QTimer, which live in the
    GUI thread, destroyed from there while the GUI thread runs its timers
    segfaulted in pytest-qt's event processing (1 run in 7, more under load).
    """
    from PySide6.QtCore import QCoreApplication, QEvent

    from trainlab_desktop.run.training_thread import TrainingWorker

    made = []

    def make(*args, **kwargs):
        worker = TrainingWorker(*args, **kwargs)
        made.append(worker)
        return worker

    yield make
    for worker in made:
        if worker.isRunning():
            worker.request_stop()
            worker.wait(60_000)
        worker.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def write_toy_regression_csv(path: Path, rows: int = 240, features: int = 3, seed: int = 0) -> Path:
    """y = a linear function of the features plus a little noise, on the scale of hundreds."""
    import random

    rng = random.Random(seed)
    weights = [rng.uniform(-3, 3) for _ in range(features)]
    lines = [",".join([f"x{i}" for i in range(features)] + ["y"])]
    for _ in range(rows):
        xs = [rng.gauss(0, 1) for _ in range(features)]
        y = 500 + 100 * sum(w * x for w, x in zip(weights, xs)) + rng.gauss(0, 10)
        lines.append(",".join(f"{v:.4f}" for v in xs) + f",{y:.3f}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_toy_multilabel_csv(path: Path, rows: int = 240, seed: int = 0) -> Path:
    """Labels a, b, c each switched on by one feature being positive; some rows have none."""
    import random

    rng = random.Random(seed)
    lines = ["x0,x1,x2,labels"]
    for _ in range(rows):
        xs = [rng.gauss(0, 1) for _ in range(3)]
        labels = [name for name, x in zip("abc", xs) if x > 0.3]
        lines.append(",".join(f"{v:.4f}" for v in xs) + "," + ";".join(labels))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path

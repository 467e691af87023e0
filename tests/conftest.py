"""Test configuration shared by the whole suite.

* Qt runs headless (offscreen) unless a test starts its own X server.
* Every test gets its own TRAINLAB_HOME, so runs, the index, settings and the
  model store never touch the user's real folders.
* Outbound network connections fail the test (the offline rule): only
  loopback and local sockets are allowed.

The fixtures that more than one test file uses live here; the plain helpers
(paths, data writers, runners) live in helpers.py, which test files import.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from pathlib import Path

import pytest

# Before the first import of helpers: pytest rewrites its asserts as it does a
# test module's, so that a failing helper shows the values it compared.
pytest.register_assert_rewrite("helpers")

from helpers import (  # noqa: E402
    BROKEN_PLUGINS,
    CARELESS_PLUGINS,
    FAULTY_PLUGIN,
    FIXTURE_PLUGINS,
    FORECAST_PLUGIN,
    ROOT,
    NetworkBlocked,
    make_bert_folder,
    make_decoder_folder,
    run_trainlab,
    subprocess_env,
    write_toy_csv,
)

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

# The data generators (trainlab_dev) are development helpers, not installed: import them from scripts/.
sys.path.insert(0, str(ROOT / "scripts"))


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run exhaustive @pytest.mark.slow tests")
    parser.addoption("--runlong", action="store_true", default=False,
                     help="run the @pytest.mark.long end-to-end runs (.ci/run does; make test leaves them out)")


# Files whose tests start two ranks at once. Under pytest-xdist (``make test``
# runs two workers) they share one worker, one test at a time: two rank pairs
# on two cores would quadruple-book them, and test_shared_memory checks that
# /dev/shm holds no new trainlab-* entry afterwards, which another worker's
# two-rank image run would make true or false by chance.
RANK_PAIR_FILES = frozenset({
    "test_distributed.py", "test_distributed_recovery.py", "test_gui_distributed.py",
    "test_shared_memory.py", "test_oom_flags_in_bucket.py", "test_bench_ddp_scaling.py", "test_rank_sync_points.py",
    "test_detection_distributed.py",
})  # fmt: skip


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in RANK_PAIR_FILES:
            item.add_marker(pytest.mark.xdist_group("rank-pairs"))
    if not config.getoption("--runlong"):
        skip_long = pytest.mark.skip(reason="a long end-to-end run: .ci/run runs it (--runlong)")
        for item in items:
            if "long" in item.keywords:
                item.add_marker(skip_long)
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
    env = subprocess_env(
        [FIXTURE_PLUGINS, FORECAST_PLUGIN, BROKEN_PLUGINS, FAULTY_PLUGIN, CARELESS_PLUGINS],
        TRAINLAB_HOME=str(home),
        TRAINLAB_SHARED_CACHE=str(home / "cache"),
    )
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
    monkeypatch.setenv("TRAINLAB_SHARED_CACHE", str(home / "cache"))  # the user's own cache stays out of the tests
    monkeypatch.delenv("TRAINLAB_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("TRAINLAB_BLOCK_PLUGINS", raising=False)
    import trainlab.pluginhost.host as host

    monkeypatch.setattr(host, "_registry", None)
    return home


@pytest.fixture
def cli(tmp_home):
    """``cli(*ARGS, extra_path=None, env=None, input=None, timeout=240)``: ``python -m trainlab ARGS``
    in a subprocess in this test's home (``helpers.run_trainlab``); returns the CompletedProcess."""
    return run_trainlab


@pytest.fixture
def one_thread():
    """One torch thread for the test: on the shared two-core test machine a
    two-thread OpenMP team stalls whenever another process holds a core."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


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


@pytest.fixture
def encode_calls(monkeypatch):
    """Every split the text task tokenises.

    With the token cache off (a limit of 0): the tests that use it count the
    hand-over of a preparation in memory, which the disk cache would otherwise
    hide (test_token_cache.py tests that one).
    """
    import trainlab_plugins.text.base as text_task
    from trainlab.system.cache import set_limit_gb

    set_limit_gb(0)

    calls = []
    real = text_task.encode_split

    def counting(tokenizer, split, *args, **kwargs):
        calls.append(split.path)
        return real(tokenizer, split, *args, **kwargs)

    monkeypatch.setattr(text_task, "encode_split", counting)
    return calls


# Tiny text models from configs, made once per test module that asks (random
# weights; nothing is downloaded).


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    return make_bert_folder(tmp_path_factory.mktemp("models") / "mini-bert")


@pytest.fixture(scope="module")
def qwen_folder(tmp_path_factory):
    return make_decoder_folder(tmp_path_factory.mktemp("models") / "mini-qwen2")


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory):
    return make_decoder_folder(tmp_path_factory.mktemp("models") / "mini-llama", arch="llama")

"""TrainLab's pytest plugin: the fixtures a plugin author's tests use.

Loaded through the ``pytest11`` entry point in every pytest session where
TrainLab is installed, so at load it imports only pytest and what
``import trainlab`` costs (no torch, no Qt, no pytest-qt; a test runs
``python -c`` on it to keep it so).  Each fixture imports what it needs when
it is used; ``trainlab_window`` is the one that imports ``trainlab_desktop``
(declared in the import-linter contracts in pyproject.toml).

Fixtures (``docs/plugin-kit.md``):

* ``trainlab_home``: a temporary TrainLab home for this test.
* ``trainlab_plugin``: the entry-point name of the plugin under test; a
  ``PluginConformance`` class says it with ``plugin = ...``, other tests
  override this fixture.
* ``trainlab_plugin_host``: a plugin registry holding only that plugin, made
  TrainLab's registry for the test.
* ``trainlab_tiny_data``: ``make(task_id) -> path`` of a few learnable
  examples, from the author's ``make_tiny_data`` (a method of the
  conformance class, or a ``trainlab_make_tiny_data`` fixture).
* ``trainlab_engine``: the headless engine on the CPU in that home and host.
* ``trainlab_window``: the real main window (through pytest-qt's ``qtbot``;
  skipped when pytest-qt is not installed).

``PluginConformance`` (``trainlab.testing.conformance``) adds two fixtures
of class scope: ``trainlab_static_kit`` (the plugin discovered once) and
``trainlab_task_kit`` (one task's tiny runs, shared by its checks).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import trainlab.pluginhost.host as host
from trainlab.testing.checks import StaticKit
from trainlab.testing.engine import HeadlessEngine
from trainlab.testing.runs import TaskKit
from trainlab.testing.target import find_targets, host_for
from trainlab.testing.window import open_window


@pytest.fixture
def trainlab_home(tmp_path_factory, monkeypatch) -> Path:
    """A TrainLab home of this test's own (runs, index, settings, caches, model store)."""
    home = tmp_path_factory.mktemp("trainlab-home")
    monkeypatch.setenv("TRAINLAB_HOME", str(home))
    monkeypatch.setenv("TRAINLAB_SHARED_CACHE", str(home / "cache"))  # the shared plugin verdicts too
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(home / "cache" / "torchinductor"))
    monkeypatch.setattr(host, "_registry", None)
    return home


@pytest.fixture
def trainlab_plugin(request) -> str:
    """The entry-point name of the plugin under test (override this fixture, or set ``plugin`` on a conformance class)."""
    name = getattr(request.cls, "plugin", "") if request.cls is not None else ""
    if not name:
        raise pytest.UsageError(
            "trainlab_plugin: say which plugin is under test: override the trainlab_plugin fixture "
            "to return its entry-point name, or set `plugin = NAME` on your PluginConformance class"
        )
    return name


@pytest.fixture
def trainlab_plugin_host(trainlab_home, trainlab_plugin, monkeypatch):
    """TrainLab's plugin registry for this test, holding only the plugin under test."""
    (target, *_) = find_targets(trainlab_plugin)
    registry = host_for(target)
    monkeypatch.setattr(host, "_registry", registry)
    return registry


@pytest.fixture
def trainlab_tiny_data(request, tmp_path):
    """``make(task_id) -> Path``: the author's tiny learnable data for a task, written under this test's folder."""
    maker = getattr(request.instance, "make_tiny_data", None)
    if maker is None:
        try:
            maker = request.getfixturevalue("trainlab_make_tiny_data")
        except pytest.FixtureLookupError:
            raise pytest.UsageError(
                "trainlab_tiny_data: define make_tiny_data(task_id, folder) on your PluginConformance class, "
                "or a fixture trainlab_make_tiny_data returning such a function"
            ) from None

    def make(task_id: str) -> Path:
        folder = tmp_path / "tiny-data" / task_id
        folder.mkdir(parents=True, exist_ok=True)
        return Path(maker(task_id, folder))

    return make


@pytest.fixture
def trainlab_engine(trainlab_home, trainlab_plugin_host):
    """The headless engine on the CPU, in this test's home, with only the plugin under test."""
    return HeadlessEngine(trainlab_home)


@pytest.fixture
def trainlab_window(request, trainlab_home):
    """The real main window, shown and set up, driven through pytest-qt's ``qtbot``.

    Skipped when pytest-qt is not installed; Qt runs offscreen unless
    ``QT_QPA_PLATFORM`` says otherwise.
    """
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    try:  # pytest-qt not installed, or disabled with -p no:pytestqt
        qtbot = request.getfixturevalue("qtbot")
    except pytest.FixtureLookupError:
        pytest.skip("the window fixture needs pytest-qt (pip install pytest-qt)")

    window = open_window(qtbot)
    yield window
    window._shutdown()


@pytest.fixture(scope="class")
def trainlab_static_kit(request, tmp_path_factory):
    """The plugin under test, discovered once per class in a home of the kit's own."""
    (target, *_) = find_targets(request.cls.plugin)
    return StaticKit(target, home=tmp_path_factory.mktemp("kit-home"))


@pytest.fixture(scope="class")
def trainlab_task_kit(request, trainlab_task, trainlab_static_kit, tmp_path_factory):
    """One task's tiny runs, made once per class and shared by its checks."""
    author = request.cls()
    workdir = tmp_path_factory.mktemp(f"kit-{trainlab_task}")
    (workdir / "data").mkdir()
    (workdir / "bad-input").mkdir()
    data = Path(author.make_tiny_data(trainlab_task, workdir / "data"))
    bad = author.make_bad_data(trainlab_task, workdir / "bad-input")
    inputs = author.predict_inputs(trainlab_task, data)
    registry = trainlab_static_kit.registry
    record = trainlab_static_kit.record
    if trainlab_task not in registry.tasks:
        pytest.fail(f"plugin {record.name!r} ({record.status}: {record.message}) offers no task {trainlab_task!r}", pytrace=False)
    return TaskKit(
        trainlab_task,
        data,
        workdir,
        registry,
        params=author.tiny_params(trainlab_task),
        predict_inputs=(lambda: inputs) if inputs is not None else None,
        bad_data=(lambda: bad) if bad is not None else None,
        home=trainlab_static_kit.home,
    )


def pytest_generate_tests(metafunc):
    """A conformance class's per-task checks run once per task of its plugin."""
    cls = metafunc.cls
    if cls is None or not getattr(cls, "_trainlab_conformance", False) or "trainlab_task" not in metafunc.fixturenames:
        return
    tasks = cls.task_ids()
    metafunc.parametrize("trainlab_task", tasks, ids=tasks, scope="class")

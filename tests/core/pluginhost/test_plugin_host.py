"""Plugin discovery: isolation, statuses, safe mode, blocking, duplicates."""

import json
import subprocess
import sys

import pytest

from helpers import BROKEN_PLUGINS, CARELESS_PLUGINS, FIXTURE_PLUGINS, subprocess_env
from trainlab.pluginhost.host import PluginRegistry, set_blocked


@pytest.fixture
def all_fixture_plugins(monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURE_PLUGINS))
    monkeypatch.syspath_prepend(str(BROKEN_PLUGINS))


def by_name(registry):
    return {p.name: p for p in registry.plugins}


def test_broken_plugins_are_reported_and_the_rest_works(all_fixture_plugins):
    registry = PluginRegistry.discover()
    plugins = by_name(registry)

    assert plugins["toy"].status == "ok"
    assert "toy-classification" in registry.tasks
    assert registry.task("toy-classification").plugin.name == "toy"

    broken = plugins["broken-import"]
    assert broken.status == "failed"
    assert "could not be imported" in broken.message and "trainlab_this_module_does_not_exist" in broken.message
    assert "ModuleNotFoundError" in broken.traceback

    raising = plugins["raising-hook"]
    assert raising.status == "failed"
    assert "trainlab_tasks() raised ValueError: boom from the raising fixture" in raising.message
    assert "boom" in raising.traceback

    bad = plugins["bad-descriptor"]
    assert bad.status == "failed"
    assert "invalid task descriptor" in bad.message and "Bad Task!" in bad.message

    old = plugins["old-api"]
    assert old.status == "incompatible"
    assert "0.x" in old.message
    assert "old-task" not in registry.tasks

    dup = plugins["zz-duplicate-task"]
    assert dup.status == "failed"
    assert "already provided by plugin 'toy'" in dup.message
    assert registry.task("toy-classification").spec.title == "Toy classification"


def test_every_failure_names_its_plugin_in_the_cli(cli):
    result = cli("plugins", "--json", extra_path=[FIXTURE_PLUGINS, BROKEN_PLUGINS])
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    statuses = {p["name"]: p["status"] for p in data["plugins"]}
    assert statuses["toy"] == "ok"
    assert statuses["broken-import"] == "failed"
    assert statuses["old-api"] == "incompatible"
    human = cli("plugins", extra_path=[FIXTURE_PLUGINS, BROKEN_PLUGINS])
    assert "broken-import" in human.stdout and "could not be imported" in human.stdout


def test_newer_minor_loads_with_a_warning(tmp_path, monkeypatch):
    (tmp_path / "newer_plugin.py").write_text(
        "import trainlab\n"
        "@trainlab.hookimpl\ndef trainlab_api_version():\n    return '2.7'\n"
        "@trainlab.hookimpl\ndef trainlab_tasks():\n"
        "    return [trainlab.TaskSpec(id='newer-task', title='Newer', factory='newer_plugin:X')]\n"
    )
    info = tmp_path / "newer-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: newer\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[trainlab.plugins]\nnewer = newer_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = by_name(PluginRegistry.discover())
    assert plugins["newer"].status == "ok"
    assert any("2.7" in w for w in plugins["newer"].warnings)


def test_safe_mode_keeps_only_builtins(all_fixture_plugins, monkeypatch):
    monkeypatch.setenv("TRAINLAB_DISABLE_PLUGINS", "1")
    registry = PluginRegistry.discover()
    plugins = by_name(registry)
    assert plugins["toy"].status == "disabled"
    assert plugins["broken-import"].status == "disabled"
    assert "toy-classification" not in registry.tasks
    assert all(p.status != "disabled" for p in registry.plugins if p.builtin)


def test_blocking_a_plugin_by_name(all_fixture_plugins, cli):
    set_blocked("toy", True)
    registry = PluginRegistry.discover()
    assert by_name(registry)["toy"].status == "blocked"
    # the impostor now gets the task id: first registered among the rest keeps it
    assert registry.task("toy-classification").plugin.name == "zz-duplicate-task"
    result = cli("plugins", "--unblock", "toy", "--json", extra_path=[FIXTURE_PLUGINS])
    assert {p["name"]: p["status"] for p in json.loads(result.stdout)["plugins"]}["toy"] == "ok"
    assert by_name(PluginRegistry.discover())["toy"].status == "ok"


def test_env_var_blocks_too(all_fixture_plugins, monkeypatch):
    monkeypatch.setenv("TRAINLAB_BLOCK_PLUGINS", "broken-import, toy")
    plugins = by_name(PluginRegistry.discover())
    assert plugins["toy"].status == "blocked" and plugins["broken-import"].status == "blocked"


def test_discovery_and_plugins_command_do_not_import_torch(tmp_home):
    code = (
        "import sys, json\n"
        "from trainlab.cli.commands import main\n"
        "rc = main(['plugins', '--json'])\n"
        "main(['tasks', '--json'])\n"
        "heavy = [m for m in ('torch', 'torchvision', 'transformers', 'PySide6', 'pyqtgraph') if m in sys.modules]\n"
        "print('HEAVY=' + json.dumps(heavy), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env([FIXTURE_PLUGINS]), timeout=120
    )
    assert result.returncode == 0, result.stderr
    line = [l for l in result.stderr.splitlines() if l.startswith("HEAVY=")][0]
    assert json.loads(line[len("HEAVY="):]) == []


def test_builtin_plugins_are_registered_through_the_entry_point_group():
    registry = PluginRegistry.discover()
    builtins = [p for p in registry.plugins if p.builtin]
    assert {p.name for p in builtins} >= {"image-classification", "text-classification"}
    assert all(p.distribution.lower() == "trainlab" for p in builtins)
    # built-ins come first, so they win any task-id conflict
    assert registry.plugins[: len(builtins)] == builtins


def test_plugin_run_callbacks_are_isolated(tmp_path, monkeypatch, toy_plugin, toy_csv):
    (tmp_path / "cb_plugin.py").write_text(
        "import trainlab\n"
        "from trainlab.api.callbacks import Callback\n"
        "SEEN = []\n"
        "class Counter(Callback):\n"
        "    def on_epoch_end(self, state):\n        SEEN.append(state.epoch)\n"
        "class Broken(Callback):\n"
        "    def on_step_end(self, state):\n        raise RuntimeError('callback bug')\n"
        "@trainlab.hookimpl\ndef trainlab_api_version():\n    return '2.0'\n"
        "@trainlab.hookimpl\ndef trainlab_run_callbacks(task_id, params):\n    return [Counter(), Broken()]\n"
    )
    info = tmp_path / "cbp-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cbp\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[trainlab.plugins]\ncbp = cb_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from trainlab.engine.scripting import RunRequest, run_training
    from trainlab.api.events import Log

    logs = []

    class Grab:
        def on_event(self, event):
            if isinstance(event, Log):
                logs.append(event.message)

    from trainlab.api.callbacks import Callback

    class GrabCb(Callback):
        def on_event(self, event):
            Grab.on_event(self, event)

    result = run_training(RunRequest(task="toy-classification", data=str(toy_csv), params={"epochs": "2"}), callbacks=[GrabCb()])
    assert result.status == "completed"
    import cb_plugin

    assert cb_plugin.SEEN == [1, 2]
    assert any("callback bug" in m and "disabled" in m for m in logs)
    # whose callback it was
    assert any(m.startswith("callback Broken of plugin 'cbp' failed in on_step_end") for m in logs), logs


def test_a_plugin_api_1_plugin_loads_through_the_adapter(tmp_path, monkeypatch):
    """Plugin API 1 tasks keep working (single-label classification), with a warning that says so."""
    (tmp_path / "legacy_plugin.py").write_text(
        "import trainlab\n"
        "@trainlab.hookimpl\ndef trainlab_api_version():\n    return '1.0'\n"
        "@trainlab.hookimpl\ndef trainlab_tasks():\n"
        "    return [trainlab.TaskSpec(id='legacy-task', title='Legacy', factory='legacy_plugin:X')]\n"
    )
    info = tmp_path / "legacy-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: legacy\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[trainlab.plugins]\nlegacy = legacy_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = PluginRegistry.discover()
    plugins = by_name(registry)
    assert plugins["legacy"].status == "ok"
    assert any("adapter" in w and "1.0" in w for w in plugins["legacy"].warnings)
    spec = registry.task("legacy-task").spec
    assert spec.family == "classification"
    assert [m.name for m in spec.metric_specs()] == ["accuracy", "macro_f1"] and spec.default_monitor() == "accuracy"


def test_careless_plugins_get_warnings_that_say_what_to_fix(monkeypatch):
    """Forgotten @hookimpl, a misspelt hook, a factory that is not there: ok, with a warning each."""
    monkeypatch.syspath_prepend(str(CARELESS_PLUGINS))
    registry = PluginRegistry.discover()
    plugins = by_name(registry)

    unmarked = plugins["unmarked-hooks"]
    assert unmarked.status == "ok" and unmarked.tasks == []
    assert "trainlab_tasks() not marked @trainlab.hookimpl, so TrainLab never calls it: add the decorator" in unmarked.warnings
    assert any("implements no hook" in w for w in unmarked.warnings)

    misspelt = plugins["misspelt-hook"]
    assert misspelt.status == "ok" and misspelt.tasks == []
    assert "trainlab_task() is not a TrainLab hook (did you mean trainlab_tasks?), so TrainLab never calls it" in misspelt.warnings

    missing = plugins["missing-factory"]
    assert missing.status == "ok" and missing.tasks == ["ghost-classification", "typo-classification"]
    ghost, typo = missing.warnings
    assert ghost.startswith("task 'ghost-classification': its factory module 'trainlab_fixture_ghost_tasks' cannot be found")
    assert typo.startswith("task 'typo-classification': its factory 'missing_factory_plugin:TypoTaks' names 'TypoTaks'")

    # the built-ins and the toy plugin, done right, get none
    monkeypatch.syspath_prepend(str(FIXTURE_PLUGINS))
    plugins = by_name(PluginRegistry.discover())
    assert all(not plugins[name].warnings for name in ("image-classification", "text-classification", "toy"))


def test_a_run_of_a_task_whose_factory_is_missing_names_the_plugin(cli, tmp_path):
    data = tmp_path / "rows.csv"
    data.write_text("x,label\n1,a\n")
    listing = cli("plugins", extra_path=[CARELESS_PLUGINS])
    assert "warning: trainlab_task() is not a TrainLab hook (did you mean trainlab_tasks?)" in listing.stdout
    assert "its factory module 'trainlab_fixture_ghost_tasks' cannot be found" in listing.stdout
    result = cli("train", "ghost-classification", "--data", data, "--json", extra_path=[CARELESS_PLUGINS])
    assert result.returncode == 1, result.stderr
    error = json.loads(result.stdout)["error"]
    assert error == (
        "plugin 'missing-factory' (task ghost-classification) failed in factory: "
        "ModuleNotFoundError: No module named 'trainlab_fixture_ghost_tasks'"
    )

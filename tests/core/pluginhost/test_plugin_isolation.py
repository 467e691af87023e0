"""Plugins that hang, exit or crash when imported do not stop TrainLab (trainlab.pluginhost.probe).

The fixtures in tests/fixtures/broken_plugins/at_import sleep 120 s, call
``os._exit(3)`` or segfault (ctypes) at import.  With a 3 s limit, every
command below must finish within the subprocess timeouts given here (the
first sight of the three: the limit plus start-up; after that: no probe).
"""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from helpers import AT_IMPORT_PLUGINS, BROKEN_PLUGINS, FIXTURE_PLUGINS, one_json_line
from trainlab.pluginhost import probe as pluginprobe
from trainlab.pluginhost.host import PluginRegistry

LIMIT = {"TRAINLAB_PLUGIN_IMPORT_TIMEOUT": "3"}
PATHS = [AT_IMPORT_PLUGINS, BROKEN_PLUGINS, FIXTURE_PLUGINS]
AT_IMPORT = {"hang-at-import": "did not finish within 3 s", "exit-at-import": "exit code 3", "crash-at-import": "crashed (SIGSEGV)"}


def statuses(plugins):
    return {p["name"]: p for p in plugins}


@pytest.mark.long
def test_commands_work_and_report_plugins_broken_at_import(cli, tmp_path):
    first = cli("plugins", "--json", extra_path=PATHS, env=LIMIT, timeout=45)
    assert first.returncode == 0, first.stderr
    found = statuses(one_json_line(first)["plugins"])
    for name, words in AT_IMPORT.items():
        assert found[name]["status"] == "failed" and words in found[name]["message"], found[name]
        assert found[name]["probe"]["cached"] is False
    assert "hang_at_import_plugin.py" in found["hang-at-import"]["traceback"]  # where it hung, for its author
    assert "crash_at_import_plugin.py" in found["crash-at-import"]["traceback"]
    assert found["toy"]["status"] == "ok" and found["raising-hook"]["status"] == "failed"
    assert found["broken-import"]["status"] == "failed"
    # said once on stderr too, the first time (a run's output is where a user would see it)
    assert "trainlab: plugin hang-at-import could not be loaded" in first.stderr

    # known now: no process is started for them again, and nothing is said again
    again = cli("plugins", "--json", extra_path=PATHS, env=LIMIT, timeout=30)
    found = statuses(one_json_line(again)["plugins"])
    assert all(found[name]["probe"]["cached"] and found[name]["status"] == "failed" for name in AT_IMPORT)
    assert found["toy"]["probe"] == {**found["toy"]["probe"], "result": "loaded", "cached": True}
    assert "trainlab: plugin hang-at-import could not be loaded" not in again.stderr

    tasks = cli("tasks", "--json", extra_path=PATHS, timeout=30)
    assert tasks.returncode == 0, tasks.stderr
    assert {"toy-classification", "image-classification", "text-classification"} <= {t["id"] for t in one_json_line(tasks)["tasks"]}

    doctor = cli("doctor", "--json", extra_path=PATHS, timeout=60)
    assert doctor.returncode == 0, doctor.stderr
    report = one_json_line(doctor)
    assert {p["name"]: p["status"] for p in report["plugins"]}["exit-at-import"] == "failed"
    assert any("hang-at-import" in w for w in report["warnings"])

    from fixtures.images.imagedata import shapes

    data = shapes(tmp_path / "shapes", classes=2, per_class=6, size=16)
    run = cli("train", "image-classification", "--data", data, "--epochs", "1", "--set", "image_size=16", "--json", extra_path=PATHS, timeout=180)
    assert run.returncode == 0, run.stderr
    assert one_json_line(run)["status"] == "completed"


def test_a_plugin_broken_at_import_is_never_imported_here(monkeypatch):
    monkeypatch.syspath_prepend(str(AT_IMPORT_PLUGINS))
    monkeypatch.setenv("TRAINLAB_PLUGIN_IMPORT_TIMEOUT", "3")
    plugins = {p.name: p for p in PluginRegistry.discover().plugins}
    for name, words in AT_IMPORT.items():
        assert plugins[name].status == "failed" and words in plugins[name].message
    assert not {"hang_at_import_plugin", "exit_at_import_plugin", "crash_at_import_plugin"} & set(sys.modules)
    cache = json.loads(pluginprobe.cache_path().read_text())
    assert {entry["result"] for key, entry in cache.items() if "at-import" in key} == {"hung", "exited", "crashed"}


def test_a_verdict_holds_in_every_home_of_the_user(tmp_path, monkeypatch):
    """A plugin that hangs at import costs its time limit once, not again in each new TRAINLAB_HOME."""
    monkeypatch.syspath_prepend(str(AT_IMPORT_PLUGINS))
    monkeypatch.setenv("TRAINLAB_PLUGIN_IMPORT_TIMEOUT", "3")
    monkeypatch.setenv("TRAINLAB_SHARED_CACHE", str(tmp_path / "user-cache"))

    def at_import():
        return {p.name: p for p in PluginRegistry.discover().plugins if p.name in AT_IMPORT}

    first = at_import()
    assert all(p.status == "failed" and p.probe["cached"] is False for p in first.values())

    monkeypatch.setenv("TRAINLAB_HOME", str(tmp_path / "another-home"))
    again = at_import()
    for name, words in AT_IMPORT.items():
        assert again[name].status == "failed" and words in again[name].message and again[name].probe["cached"] is True
    assert (tmp_path / "user-cache" / "plugin-probes.json").is_file()

    # a home whose shared folder is its own cache keeps one file, as before
    monkeypatch.setenv("TRAINLAB_HOME", str(tmp_path / "self-contained"))
    monkeypatch.setenv("TRAINLAB_SHARED_CACHE", str(tmp_path / "self-contained" / "cache"))
    assert all(p.probe["cached"] is False for p in at_import().values())
    assert sorted(p.name for p in (tmp_path / "self-contained").rglob("plugin-probes.json")) == ["plugin-probes.json"]


def test_a_changed_plugin_is_tried_again(tmp_path, monkeypatch):
    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(AT_IMPORT_PLUGINS / "exit_at_import_plugin.py", folder)
    shutil.copytree(AT_IMPORT_PLUGINS / "trainlab_fixture_exit_at_import-1.0.dist-info", folder / "trainlab_fixture_exit_at_import-1.0.dist-info")
    monkeypatch.syspath_prepend(str(folder))

    def exit_plugin():
        return {p.name: p for p in PluginRegistry.discover().plugins}["exit-at-import"]

    assert exit_plugin().status == "failed"
    assert exit_plugin().probe["cached"] is True
    # the author fixes it: same version, new file contents
    (folder / "exit_at_import_plugin.py").write_text(
        "import trainlab\n\n\n@trainlab.hookimpl\ndef trainlab_api_version():\n    return '2.0'\n\n\n"
        "@trainlab.hookimpl\ndef trainlab_tasks():\n    return []\n"
    )
    fixed = exit_plugin()
    assert fixed.status == "ok" and fixed.probe == {**fixed.probe, "result": "loaded", "cached": False}


def test_module_lookup_imports_nothing(tmp_path, monkeypatch):
    package = tmp_path / "lookup_pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('imported lookup_pkg')\n")
    (package / "sub" / "__init__.py").write_text("raise RuntimeError('imported lookup_pkg.sub')\n")
    (package / "sub" / "mod.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = pluginprobe.locate_module("lookup_pkg.sub.mod")
    assert spec is not None and spec.origin == str(package / "sub" / "mod.py")
    assert pluginprobe.locate_module("lookup_pkg.sub.nothing") is None
    assert pluginprobe.locate_module("lookup_pkg_absent.mod") is None
    assert "lookup_pkg" not in sys.modules


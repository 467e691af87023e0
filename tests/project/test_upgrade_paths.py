"""What people set up before the packages moved keeps working, or says in one line what to do.

* An editable install made for the earlier layout (setuptools' finder maps
  ``trainlab`` onto core/, ``trainlab.desktop`` onto desktop/, ...) finds
  core/__init__.py, which says to set the environment up again.
* Module paths of the earlier layout import, for one release, as the module
  under its new name, with a DeprecationWarning naming it (trainlab.system.moved);
  names scripts imported from a module that is now a package of the same name
  (``from trainlab.pluginhost import registry``) too.
* Entry points recorded by the earlier layout (``trainlab.cli:main``, the
  built-in plugins as ``trainlab.plugins.image``) still load.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from setuptools.command.editable_wheel import _finder_template

from helpers import ROOT, subprocess_env
from trainlab.system.moved import MOVED, new_name

OLD_MAPPING = {"trainlab": ROOT / "core", "trainlab.desktop": ROOT / "desktop", "trainlab.plugins": ROOT / "plugins",
               "trainlab.resources": ROOT / "resources"}


def test_an_editable_install_of_the_earlier_layout_says_to_set_up_again(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    # the finder setuptools wrote into site-packages for the earlier layout's package-dir
    finder = _finder_template("__editable___trainlab_0_1_0_finder", {k: str(v) for k, v in OLD_MAPPING.items()}, {})
    (site / "__editable___trainlab_0_1_0_finder.py").write_text(finder, encoding="utf-8")
    # the console script that install recorded: trainlab = trainlab.cli:main; no site-packages of this
    # environment (-S), so only the old finder can find trainlab
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(site)!r})
        import __editable___trainlab_0_1_0_finder as finder
        finder.install()
        from trainlab.cli import main
        sys.exit(main())
    """)
    done = subprocess.run([sys.executable, "-I", "-S", "-c", script, "--version"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=60)
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "set it up again: `scripts/setup.sh`" in lines[0], done.stderr
    assert done.stdout == ""


CHECK_OLD_NAMES = """
import importlib, json, sys, warnings
results = {}
for old, new, name in json.loads(sys.argv[1]):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    real = importlib.import_module(new)
    results[old] = {
        "same": module is real,
        "has": hasattr(module, name),
        "warned": [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)],
    }
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from trainlab.pluginhost import registry
    from trainlab.cli import main
import trainlab.pluginhost.host, trainlab.cli.commands
results["names"] = {"same": registry is trainlab.pluginhost.host.registry and main is trainlab.cli.commands.main,
                    "warned": [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]}
print(json.dumps(results))
"""

# old name, new name, a name the old module had
OLD_NAMES = [
    ("trainlab.events", "trainlab.api.events", "EvalResult"),
    ("trainlab.engine.runner", "trainlab.engine.scripting", "run_training"),
    ("trainlab.engine.callbacks", "trainlab.api.callbacks", "Callback"),
    ("trainlab.runs", "trainlab.runfolder.index", "RunStore"),
    ("trainlab.queue.store", "trainlab.scheduling.queue_store", "QueueStore"),
    ("trainlab.launcher", "trainlab.shortcuts", "install"),
    ("trainlab.launch", "trainlab.engine.torchrun", "free_port"),
    ("trainlab.desktop.main_window", "trainlab_desktop.main_window", "MainWindow"),
    ("trainlab.desktop.worker", "trainlab_desktop.run.training_thread", "TrainingWorker"),
    ("trainlab.plugins.image", "trainlab_plugins.image", "trainlab_tasks"),
    ("trainlab.resources", "trainlab_resources", "resource_path"),
]


def test_old_module_names_import_the_moved_module_with_a_warning():
    import json

    done = subprocess.run([sys.executable, "-c", CHECK_OLD_NAMES, json.dumps(OLD_NAMES)], capture_output=True, text=True,
                          env=subprocess_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for old, new, name in OLD_NAMES:
        got = results[old]
        assert got["same"] and got["has"], (old, got)
        assert any(old in message and new in message for message in got["warned"]), (old, got["warned"])
    assert results["names"]["same"], results["names"]
    assert any("trainlab.pluginhost.registry" in m for m in results["names"]["warned"]), results["names"]


def test_every_old_name_leads_to_a_module_that_exists():
    import importlib.util

    for old, new in MOVED.items():
        assert new_name(old) == new
        assert importlib.util.find_spec(new) is not None, (old, new)
    assert new_name("trainlab.queue.scheduler") == "trainlab.scheduling.scheduler"
    assert new_name("trainlab.plugins.text.models") == "trainlab_plugins.text.models"
    assert new_name("trainlab.engine.plan") is None  # not moved: imported as itself


def test_entry_points_the_earlier_layout_recorded_still_load():
    import importlib.metadata as md

    script = md.EntryPoint("trainlab", "trainlab.cli:main", "console_scripts").load()
    gui = md.EntryPoint("trainlab-gui", "trainlab.cli:gui_main", "gui_scripts").load()
    image = md.EntryPoint("image-classification", "trainlab.plugins.image", "trainlab.plugins").load()
    text = md.EntryPoint("text-classification", "trainlab.plugins.text", "trainlab.plugins").load()
    kit = md.EntryPoint("trainlab", "trainlab.testing.pytest_plugin", "pytest11").load()
    import trainlab.cli.commands
    import trainlab_plugins.image
    import trainlab_plugins.text

    assert script is trainlab.cli.commands.main and gui is trainlab.cli.commands.gui_main
    assert image is trainlab_plugins.image and text is trainlab_plugins.text
    assert hasattr(image, "trainlab_tasks") and hasattr(kit, "trainlab_window")

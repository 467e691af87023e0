"""The plugin kit (trainlab.testing): its pytest plugin loads light, and its checks catch the slips they name.

The built-in plugins passing the kit is tests/plugins/test_plugin_kit_builtins.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from helpers import CARELESS_PLUGINS, FIXTURE_PLUGINS, KIT_PLUGINS, TESTS, subprocess_env, write_toy_csv
from trainlab.testing.checks import STATIC_CHECKS, StaticKit, run_check
from trainlab.testing.target import find_targets


@pytest.fixture
def kit_plugins(monkeypatch):
    for folder in (FIXTURE_PLUGINS, KIT_PLUGINS, CARELESS_PLUGINS):
        monkeypatch.syspath_prepend(str(folder))


def test_the_pytest_plugin_is_registered_and_imports_nothing_heavy():
    probe = textwrap.dedent(
        """
        import importlib.metadata as md, json, sys
        (ep,) = [ep for ep in md.entry_points(group="pytest11") if ep.name == "trainlab"]
        ep.load()
        print(json.dumps([ep.value, [m for m in ("torch", "PySide6", "pytestqt", "pyqtgraph", "numpy") if m in sys.modules]]))
        """
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=subprocess_env())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == ["trainlab.testing.pytest_plugin", []]


def test_the_fixtures_work_in_a_plugins_own_tests_without_pytest_qt(tmp_path):
    """A plugin author's test session: home, host, engine and tiny data from the fixtures; no pytest-qt: the window skips."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "test_author.py").write_text(
        textwrap.dedent(
            f"""
            import os
            import pytest

            @pytest.fixture
            def trainlab_plugin():
                return "toy"

            @pytest.fixture
            def trainlab_make_tiny_data():
                import sys
                sys.path.insert(0, {str(TESTS)!r})
                from helpers import write_toy_csv
                return lambda task_id, folder: write_toy_csv(folder / "rows.csv", rows=60)

            def test_train(trainlab_engine, trainlab_plugin_host, trainlab_tiny_data, trainlab_home):
                assert os.environ["TRAINLAB_HOME"] == str(trainlab_home)
                assert [p.name for p in trainlab_plugin_host.plugins] == ["toy"]
                outcome = trainlab_engine.train("toy-classification", trainlab_tiny_data("toy-classification"), epochs=1)
                assert outcome.status == "completed" and outcome.run_dir.startswith(str(trainlab_home))

            def test_window(trainlab_window):
                pass
            """
        ),
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:pytest-qt", "-p", "no:cacheprovider", "-rs", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env=subprocess_env([FIXTURE_PLUGINS]),
    )
    assert "1 passed, 1 skipped" in proc.stdout, proc.stdout + proc.stderr
    assert "needs pytest-qt" in proc.stdout


@pytest.mark.parametrize(
    "name, check, says",
    [
        ("unmarked-hooks", "hooks", "not marked @trainlab.hookimpl"),
        ("misspelt-hook", "hooks", "did you mean trainlab_tasks"),
        ("heavy", "entry_point_imports_no_torch", "imports torch"),
        ("missing-factory", "descriptors_and_factories", "does not import"),
        ("toy", "descriptors_and_factories", "3 task(s)"),
    ],
)
def test_static_checks_name_the_slip(kit_plugins, tmp_path, name, check, says):
    (target,) = find_targets(name)
    kit = StaticKit(target, home=tmp_path / "home")
    result = run_check(check, "", lambda: STATIC_CHECKS[check](kit))
    assert result.status == ("passed" if name == "toy" else "failed"), result
    assert says in result.message


def sloppy_kit(tmp_path, slip):
    from trainlab.testing.runs import TaskKit

    (target,) = find_targets("sloppy")
    static = StaticKit(target, home=tmp_path / "home")
    (tmp_path / "data").mkdir()
    data = write_toy_csv(tmp_path / "data" / "rows.csv", rows=96)
    return TaskKit(
        "sloppy-classification",
        data,
        tmp_path / "kit",
        static.registry,
        params={"slip": slip, "epochs": 3},
        predict_inputs=lambda: ["0.1,0.2,0.3,0.4"],
        home=static.home,
    )


@pytest.mark.parametrize(
    "slip, check, says",
    [
        ("keyerror", "bad_data_raises_data_error", "raised no trainlab.DataError naming the file: plugin 'sloppy' (task sloppy-classification) failed in prepare: KeyError"),
        ("nan", "loss_finite_and_falls", "the training loss is NaN from step"),
        ("flat", "loss_finite_and_falls", "did not fall"),
        ("unseeded", "same_seed_same_result", "different weights"),
        ("unseeded", "resume_is_exact", "differ from an uninterrupted run"),
        ("stray_write", "writes_only_its_run_folder", "sloppy-notes.txt"),
        ("socket", "opens_no_socket", "AF_INET"),
        ("no_export", "saved_model_loads", "cannot reload its exported model"),
    ],
)
def test_run_checks_name_the_slip(kit_plugins, tmp_path, slip, check, says):
    kit = sloppy_kit(tmp_path, slip)
    result = run_check(check, kit.task_id, getattr(kit, check))
    assert result.status == "failed" and says in result.message, result


def test_a_careful_task_passes_every_run_check(kit_plugins, tmp_path):
    from trainlab.testing.checks import RUN_CHECKS

    kit = sloppy_kit(tmp_path, "none")
    results = {name: run_check(name, kit.task_id, getattr(kit, name)) for name in RUN_CHECKS}
    assert {name: r.message for name, r in results.items() if r.status != "passed"} == {}


def test_expected_failures_xfail_with_their_reason_and_a_stale_one_fails(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "test_sloppy.py").write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(TESTS)!r})
            from helpers import write_toy_csv
            from trainlab.testing import PluginConformance

            class TestSloppy(PluginConformance):
                plugin = "sloppy"
                supports_predict = False
                run_params = {{"slip": "unseeded", "epochs": 2}}
                expected_failures = {{
                    "same_seed_same_result": "the batch order is shuffled by the system's random source",
                    "resume_is_exact[sloppy-classification]": "same reason",
                    "opens_no_socket": "listed by mistake",
                }}

                def make_tiny_data(self, task_id, folder):
                    return write_toy_csv(folder / "rows.csv", rows=96)
            """
        ),
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rxf", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env=subprocess_env([FIXTURE_PLUGINS, KIT_PLUGINS]),
    )
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "1 failed" in out and "2 xfailed" in out and "skipped" in out, out
    assert "opens_no_socket[sloppy-classification]: listed as an expected failure (listed by mistake) but passed" in out
    assert "the batch order is shuffled by the system's random source" in out

"""`trainlab plugins check NAME|PATH [--full] [--json]`: the kit's checks on an installed plugin, from the command line."""

from __future__ import annotations

import json

from helpers import CARELESS_PLUGINS, FIXTURE_PLUGINS, KIT_PLUGINS
from trainlab.testing.checks import RUN_CHECKS

PATHS = [FIXTURE_PLUGINS, KIT_PLUGINS, CARELESS_PLUGINS]


def test_a_built_in_plugin_passes_the_static_checks(cli):
    proc = cli("plugins", "check", "text-classification", "--json")
    assert proc.returncode == 0, proc.stderr
    (report,) = json.loads(proc.stdout)["plugins"]
    assert {c["check"]: c["status"] for c in report["checks"]} == {
        "api_version": "passed",
        "hooks": "passed",
        "entry_point_imports_no_torch": "passed",
        "descriptors_and_factories": "passed",
    }
    assert "passed the static checks" in proc.stderr


def test_each_failed_check_is_named_and_the_exit_is_1(cli):
    proc = cli("plugins", "check", "heavy", extra_path=PATHS)
    assert proc.returncode == 1
    assert "FAIL entry_point_imports_no_torch: importing the entry point heavy_plugin imports torch" in proc.stdout
    assert "trainlab: 1 check(s) failed: heavy: entry_point_imports_no_torch" in proc.stderr
    proc = cli("plugins", "check", "unmarked-hooks", "--json", extra_path=PATHS)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["failed"] == ["unmarked-hooks: hooks"]


def test_a_name_that_is_no_plugin_is_exit_2(cli, tmp_path):
    proc = cli("plugins", "check", "no-such-plugin")
    assert proc.returncode == 2 and "no-such-plugin: no installed plugin of that entry-point name" in proc.stderr
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    proc = cli("plugins", "check", str(tmp_path))
    assert proc.returncode == 2 and 'no [project.entry-points."trainlab.plugins"] table' in proc.stderr


def test_full_on_a_task_without_sample_data_says_what_it_skipped(cli):
    proc = cli("plugins", "check", "sloppy", "--full", "--json", extra_path=PATHS)
    assert proc.returncode == 0, proc.stderr
    (report,) = json.loads(proc.stdout)["plugins"]
    skipped = [c for c in report["checks"] if c["status"] == "skipped"]
    assert len(skipped) == len(RUN_CHECKS) and "declares no sample_data" in skipped[0]["message"]

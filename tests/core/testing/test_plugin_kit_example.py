"""examples/trainlab-anomaly, a third-party plugin of a family no built-in covers, installs from its folder and passes the kit.

Installed offline into a venv chained to this one, as a plugin's CI would
install it; its own tests (the conformance class and a test of what the
task is for) and ``trainlab plugins check anomaly --full`` run there.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers import ROOT
from test_plugin_kit_template import chained_venv

EXAMPLE = ROOT / "examples" / "trainlab-anomaly"


@pytest.mark.long
def test_the_anomaly_example_installs_and_passes_the_kit(tmp_path):
    import shutil

    # a copy: building the package writes its egg-info beside the sources, and the checkout stays as it is
    source = shutil.copytree(EXAMPLE, tmp_path / "trainlab-anomaly", ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    python = chained_venv(tmp_path / "venv")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index", "--no-build-isolation", "--no-deps", str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRAINLAB_HOME")}
    env["TRAINLAB_HOME"] = str(tmp_path / "home")
    check = subprocess.run([str(python), "-m", "trainlab", "plugins", "check", "anomaly", "--full"], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "anomaly passed every check" in check.stderr
    tests = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(source / "tests")],
        capture_output=True,
        text=True,
        timeout=400,
        cwd=tmp_path,
        env=env,
    )
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
    assert "17 passed, 1 skipped" in tests.stdout, tests.stdout[-2000:]

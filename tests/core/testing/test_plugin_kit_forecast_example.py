"""examples/trainlab-forecast, a third-party plugin of its own family with its own view, installs from its folder and passes the kit.

Installed offline into a venv chained to this one, as a plugin's CI would
install it; ``trainlab plugins check forecast --full`` and its own tests (the
conformance class, what the task is for, its view) run there.  A few
minutes on two cores: marked slow, run by .ci/run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT
from test_plugin_kit_template import chained_venv

EXAMPLE = ROOT / "examples" / "trainlab-forecast"


@pytest.mark.slow
def test_the_forecast_example_installs_and_passes_the_kit(tmp_path):
    # a copy: building the package writes its egg-info beside the sources, and the checkout stays as it is
    source = shutil.copytree(EXAMPLE, tmp_path / "trainlab-forecast", ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
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
    env["QT_QPA_PLATFORM"] = "offscreen"
    check = subprocess.run([str(python), "-m", "trainlab", "plugins", "check", "forecast", "--full"], capture_output=True, text=True,
                           timeout=300, cwd=tmp_path, env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "forecast passed every check" in check.stderr
    views = subprocess.run([str(python), "-c", "from importlib.metadata import entry_points; "
                            "print(sorted(e.name for e in entry_points(group='trainlab.views')))"], capture_output=True, text=True, env=env)
    assert "forecast-windows" in views.stdout, views.stdout + views.stderr
    tests = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(source / "tests")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=env,
    )
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
    assert " passed" in tests.stdout and "failed" not in tests.stdout, tests.stdout[-2000:]

"""A folder named ``trainlab`` beside the user's work hides the package: the CLI says so.

Reproduced as a user meets it: a clone of this repository (no ``__init__.py``
at its top) in the current folder, then ``python -m trainlab``, or the
``trainlab`` command with that folder on PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def beside(tmp_path, tmp_home) -> Path:
    """A working folder holding a clone-like folder named trainlab."""
    clone = tmp_path / "work" / "trainlab"
    (clone / "core").mkdir(parents=True)
    (clone / "README.md").write_text("# TrainLab\n", encoding="utf-8")
    (clone / "core" / "__init__.py").write_text("", encoding="utf-8")
    return clone.parent


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(extra)
    return env


def _shadowed_here(folder: Path) -> bool:
    """Whether this install lets a namespace folder win (an editable install does; a wheel does not)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import trainlab; print(getattr(trainlab, '__file__', None))"],
        capture_output=True, text=True, cwd=folder, env=_env(), timeout=60,
    )
    return probe.stdout.strip() == "None"


def _assert_explains(stderr: str, folder: Path) -> None:
    assert "Traceback" not in stderr, stderr
    assert str(folder / "trainlab") in stderr, stderr
    assert "rename or move that folder" in stderr, stderr
    assert "cannot import name" not in stderr and "has no attribute" not in stderr, stderr


def test_python_m_trainlab_names_the_shadowing_folder(beside):
    if not _shadowed_here(beside):
        pytest.skip("this installation is not hidden by a folder named trainlab (a wheel install)")
    done = subprocess.run([sys.executable, "-m", "trainlab", "--version"], capture_output=True, text=True, cwd=beside, env=_env(), timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    _assert_explains(done.stderr, beside)


def test_trainlab_command_names_the_shadowing_folder(beside, tmp_path):
    if not _shadowed_here(beside):
        pytest.skip("this installation is not hidden by a folder named trainlab (a wheel install)")
    command = Path(sys.executable).parent / "trainlab"
    if not command.exists():
        pytest.skip("no trainlab console script beside this Python")
    done = subprocess.run([str(command), "tasks", "--json"], capture_output=True, text=True, cwd=tmp_path, env=_env(PYTHONPATH=str(beside)), timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    _assert_explains(done.stderr, beside)
    assert str(beside / "trainlab") in json.loads(done.stdout)["error"]


def test_not_shadowed_the_commands_run(beside, tmp_path):
    """The check says nothing when the package is ours (from a folder without a trainlab folder in it)."""
    done = subprocess.run([sys.executable, "-m", "trainlab", "--version"], capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("trainlab ")

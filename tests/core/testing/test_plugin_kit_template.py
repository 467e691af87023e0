"""The plugin template (resources/trainlab_resources/templates/plugin, a copier template) renders a package whose own tests pass.

Rendered by ``trainlab plugins new`` for each family it has (a new family
too), installed offline into a venv chained to this one (``--no-index
--no-build-isolation --no-deps``), then its own test suite (the kit's
conformance class) and ``trainlab plugins check`` run in it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def chained_venv(folder: Path) -> Path:
    """A venv that sees this environment's packages, without pip of its own.

    Its .pth adds our site folders with ``site.addsitedir``, which also runs
    their own .pth files: TrainLab's editable install is one.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    python = folder / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True)
    ours = [p for p in sys.path if p and Path(p).is_dir() and "site-packages" in p]
    lines = [f"import site; site.addsitedir({folder!r})" for folder in ours]
    Path(site.stdout.strip(), "_trainlab_chain.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return python


def installed_copy(tmp_path: Path, family: str, name: str, dist: str) -> tuple[Path, Path, dict]:
    """``trainlab plugins new`` rendered into tmp_path, installed offline into a venv chained to this one."""
    from trainlab.cli.plugin_new import render

    made = render(name, family, distribution=dist, out=tmp_path / dist)
    out = Path(made["folder"])
    python = chained_venv(tmp_path / "venv")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index", "--no-build-isolation", "--no-deps", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    return out, python, made


# About a minute each on two shared cores: every family runs with --runslow (.ci/run does);
# test_plugin_scaffold.py checks each family's rendering in the everyday suite.
@pytest.mark.slow
@pytest.mark.parametrize(
    "family", ["classification", "regression", "multilabel", "object-detection", "text-generation", "new"]
)
def test_the_rendered_plugin_installs_and_passes_its_own_tests(tmp_path, family):
    pytest.importorskip("copier", reason="the template needs copier (pip install 'trainlab[kit]')")
    name, dist = f"rows-{family}", f"acme-{family}-rows"  # the entry point and the distribution, named apart
    out, python, made = installed_copy(tmp_path, family, name, dist)
    package = made["package"]
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} >= {
        "pyproject.toml",
        f"{package}/__init__.py",
        f"{package}/task.py",
        f"{package}/tiny_data.py",
        "tests/test_conformance.py",
        ".github/workflows/ci.yml",
    }
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRAINLAB_HOME")}
    env["TRAINLAB_HOME"] = str(tmp_path / "home")
    show = subprocess.run([str(python), "-m", "pip", "show", dist], capture_output=True, text=True, timeout=120, env=env)
    assert show.returncode == 0 and f"Name: {dist}" in show.stdout, show.stdout + show.stderr
    check = subprocess.run([str(python), "-m", "trainlab", "plugins", "check", name], capture_output=True, text=True, timeout=240, cwd=out, env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    tests = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], capture_output=True, text=True, timeout=400, cwd=out, env=env
    )
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
    assert "16 passed, 1 skipped" in tests.stdout, tests.stdout[-2000:]  # the window check: supports_window is off

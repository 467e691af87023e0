"""The built wheel: what it contains, and that it installs and runs offline.

The offline installation (docs/offline-install.md) carries a wheel to a
machine without network. This builds the wheel from a copy of the working
tree (so the shared checkout gets no build/ or egg-info), checks its content,
installs it with ``pip --no-index --no-deps`` into a fresh virtual
environment and runs the installed commands there.

How the fresh environment sees the dependencies already installed here: a
``.pth`` file in its site-packages that lists this environment's
site-packages folders. ``python -m venv --system-site-packages`` cannot do
it: from inside a venv it links the *base* interpreter's site-packages, not
this venv's. A ``.pth`` line only appends a folder to sys.path (the ``.pth``
files inside it are not run), so this checkout's editable-install hook stays
out and ``import trainlab`` finds the wheel's copy.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path, PurePosixPath

import pytest

from helpers import ROOT
import trainlab

# Each top-level source folder holds one package, installed under its own name.
PACKAGES = {"core": "trainlab", "desktop": "trainlab_desktop", "plugins": "trainlab_plugins", "resources": "trainlab_resources"}
BARE_NAMES = {"core", "desktop", "plugins", "resources", "scripts", "tests", "trainlab_dev"}


def _in_wheel(name: str) -> str | None:
    """Where a source file lands in the wheel (``core/trainlab/x.py`` -> ``trainlab/x.py``), or None."""
    parts = PurePosixPath(name).parts
    if len(parts) > 2 and PACKAGES.get(parts[0]) == parts[1]:
        return str(PurePosixPath(*parts[1:]))
    return None


def _source_files() -> list[str]:
    """Tracked and untracked-but-not-ignored files: what a commit would hold."""
    done = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    names = [os.fsdecode(n) for n in done.stdout.split(b"\0") if n]
    return [n for n in names if (ROOT / n).is_file()]  # deleted but still tracked


@pytest.fixture(scope="module")
def wheel_build(tmp_path_factory) -> tuple[Path, str]:
    """The built wheel and everything the build printed."""
    if shutil.which("git") is None:
        pytest.skip("git is needed to list the project's files")
    work = tmp_path_factory.mktemp("wheel-build")
    source = work / "src"
    for name in _source_files():
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    out = work / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    wheels = list(out.glob("trainlab-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0], build.stdout + build.stderr


@pytest.fixture(scope="module")
def wheel(wheel_build) -> Path:
    return wheel_build[0]


def _wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_wheel_is_named_for_this_version_and_any_platform(wheel):
    assert wheel.name == f"trainlab-{trainlab.__version__}-py3-none-any.whl"


def test_wheel_holds_only_the_trainlab_package(wheel):
    top = {PurePosixPath(name).parts[0] for name in _wheel_names(wheel)}
    assert top == {*PACKAGES.values(), f"trainlab-{trainlab.__version__}.dist-info"}, top
    assert not top & BARE_NAMES


def test_wheel_holds_every_resource_and_translation(wheel):
    names = _wheel_names(wheel)
    # Icons always; samples, vocabularies, translations and the plugin
    # template whenever the project has them: every file of the resources package.
    expected = set()
    for name in _source_files():
        path = PurePosixPath(name)
        if "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        if path.parts[0] == "resources" and (where := _in_wheel(name)):
            expected.add(where)
    for icon in ("trainlab.svg", "trainlab.ico", "trainlab.icns", *(f"trainlab-{s}.png" for s in (16, 32, 48, 64, 128, 256, 512))):
        assert f"trainlab_resources/icons/{icon}" in expected, f"resources/trainlab_resources/icons/{icon} is missing from the source tree"
    missing = sorted(expected - names)
    assert not missing, f"{len(missing)} resource files not in the wheel, e.g. {missing[:10]}"
    # The icon renderer is a developer tool (scripts/render_icons.py), not package data.
    assert not [n for n in names if n.endswith("render_icons.py")]


def test_wheel_holds_every_module(wheel):
    """A sub-package missing from pyproject's `packages` would be left out silently."""
    names = _wheel_names(wheel)
    expected = {where for name in _source_files() if name.endswith(".py") and (where := _in_wheel(name))}
    assert "trainlab/engine/scripting.py" in expected and "trainlab_desktop/app.py" in expected
    missing = sorted(expected - names)
    assert not missing, f"modules not in the wheel (is their folder found by [tool.setuptools.packages.find]?): {missing}"
    # core/__init__.py only answers an old editable install; it is no module of the product
    assert "__init__.py" not in names and not [n for n in names if n.startswith("core/")]


def test_wheel_build_prints_no_packaging_warning(wheel_build):
    """The first `make run` / `make test` shows this build's output: no wall of setuptools warnings."""
    _, output = wheel_build
    absent = sorted(set(re.findall(r"Package '([\w.]+)' is absent from the `packages` configuration", output)))
    assert not absent, f"add these to [tool.setuptools] packages in pyproject.toml: {absent}"
    assert "is absent from the `packages` configuration" not in output, output[-3000:]
    warnings = [line.strip() for line in output.splitlines() if "Warning:" in line and "distutils" not in line]
    assert not warnings, warnings[:10]


def test_wheel_declares_the_commands_and_builtin_plugins(wheel):
    with zipfile.ZipFile(wheel) as archive:
        entry_points = archive.read(f"trainlab-{trainlab.__version__}.dist-info/entry_points.txt").decode()
    assert "[console_scripts]\ntrainlab = trainlab.cli.commands:main" in entry_points
    assert "[gui_scripts]\ntrainlab-gui = trainlab.cli.commands:gui_main" in entry_points
    assert "[trainlab.plugins]" in entry_points


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed offline; returns its scripts folder."""
    venv = tmp_path_factory.mktemp("wheel-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    Path(site, "_trainlab_test_dependencies.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index", "--no-deps", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    return python.parent


def _run(scripts: Path, command: str, *args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    # Started from an empty folder: nothing of the checkout can be imported.
    return subprocess.run([str(scripts / command), *args], capture_output=True, text=True, timeout=240, cwd=tmp_path, env=env)


def test_installed_wheel_runs_from_its_own_files(installed, tmp_path):
    python = installed / ("python.exe" if os.name == "nt" else "python")
    probe = "import trainlab, trainlab.shortcuts as l; print(trainlab.__file__); print(l.icon_file())"
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    package, icon = (Path(line) for line in done.stdout.splitlines())
    venv = installed.parent
    assert venv in package.parents, f"imported {package}, not the wheel's copy"
    assert venv in icon.parents and icon.is_file()
    assert (installed / ("trainlab-gui.exe" if os.name == "nt" else "trainlab-gui")).is_file()


def test_installed_wheel_version(installed, tmp_path):
    done = _run(installed, "trainlab", "--version", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert trainlab.__version__ in done.stdout


def test_installed_wheel_doctor(installed, tmp_path):
    helped = _run(installed, "trainlab", "--help", tmp_path=tmp_path)
    if "doctor" not in helped.stdout:
        pytest.skip("`trainlab doctor` is not in this build's CLI yet")
    done = _run(installed, "trainlab", "doctor", "--json", tmp_path=tmp_path)
    # Exit 1 means "this machine cannot train at all", which a CPU is not.
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    import json

    report = json.loads(done.stdout)
    assert report["trainlab"] == trainlab.__version__
    # The built-in plugins are found through the wheel's own entry points.
    for plugin in ("image-classification", "text-classification"):
        assert plugin in done.stdout, f"doctor does not list the built-in plugin {plugin}"

"""The layers hold: the import-linter contracts in pyproject.toml, run in the suite.

lint-imports reads a package from the one folder it is found in, and
TrainLab's packages come from four (``package-dir`` in pyproject.toml: core/
is ``trainlab``, desktop/ is ``trainlab_desktop``, ...).  So the check runs on
a copy of the modules laid out as pip installs them.  It runs in a
subprocess: in this process ``trainlab`` is already imported from core/, and
import-linter would find that one.

By hand, the same report: ``python tests/test_import_contracts.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: import-linter depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"

WINDOW = "Nothing but the window imports trainlab_desktop"
QT = "Nothing but the window imports Qt or pyqtgraph"
PUBLIC_API = "Plugins import only the public API: the root package trainlab"


def installed_layout(dest: Path) -> Path:
    """Copy the modules of every package the wheel ships to where pip installs them, below ``dest``."""
    setup = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["setuptools"]
    package_dir = setup["package-dir"]
    for package in setup["packages"]:
        parts = package.split(".")
        # the longest mapped prefix decides the folder (trainlab_plugins.image -> plugins/trainlab_plugins/image)
        cut = max(i for i in range(len(parts) + 1) if i == 0 or ".".join(parts[:i]) in package_dir)
        source = ROOT / package_dir[".".join(parts[:cut])] if cut else ROOT
        source = source.joinpath(*parts[cut:])
        target = dest.joinpath(*parts)
        target.mkdir(parents=True, exist_ok=True)
        for module in source.glob("*.py"):
            shutil.copy2(module, target / module.name)
    return dest


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    """lint-imports with this project's contracts, on the ``trainlab`` found in ``tree``."""
    code = "from importlinter.cli import lint_imports_command; lint_imports_command(prog_name='lint-imports')"
    env = dict(os.environ, PYTHONPATH=str(tree), COLUMNS="200", NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-c", code, "--no-cache", "--no-logo", str(PYPROJECT)],
        cwd=tree,  # lint-imports puts its working folder first on sys.path
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def tree(tmp_path) -> Path:
    return installed_layout(tmp_path / "site-packages")


def test_the_import_contracts_are_kept(tree):
    result = lint_imports(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    # all three ran (a contract that failed to load would not be listed)
    for name in (WINDOW, QT, PUBLIC_API):
        assert f"{name} KEPT" in result.stdout, result.stdout


def test_the_copy_holds_every_module_the_checkout_has(tree):
    """A module missing from the copy would escape the contracts unseen."""
    copied = {p.relative_to(tree).as_posix() for p in tree.rglob("*.py")}
    expected = {
        "trainlab/cli.py",
        "trainlab/engine/runner.py",
        "trainlab/desktop/main_window.py",
        "trainlab/plugins/image/task.py",
        "trainlab/plugins/text/models.py",
        "trainlab/resources/__init__.py",
    }
    assert expected <= copied
    in_checkout = sum(1 for folder in ("core", "desktop", "plugins") for _ in (ROOT / folder).rglob("*.py"))
    in_checkout += sum(1 for _ in (ROOT / "resources").glob("*.py"))  # resources/trainlab_resources/icons/ holds a dev script, not a module
    assert len(copied) == in_checkout


# Each line breaks one contract when added to one module of the copy; the
# report must name the contract and the import (module and line).
VIOLATIONS = {
    "engine imports the window": (
        "trainlab/runs.py",
        "from trainlab_desktop import formatting\n",
        WINDOW,
        "trainlab.runfolder.index -> trainlab_desktop.common.formatting",
    ),
    "engine imports Qt": (
        "trainlab/engine/loop.py",
        "import PySide6.QtCore\n",
        QT,
        "trainlab.engine.loop -> PySide6",
    ),
    "plugin reaches an internal module from inside a function": (
        "trainlab/plugins/text/data.py",
        "def _store():\n    from trainlab.system.paths import model_store_dir\n\n    return model_store_dir()\n",
        PUBLIC_API,
        "trainlab_plugins.text.data -> trainlab.system.paths",
    ),
    "plugin imports an API module directly instead of the root package": (
        "trainlab/plugins/image/folder.py",
        "from trainlab.api import DataError as _DataError\n",
        PUBLIC_API,
        "trainlab_plugins.image.folder -> trainlab.api",
    ),
}


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_a_forbidden_import_breaks_its_contract(tree, case):
    module, line, contract, reported = VIOLATIONS[case]
    path = tree / module
    path.write_text(path.read_text(encoding="utf-8") + "\n\n" + line, encoding="utf-8")
    result = lint_imports(tree)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{contract} BROKEN" in result.stdout, result.stdout
    assert reported in result.stdout, result.stdout
    assert "Contracts: 2 kept, 1 broken." in result.stdout, result.stdout


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        done = lint_imports(installed_layout(Path(scratch)))
    print(done.stdout + done.stderr, end="")
    sys.exit(done.returncode)

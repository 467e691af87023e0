"""The layers hold: the import-linter contracts in pyproject.toml, on the tree as it is.

``lint-imports`` with no arguments, from the repository root, in the
environment ``make run`` sets up: every package is an ordinary folder that
the editable install points at, so import-linter reads the checkout itself.
The cases that break a contract on purpose run on a copy of the four source
folders (the suite must not edit the checkout under other tests).

By hand, the same report: ``lint-imports`` (or ``python tests/project/test_import_contracts.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Found from this file, not from helpers: the file also runs as a script.
ROOT = next(folder for folder in Path(__file__).resolve().parents if (folder / "pyproject.toml").is_file())
SOURCES = {"core": "trainlab", "desktop": "trainlab_desktop", "plugins": "trainlab_plugins", "resources": "trainlab_resources"}

LAYERS = "The core's packages, each above the ones it uses"
CYCLES = "No cycles between the modules and packages of one package, at any depth"
WINDOW = "Nothing but the window imports trainlab_desktop"
QT = "Nothing but the window imports Qt or pyqtgraph"
PUBLIC_API = "Plugins import only the public API: the root package trainlab"
RESOURCES = "The resources package is data: it imports no TrainLab code"
CONTRACTS = (LAYERS, CYCLES, WINDOW, QT, PUBLIC_API, RESOURCES)


def lint_imports(cwd: Path, pythonpath: str | None = None) -> subprocess.CompletedProcess:
    """``lint-imports`` as a user runs it: no arguments, the contracts of ``cwd``'s pyproject.toml."""
    code = "import sys; from importlinter.cli import lint_imports_command; sys.argv[0] = 'lint-imports'; lint_imports_command()"
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run([sys.executable, "-c", code, "--no-cache", "--no-logo"], cwd=cwd, env=env, capture_output=True, text=True, timeout=240)


def test_the_contracts_are_kept_on_the_checkout():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in CONTRACTS:  # each one ran: a contract that failed to load is not listed
        assert f"{name} KEPT" in result.stdout, result.stdout
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in result.stdout, result.stdout


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """The four source folders and pyproject.toml, copied (a contract is broken in the copy, not here)."""
    dest = tmp_path_factory.mktemp("tree")
    for folder, package in SOURCES.items():
        shutil.copytree(ROOT / folder / package, dest / folder / package, ignore=shutil.ignore_patterns("__pycache__", "samples", "templates"))
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


# Each line breaks one contract when added to one module of the copy; the
# report must name the contract and the import.
VIOLATIONS = {
    "engine imports the window": (
        "core/trainlab/runfolder/index.py",
        "from trainlab_desktop.common import formatting\n",
        WINDOW,
        "trainlab.runfolder.index -> trainlab_desktop.common.formatting",
    ),
    "engine imports Qt": ("core/trainlab/engine/loop.py", "import PySide6.QtCore\n", QT, "trainlab.engine.loop -> PySide6"),
    "plugin reaches an internal module from inside a function": (
        "plugins/trainlab_plugins/text/data.py",
        "def _store():\n    from trainlab.system.paths import model_store_dir\n\n    return model_store_dir()\n",
        PUBLIC_API,
        "trainlab_plugins.text.data -> trainlab.system.paths",
    ),
    "plugin imports an API module directly instead of the root package": (
        "plugins/trainlab_plugins/image/folder.py",
        "from trainlab.api.errors import DataError as _DataError\n",
        PUBLIC_API,
        "trainlab_plugins.image.folder -> trainlab.api.errors",
    ),
    "the run folder reaches up into the engine": (
        "core/trainlab/runfolder/index.py",
        "def _late():\n    from trainlab.engine import plan\n\n    return plan\n",
        LAYERS,
        "trainlab.runfolder.index -> trainlab.engine.plan",
    ),  # and a cycle: the engine imports the run folder
    "two modules of one package import each other": (
        "core/trainlab/system/paths.py",
        "from trainlab.system import fileio as _fileio\n",
        CYCLES,
        "No cycles are allowed in trainlab.system",
    ),
}


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_a_forbidden_import_breaks_its_contract(copy, case, tmp_path):
    module, line, contract, reported = VIOLATIONS[case]
    tree = tmp_path / "tree"
    shutil.copytree(copy, tree)
    path = tree / module
    path.write_text(path.read_text(encoding="utf-8") + "\n\n" + line, encoding="utf-8")
    result = lint_imports(tree, os.pathsep.join(str(tree / folder) for folder in SOURCES))
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{contract} BROKEN" in result.stdout, result.stdout
    assert reported in result.stdout, result.stdout
    broken = 2 if contract == LAYERS else 1  # going up a layer closes a cycle with the import coming down
    assert f"Contracts: {len(CONTRACTS) - broken} kept, {broken} broken." in result.stdout, result.stdout


if __name__ == "__main__":
    done = lint_imports(ROOT)
    print(done.stdout + done.stderr, end="")
    sys.exit(done.returncode)

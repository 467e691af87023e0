"""Only desktop/ imports Qt or pyqtgraph; the engine, plugins and CLI run headless.

tests/project/test_import_contracts.py holds the layers with import-linter.  This
check adds what those contracts cannot say: the CLI's one permitted import of
the window stays inside a function (the contract only names the import), and
Qt bindings that nothing imports yet (shiboken6, PyQt) stay out too.
"""

import ast
import subprocess
import sys
from pathlib import Path

from helpers import FIXTURE_PLUGINS, ROOT, subprocess_env, write_toy_csv

QT = ("PySide6", "PyQt5", "PyQt6", "shiboken6", "pyqtgraph")


def imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node, node.module


def test_core_and_plugins_never_import_qt():
    offenders = []
    for folder in ("core", "plugins"):
        for path in (ROOT / folder).rglob("*.py"):
            for node, name in imports(path):
                if name.split(".")[0] in QT:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
                if name.startswith("trainlab_desktop") and node.col_offset == 0:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name} at module level")
    assert offenders == []


def test_a_run_works_with_qt_unavailable(tmp_path):
    """Like a headless install without Qt: block PySide6 and pyqtgraph, train and predict."""
    data = write_toy_csv(tmp_path / "toy.csv")
    code = (
        "import sys\n"
        f"for name in {QT!r}: sys.modules[name] = None\n"
        "from trainlab.cli.commands import main\n"
        f"rc = main(['train', 'toy-classification', '--data', {str(data)!r}, '--epochs', '1', '--out', {str(tmp_path / 'run')!r}])\n"
        "assert rc == 0, rc\n"
        f"rc = main(['predict', {str(tmp_path / 'run')!r}, '1,2,3,4'])\n"
        "assert rc == 0, rc\n"
        "print('HEADLESS-OK')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env([FIXTURE_PLUGINS]), timeout=180)
    assert "HEADLESS-OK" in result.stdout, result.stderr

"""Imports of TrainLab's own modules inside functions are there for a start-up cost, and listed.

``tests/lazy_imports.txt`` is the one list of them, each with its reason;
``tests/lazy_imports.py`` measures the start-up paths and works the reasons
out. A new import inside a function that moving to module level would not
slow down, or one that is not listed, fails here; so does a module name held
in a string and imported by ``importlib.import_module`` or ``__import__``,
which no checker sees, anywhere but ``trainlab.system.moved`` (the old names
of the earlier layout).
"""

from __future__ import annotations

import ast

import lazy_imports

MOVED = lazy_imports.ROOT / "core" / "trainlab" / "system" / "moved.py"


def test_every_import_inside_a_function_is_listed_with_the_start_up_cost_it_saves():
    lines, movable = lazy_imports.table()
    assert not movable, "these imports cost no start-up inside their function: move them to module level\n" + "\n".join(
        f"  {m.module} line {m.line} ({m.function}) -> {m.target}" for m in movable
    )
    listed = [line for line in lazy_imports.LISTING.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    missing = sorted(set(lines) - set(listed))
    stale = sorted(set(listed) - set(lines))
    assert not missing and not stale, (
        "tests/lazy_imports.txt is out of step with the code (python tests/lazy_imports.py --write rewrites it):\n"
        + "".join(f"  not listed: {line}\n" for line in missing)
        + "".join(f"  listed, not so: {line}\n" for line in stale)
    )


def test_each_start_up_path_is_measured_and_stays_lean():
    loaded = lazy_imports.startup_modules()
    assert set(loaded) == set(lazy_imports.PATHS)
    # what the reasons rest on: the cheap paths load a few modules, and none the training loop needs
    assert len(loaded["import trainlab"]) < 8, sorted(loaded["import trainlab"])
    loop = {"trainlab.engine.plan", "trainlab.engine.execute", "trainlab.engine.loop", "trainlab.engine.evaluation"}
    for path in ("import trainlab", "trainlab --help", "trainlab plugins", "the window's first paint"):
        assert not loop & loaded[path], (path, sorted(loop & loaded[path]))


def _literal_own_name(node: ast.Call) -> str | None:
    """The own module a call imports by a name written in the call, or None."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in ("import_module", "__import__") or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        text = first.value
    elif isinstance(first, ast.JoinedStr) and first.values and isinstance(first.values[0], ast.Constant):
        text = str(first.values[0].value)
    else:
        return None
    return text if text.split(".")[0] in lazy_imports.OWN else None


def test_no_module_of_trainlab_is_imported_by_a_name_in_a_string():
    found = []
    for module, path in lazy_imports.module_files().items():
        if path == MOVED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and (name := _literal_own_name(node)):
                found.append(f"{module} line {node.lineno}: {name}")
    assert not found, "import these with an import statement (the layer checks read those):\n" + "\n".join(found)


def test_the_literal_name_check_finds_what_it_looks_for():
    calls = [node for node in ast.walk(ast.parse(
        "import importlib\n"
        "importlib.import_module('trainlab.engine.plan')\n"
        "__import__(f'trainlab_desktop.{x}')\n"
        "importlib.import_module(name)\n"
        "importlib.import_module('json')\n"
    )) if isinstance(node, ast.Call)]
    assert [_literal_own_name(c) for c in calls] == ["trainlab.engine.plan", "trainlab_desktop.", None, None]

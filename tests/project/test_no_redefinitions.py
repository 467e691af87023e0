"""No module defines the same top-level function or class twice.

A second ``def`` of a name silently replaces the first for every importer;
the test helpers once lost one that way, and only the tests that used the
first definition said so, far from the cause.
"""

from __future__ import annotations

import ast
import collections

from helpers import ROOT

FOLDERS = ("core", "desktop", "plugins", "resources", "scripts", "bench", "tests")


def _redefinitions(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = collections.Counter(
        node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    )
    return sorted(name for name, count in names.items() if count > 1)


def test_no_module_defines_a_top_level_name_twice():
    found = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            twice = _redefinitions(path)
            if twice:
                found[str(path.relative_to(ROOT))] = twice
    assert found == {}


def test_the_check_sees_a_second_definition(tmp_path):
    module = tmp_path / "twice.py"
    module.write_text("def f():\n    return 1\n\n\nclass C: ...\n\n\ndef f():\n    return 2\n", encoding="utf-8")
    assert _redefinitions(module) == ["f"]

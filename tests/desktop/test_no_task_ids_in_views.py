"""The window knows task families and declared inputs, never the built-in tasks by name.

A plugin's task must get every view a built-in gets: so no code under
``desktop/`` may pick a behaviour by a built-in task id (comments and
docstrings may mention one).
"""

from __future__ import annotations

import ast

import pytest

from helpers import ROOT

DESKTOP = ROOT / "desktop"
BUILTIN_TASK_IDS = (
    "image-classification", "text-classification", "image-regression", "text-regression",
    "image-multilabel", "text-multilabel",
)


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (of the module, a class, a function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def task_ids_in_code(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    skip = docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            hits += [(node.lineno, task) for task in BUILTIN_TASK_IDS if task in node.value]
    return hits


@pytest.mark.parametrize("path", sorted(DESKTOP.rglob("*.py")), ids=lambda p: p.name)
def test_no_desktop_module_names_a_builtin_task(path):
    hits = task_ids_in_code(path.read_text(encoding="utf-8"))
    assert not hits, f"{path.name} names built-in tasks in code: " + ", ".join(f"line {n}: {t}" for n, t in hits)


def test_the_check_sees_a_task_id_in_code_but_not_in_a_docstring_or_comment():
    source = (
        '"""Mentions image-classification in a docstring."""\n'
        "# and text-regression in a comment\n"
        "def f():\n"
        '    """image-multilabel here is fine too."""\n'
        '    return task == "text-classification" or f"{x}image-regression"\n'
    )
    assert task_ids_in_code(source) == [(5, "text-classification"), (5, "image-regression")]

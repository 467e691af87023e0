"""No state is compared with a literal word: each kind of state has its type.

A run's status, the window's state, a queue entry's, a sweep trial's, a
plugin's load status and a conformance check's verdict are each a
``StrEnum`` (whose members equal the words on disk).  (A progress event's
``Phase`` is one too, but its ``train`` is also the name of a split, which
is no state.)  A
comparison such as ``status == "completed"`` or ``state in ("queued",
"running")`` in the source bypasses them: a renamed or added state would
leave it silently wrong.  This scans every module of core/, desktop/ and
plugins/ for such comparisons.
"""

from __future__ import annotations

import ast
from pathlib import Path

from trainlab.pluginhost.status import PluginStatus
from trainlab.runfolder.status import INTERRUPTED, UNKNOWN, EntryState, RunStatus, SessionState, TrialState
from trainlab.testing.checks import CheckStatus

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("core", "desktop", "plugins")
STATE_TYPES = (RunStatus, SessionState, EntryState, TrialState, PluginStatus, CheckStatus)
WORDS = frozenset(m.value for kind in STATE_TYPES for m in kind) | {INTERRUPTED, UNKNOWN}


def _words(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in WORDS else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [w for element in node.elts for w in _words(element)]
    return []


def literal_state_comparisons(source: str, filename: str = "<source>") -> list[str]:
    """``file:line: code`` of each comparison of a value with a literal state word.

    ``==``/``!=`` with the word on either side, ``in``/``not in`` a literal
    collection holding one, and a ``match`` case on one.  ``"word" in
    mapping`` (a key looked up) is no comparison of a state.
    """
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Compare):
            left, words = node.left, []
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
                    words += _words(left) + _words(right)
                elif isinstance(op, (ast.In, ast.NotIn)):
                    words += _words(right)
                left = right
            if words:
                found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.MatchValue) and _words(node.value):
            found.append(f"{filename}:{node.lineno}: case {ast.unparse(node.value)}")
    return found


def test_the_scan_finds_each_form_of_literal_comparison():
    code = '''
if outcome.status == "completed": pass
if "failed" != record["status"]: pass
if entry.state in ("queued", "running"): pass
if state not in {"paused"}: pass
match state:
    case "pruned": pass
if "stopped" in runs: pass
if kind == "sweep": pass
if status == RunStatus.COMPLETED: pass
'''
    found = literal_state_comparisons(code)
    assert [line.split(":")[1] for line in found] == ["2", "3", "4", "5", "7"]


def test_no_source_compares_a_state_with_a_literal_word():
    found = []
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            found += literal_state_comparisons(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not found, "compare with the state's enum member (trainlab.runfolder.status and the like):\n" + "\n".join(found)

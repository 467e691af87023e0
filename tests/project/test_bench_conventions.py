"""Every bench takes --json and --quick and ends with one JSON object; side by side runs alternate.

The options and the output come from bench/pairs.py (``bench_parser``,
``emit``), so a bench that builds its own parser or prints its own JSON
drifts from the others: read from the source, without running the benches.
"""

from __future__ import annotations

import ast
import io
import json
from contextlib import redirect_stdout

import pytest

from helpers import ROOT

BENCH = ROOT / "bench"


def scripts() -> list:
    """The bench scripts: the files under bench/ that run as a program."""
    return sorted(p for p in BENCH.glob("*.py") if 'if __name__ == "__main__"' in p.read_text(encoding="utf-8"))


def calls(path) -> set[str]:
    """The names called in ``path``: ``f(...)`` as ``f``, ``a.f(...)`` as ``a.f``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                found.add(func.id)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                found.add(f"{func.value.id}.{func.attr}")
    return found


@pytest.mark.parametrize("script", scripts(), ids=lambda p: p.name)
def test_each_bench_takes_the_shared_options_and_emits_one_object(script):
    names = calls(script)
    assert "bench_parser" in names, f"{script.name}: its options from pairs.bench_parser (--json, --quick)"
    assert "emit" in names, f"{script.name}: its figures through pairs.emit (the last line of stdout)"
    assert "argparse.ArgumentParser" not in names, f"{script.name}: a parser of its own"


def test_the_benches_are_found():
    names = {p.name for p in scripts()}
    assert {"pairs.py", "builtin_families.py"}.isdisjoint(names)  # helpers, not benches
    assert {"loss_window.py", "crash_battery.py", "gui_latency.py"} <= names


@pytest.fixture()
def pairs(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import pairs

    return pairs


def test_run_pairs_alternates_abba_with_a_set_up_per_pair(pairs):
    seen: list[str] = []
    results = pairs.run_pairs({"a": lambda: seen.append("a") or len(seen), "b": lambda: seen.append("b") or len(seen)}, 4,
                              before=lambda pair: seen.append(f"pair {pair}"))  # fmt: skip
    assert seen == ["pair 0", "a", "b", "pair 1", "b", "a", "pair 2", "b", "a", "pair 3", "a", "b"]
    assert results == {"a": [2, 6, 9, 11], "b": [3, 5, 8, 12]}


def test_emit_prints_one_object_naming_the_bench(pairs):
    args = pairs.bench_parser("A bench.\n\nMore.", "tiny").parse_args(["--quick", "--json"])
    out = io.StringIO()
    with redirect_stdout(out):
        assert pairs.emit("demo", args, {"ratio": 1.5}) == 0
    (line,) = out.getvalue().splitlines()
    figures = json.loads(line)
    assert figures["bench"] == "demo" and figures["quick"] is True and figures["ratio"] == 1.5
    assert "load_average_end" in figures
    assert pairs.speaker(args)("silent with --json") is None

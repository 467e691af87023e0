"""bench/pairs.py's instruction counter: callgrind counts only the region a bench switches on.

What ``bench/engine_overhead.py --instructions`` rests on (issue 16, 2b): a
count that the load of a shared machine cannot move, of the measured region
alone. A child Python switches counting on around a loop of N, then 2N,
iterations; the counts must grow with the loop and repeat run to run.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

pytestmark = [
    pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("callgrind_control") is None, reason="needs valgrind"),
]

LOOP = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {bench!r})
    from pairs import count_region
    n = int(sys.argv[1])
    total = 0
    count_region(True)
    for i in range(n):
        total += i * i
    count_region(False)
    for i in range(10 * n):  # not counted
        total -= i
""")


def test_only_the_switched_on_region_is_counted_and_it_repeats(tmp_path):
    from pairs import callgrind_region_instructions

    script = tmp_path / "loop.py"
    script.write_text(LOOP.format(bench=str(BENCH)))
    count = {n: callgrind_region_instructions([sys.executable, str(script), str(n)], str(tmp_path / f"cg.{n}")) for n in (20_000, 40_000)}
    again = callgrind_region_instructions([sys.executable, str(script), "20000"], str(tmp_path / "cg.again"))
    small, large = count[20_000], count[40_000]
    assert small and large and again
    # doubling the counted loop adds about the loop again (the toggles cost the same each run),
    # and the uncounted loop, ten times longer, is not in the count
    loop = large - small
    assert 0.7 * loop < small < 1.5 * loop + 2_000_000
    # the toggles themselves (callgrind_control's round trip) vary by a few million
    # instructions a pair: nothing next to engine_overhead's ~700 million a side
    assert abs(again - small) < 0.02 * small + 6_000_000


def test_counting_is_a_no_op_outside_callgrind(monkeypatch):
    from pairs import REGION_ENV, count_region

    monkeypatch.delenv(REGION_ENV, raising=False)
    count_region(True)  # no callgrind_control call, no error
    count_region(False)

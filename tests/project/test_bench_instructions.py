"""bench/pairs.py's instruction counter: callgrind counts only the region a bench switches on.

What ``bench/engine_overhead.py --instructions`` rests on: a
count that the load of a shared machine cannot move, of the measured region
alone. A child Python switches counting on around a loop of N, then 2N,
iterations; the counts must grow with the loop and repeat run to run.
"""

from __future__ import annotations

import shutil
import sys
import textwrap

import pytest

from helpers import ROOT

BENCH = ROOT / "bench"
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
    for i in range(int(sys.argv[2])):  # not counted
        total -= i
""")


def test_only_the_switched_on_region_is_counted_and_it_repeats(tmp_path):
    from pairs import callgrind_region_instructions

    script = tmp_path / "loop.py"
    script.write_text(LOOP.format(bench=str(BENCH)))
    count = {n: callgrind_region_instructions([sys.executable, str(script), str(n), "200000"], str(tmp_path / f"cg.{n}")) for n in (20_000, 40_000)}
    again = callgrind_region_instructions([sys.executable, str(script), "20000", "0"], str(tmp_path / "cg.again"))
    small, large = count[20_000], count[40_000]
    assert small and large and again
    # The count grows with the counted loop, and the uncounted loop after it (200,000
    # iterations, ten counted loops' worth) is not in it: without it ("again") the
    # count is about the same.  The bounds are loose on purpose: in this tiny process
    # the same counted loop's count varies by a fifth from run to run, and more on a
    # CI machine; the benches' own, far longer, counts repeat far closer.
    loop = large - small
    assert loop > 0.3 * small, "the count grows with the counted loop"
    assert abs(again - small) < 0.25 * small + 6_000_000, "the uncounted loop stays out of the count"


def test_counting_is_a_no_op_outside_callgrind(monkeypatch):
    from pairs import REGION_ENV, count_region

    monkeypatch.delenv(REGION_ENV, raising=False)
    count_region(True)  # no callgrind_control call, no error
    count_region(False)

"""The crash battery itself (bench/crash_battery.py), on a few kills: slow, opt-in."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import ROOT


@pytest.mark.slow
def test_six_kills_one_in_each_phase_all_recover_bit_identically(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "crash_battery.py"), "--kills", "6", "--seed", "1", "--json"],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["columns"] == {column: 6 for column in summary["columns"]}, result.stderr[-3000:]
    assert result.returncode == 0
    assert summary["phases"] == {"start-up": 1, "first": 1, "mid-epoch": 1, "checkpoint": 1, "eval": 1, "export": 1}

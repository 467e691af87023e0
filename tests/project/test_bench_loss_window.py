"""bench/loss_window.py in a small configuration: both sides run, sum alike, and report."""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import ROOT


def test_loss_window_bench_reports_both_sides():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "loss_window.py"), "--steps", "300", "--rounds", "2", "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["six_operations"] > 0 and result["loss_window"] > 0 and result["steps"] == 300
    assert len(result["spread"]["loss_window"]) == 2

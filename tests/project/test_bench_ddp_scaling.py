"""bench/ddp_scaling.py in its smallest configuration: both workloads run through the real command and report."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import ROOT


@pytest.mark.slow
@pytest.mark.parametrize("workload, extra", [("image", ["--images", "6"]), ("mlp", ["--rows", "600", "--hidden", "32"])])
def test_ddp_scaling_runs_one_pair(workload, extra):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "ddp_scaling.py"), "--workload", workload, *extra, "--epochs", "2", "--pairs", "1", "--json"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["workload"] == workload and summary["ratio"] > 0 and summary["spread"]["n"] == 1
    (pair,) = summary["rounds"]
    assert pair["one"]["samples"] == pair["two"]["samples"] > 0  # the same work on both sides
    assert pair["one"]["steps"] == pair["two"]["steps"]  # the same global batch: the same optimizer steps
    if workload == "image":  # the plain DDP script beside it, the same steps, one process and two ranks
        assert pair["peer"]["one"]["steps"] == pair["peer"]["two"]["steps"] == pair["one"]["steps"]
        assert pair["peer"]["ratio"] > 0 and summary["peer"]["engine_efficiency"]["n"] == 1
        # the cores' ceiling: two copies without communication, each the per-rank batch, the same steps
        apart = pair["peer"]["apart"]
        assert apart["steps"] == pair["one"]["steps"] and len(apart["copies_seconds"]) == 2
        assert apart["seconds"] == max(apart["copies_seconds"]) > 0
        assert summary["apart"]["ratio"] == pytest.approx(pair["peer"]["apart_ratio"], abs=1e-6) and summary["apart"]["reaches_goal"] == (summary["apart"]["ratio"] >= 1.6)
    else:
        assert "peer" not in pair

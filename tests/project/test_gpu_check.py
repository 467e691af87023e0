"""bench/gpu_check.sh, the GPU check, dry-run on the CPU (docs/gpu-check.md).

The script is run once in a while on a lent GPU, with no second try: these
tests keep it from rotting in between.  The quick one runs the installation
from a wheel built here (pip --no-index --no-deps, as on the GPU machine),
an engine check and a pending one; the slow one runs every check of the
registry at tiny scale.  Both read the one JSON line the script ends with.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT

SCRIPT = ROOT / "bench" / "gpu_check.sh"
sys.path.insert(0, str(ROOT / "bench"))
from gpucheck.registry import CHECKS  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash and timeout")


def run_script(tmp_path: Path, *args: str, timeout: float = 600) -> tuple[subprocess.CompletedProcess, dict, dict]:
    out = tmp_path / "out"
    env = dict(os.environ, PYTHON=sys.executable, TMPDIR=str(tmp_path))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--cpu-dry-run", "--out", str(out), *args], capture_output=True, text=True, timeout=timeout, env=env
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, proc.stderr[-3000:]
    summary = json.loads(lines[-1])
    report = json.loads((out / "gpu_check.json").read_text()) if (out / "gpu_check.json").exists() else {}
    return proc, summary, report


def assert_dry_run_result(name: str, entry: dict) -> None:
    check = {c.name: c for c in CHECKS}[name]
    if check.pending:
        assert entry["status"] == "skipped" and "not written yet" in entry["reason"], entry
    elif check.needs_cuda:
        assert entry["status"] == "skipped" and entry["reason"].startswith("no CUDA"), (name, entry)
    else:
        assert entry["status"] == "pass", (name, entry)


@pytest.mark.long
def test_quick_dry_run_installs_from_a_wheel_and_runs_an_engine_check(tmp_path):
    names = ["install", "tf32", "nccl_world_size_1"]
    proc, summary, report = run_script(tmp_path, "--only", ",".join(names), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert summary["ok"] is True and summary["dry_run"] is True and summary["device"] == "cpu"
    assert list(summary["checks"]) == names
    for name in names:
        assert_dry_run_result(name, summary["checks"][name])
    install = report["checks"]["install"]
    assert install["checks"]["trainlab imported from the wheel install"] is True
    assert install["checks"]["no Qt module imported by the engine, CLI and plugins"] is True
    assert "pip install --no-index --no-deps" in report["install"]
    # the CUDA-only check really ran its code (two engine runs) on the CPU: its assertions are there
    tf32 = report["checks"]["tf32"]["checks"]
    assert tf32["engine: run completed"] is True and tf32["tf32_off: run completed"] is True
    assert tf32["torch's TF32 switches all readable after the engine's set-up"] is True
    assert (tmp_path / "out" / "logs" / "tf32.log").read_text().count("PASS") >= 3
    group = report["checks"]["nccl_world_size_1"]["checks"]
    assert group["a batch-norm model's group run completed"] is True and group["both evaluations ran, with an accuracy"] is True


def test_a_budget_too_small_skips_checks_and_still_prints_the_line(tmp_path):
    proc, summary, _ = run_script(tmp_path, "--no-install", "--budget", "3", timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert set(summary["checks"]) == {c.name for c in CHECKS}
    ran = [n for n, e in summary["checks"].items() if "out of time budget" not in e.get("reason", "") and "not written yet" not in e.get("reason", "")]
    assert ran == [], ran


@pytest.mark.slow
def test_full_dry_run_runs_every_check(tmp_path):
    proc, summary, report = run_script(tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert summary["ok"] is True, {n: e for n, e in summary["checks"].items() if e["status"] == "fail"}
    assert list(summary["checks"]) == [c.name for c in CHECKS]
    for name, entry in summary["checks"].items():
        assert_dry_run_result(name, entry)
    for name in ("resnet50_synthetic", "resnet50_jpeg", "text_bf16_vs_fp32"):
        figures = report["checks"][name]["figures"]
        assert figures["engine_bf16_samples_per_s"] > 0, (name, figures)
        assert report["checks"][name]["facts"]["rounds"] >= 2
    assert len(proc.stdout.strip().splitlines()[-1]) < 12_000  # the device tool returns the last 12,000 characters

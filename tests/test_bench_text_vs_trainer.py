"""bench/text_vs_trainer.py at its smallest (--quick): it runs, both sides train, and it says what it compared."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPREAD = {"median", "min", "max", "spread_pct", "n"}


def test_the_quick_bench_trains_both_sides_and_prints_their_ratio(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "text_vs_trainer.py"), "--quick", "--pairs", "1", "--json"],
        capture_output=True, text=True, timeout=900, cwd=tmp_path,
        env={**os.environ, "TRAINLAB_HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout[-2000:]  # --json: the one JSON line and nothing else
    figures = json.loads(lines[0])
    assert figures["bench"] == "text_vs_trainer" and figures["quick"] is True
    for side in ("trainlab", "trainer"):
        # every training text seen once in the one epoch, in ceil(96 / 32) optimizer steps
        assert figures["samples_trained"][side] == 96, figures["samples_trained"]
        assert figures["steps"][side] == 3, figures["steps"]
        assert figures["samples_per_second"][side]["min"] > 0
        assert figures["samples_per_cpu_second"][side]["min"] > 0
        assert set(figures["accuracy"][side]) == SPREAD
        assert 0.0 <= figures["accuracy"][side]["median"] <= 1.0
        assert figures["threads"][side] == 1  # the bench's default: one torch thread a side
        assert figures["attention"][side] in ("sdpa", "eager")
    for key in ("ratio", "cpu_ratio"):
        assert figures[key]["n"] == 1 and math.isfinite(figures[key]["median"]) and figures[key]["median"] > 0
    assert figures["recipe"]["batch_size"] == 32 and figures["recipe"]["epochs"] == 1
    assert isinstance(figures["goal_met"], bool)
    assert len(figures["load_average_start"]) == 3
    assert not list(tmp_path.glob("trainlab-text-vs-trainer-*"))  # the workspace (models, checkpoints) is gone


def test_a_bad_option_is_refused_before_anything_is_built(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "text_vs_trainer.py"), "--precision", "fp16"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert "--precision" in result.stderr and "fp16" in result.stderr

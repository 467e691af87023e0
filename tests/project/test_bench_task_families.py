"""bench/task_families.py in its smallest configuration: every entry runs and reports what it should.

Slow (a minute or more on a loaded 2-core machine: twelve small training
runs), so opt-in with --runslow, as the other bench tests are.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from helpers import ROOT

ENTRIES = {"regression", "multilabel", "image-regression", "image-multilabel", "text-regression", "text-multilabel"}
SPREAD = {"median", "min", "max"}


@pytest.mark.slow
def test_quick_bench_reports_speed_cpu_and_quality_of_both_sides_for_every_family(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "task_families.py"), "--quick", "--pairs", "1", "--warmup", "0", "--json"],
        capture_output=True, text=True, timeout=1800, cwd=tmp_path,
        env={**os.environ, "TRAINLAB_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["skipped"] == {}, summary["skipped"]
    assert set(summary["families"]) == ENTRIES
    for name, figures in summary["families"].items():
        for key in ("quality_plain", "quality_trainlab", "samples_per_second_plain", "samples_per_second_trainlab",
                    "ratio", "cpu_ratio", "ratio_end_to_end", "cpu_ratio_end_to_end"):  # fmt: skip
            assert set(figures[key]) == SPREAD, (name, key)
            assert all(math.isfinite(v) for v in figures[key].values()), (name, key, figures[key])
        for key in ("samples_per_second_plain", "samples_per_second_trainlab", "ratio", "cpu_ratio"):
            assert figures[key]["min"] > 0, (name, key)
        assert figures["quality_metric"] == ("r2" if figures["family"] == "regression" else "micro_f1")
        assert len(figures["ratios"]) == 1
        assert math.isfinite(figures["quality_diff"])
        assert isinstance(figures["goal_met"], bool)
        # same seed, data, batch order and recipe: both sides end with the same weights
        assert figures["max_abs_weight_diff"] is not None and figures["max_abs_weight_diff"] < 1e-4, (name, figures["max_abs_weight_diff"])
        assert abs(figures["quality_diff"]) < 1e-3, (name, figures["quality_plain"], figures["quality_trainlab"])
    assert summary["families"]["image-multilabel"]["recipe"]["batch_size"] == 32  # the task's small-cnn preset
    assert summary["families"]["text-regression"]["recipe"]["lr"] == 1e-3  # the tiny-bert preset's recipe
    assert len(summary["load_average_start"]) == 3


def test_an_unknown_family_is_named_with_the_known_ones():
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "task_families.py"), "--families", "image-regresion", "--pairs", "1"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 2
    assert "image-regresion" in result.stderr and "image-regression" in result.stderr

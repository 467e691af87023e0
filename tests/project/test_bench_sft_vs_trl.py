"""bench/sft_vs_trl.py at its smallest (--quick): both sides train the same tokens, packing on and off, and it says what it compared."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest

from helpers import ROOT

BENCH = ROOT / "bench" / "sft_vs_trl.py"
SPREAD = {"median", "min", "max", "spread_pct", "n"}


@pytest.mark.long
@pytest.mark.skipif(importlib.util.find_spec("trl") is None, reason="TRL is not installed (the bench extra: pip install -e '.[bench]')")
def test_the_quick_bench_trains_both_sides_on_the_same_tokens_and_prints_their_ratio(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--json"],
        capture_output=True, text=True, timeout=900, cwd=tmp_path,
        env={**os.environ, "TRAINLAB_HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout[-2000:]  # --json: the one JSON line and nothing else
    figures = json.loads(lines[0])
    assert figures["bench"] == "sft_vs_trl" and figures["quick"] is True
    assert figures["threads"] == 1 and figures["pairs"] == 1
    assert set(figures["packing"]) == {"off", "on"}
    for packing, r in figures["packing"].items():
        # the bench stops when the sides' token counts differ, so reaching here means the masks agreed
        assert 0 < r["trained_tokens"] < r["tokens"], (packing, r)  # prompts are not trained
        for side in ("trainlab", "trl"):
            assert r["tokens_per_second"][side]["min"] > 0 and r["tokens_per_cpu_second"][side]["min"] > 0
            assert set(r["eval_loss"][side]) == SPREAD
            # a decoder of 1,095 tokens starts near ln(1095) = 7.0 and two epochs on 48 chats move it little
            assert 3.0 < r["eval_loss"][side]["median"] < 8.0
            assert r["peak_rss_mb"][side]["median"] > r["peak_above_baseline_mb"][side]["median"] > 0
        assert r["steps"]["trainlab"] > 0 and r["steps"]["trl"] > 0
        for key in ("ratio", "cpu_ratio"):
            assert r[key]["n"] == 1 and math.isfinite(r[key]["median"]) and r[key]["median"] > 0
        assert math.isfinite(r["eval_loss_diff_pct"])
        assert isinstance(r["goal_met"], bool)
    # packing groups the same chats into fewer, fuller rows: fewer steps, the same tokens
    assert figures["packing"]["on"]["tokens"] == figures["packing"]["off"]["tokens"]
    assert figures["packing"]["on"]["steps"]["trainlab"] < figures["packing"]["off"]["steps"]["trainlab"]
    assert isinstance(figures["goal_met"], bool)
    assert not list(tmp_path.glob("trainlab-sft-vs-trl-*"))  # the workspace is gone


def test_without_trl_the_bench_names_the_extra_to_install(tmp_path):
    blocked = (
        "import runpy, sys; sys.modules['trl'] = None; "  # import trl then raises ImportError, as when it is absent
        f"sys.argv = [{str(BENCH)!r}, '--quick']; runpy.run_path({str(BENCH)!r}, run_name='__main__')"
    )
    result = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip() == "bench/sft_vs_trl.py needs TRL: pip install -e '.[bench]' (the bench extra)"
    assert not list(tmp_path.glob("trainlab-sft-vs-trl-*"))

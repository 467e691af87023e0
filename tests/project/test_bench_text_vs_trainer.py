"""bench/text_vs_trainer.py at its smallest (--quick): it runs, both sides train, and it says what it compared."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from helpers import ROOT

SPREAD = {"median", "min", "max", "spread_pct", "n"}


@pytest.mark.long
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
    assert figures["precision"] == {"trainlab": "fp32", "trainer": "fp32"}  # --precision's default, both sides
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


def test_a_model_folder_without_a_config_is_refused(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "text_vs_trainer.py"), "--model", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert f"--model {tmp_path}: not a transformers model folder (no config.json there)" in result.stderr


def _bench_module(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import text_vs_trainer

    return text_vs_trainer


def test_debian_data_without_the_translations_says_how_to_get_them(monkeypatch, tmp_path):
    bench = _bench_module(monkeypatch)
    monkeypatch.setattr(bench, "APT_LISTS", tmp_path)  # apt's lists without the English descriptions
    with pytest.raises(SystemExit, match=r"apt-get -o Acquire::Languages=en update"):
        bench.debian_texts(60, 12)


def test_a_data_folder_is_read_and_a_missing_split_named(monkeypatch, tmp_path):
    bench = _bench_module(monkeypatch)
    (tmp_path / "train.csv").write_text("text,label\nan apple,fruit\na pear,fruit\na leek,veg\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"no val.csv there"):
        bench.read_folder(tmp_path, 10, 10)
    (tmp_path / "val.csv").write_text("text,label\na plum,fruit\n", encoding="utf-8")
    splits = bench.read_folder(tmp_path, 2, 10)
    assert splits == {"train": [("an apple", "fruit"), ("a pear", "fruit")], "val": [("a plum", "fruit")]}


def test_debian_data_is_real_balanced_and_split_without_overlap(monkeypatch):
    bench = _bench_module(monkeypatch)
    if not list(bench.APT_LISTS.glob("*_i18n_Translation-en*")):
        pytest.skip("apt's lists here have no English descriptions (apt-get -o Acquire::Languages=en update)")
    splits = bench.debian_texts(60, 12)
    assert len(splits["train"]) == 60 and len(splits["val"]) == 12
    rows = splits["train"] + splits["val"]
    assert {label for _, label in rows} <= set(bench.TOPICS)
    counts = [sum(label == topic for _, label in rows) for topic in bench.TOPICS]
    assert counts == [12] * len(bench.TOPICS)  # 72 texts: as many from each section
    texts = [text for text, _ in rows]
    assert len(set(texts)) == len(texts)  # one package per description, so no text is in both splits
    assert all(len(text.split()) >= 3 for text in texts)
